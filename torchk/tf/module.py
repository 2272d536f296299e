"""`tf.Module` and `tf.name_scope`: named containers whose variables and submodules are found
by walking their attributes, as TF finds them.

`Module._flatten` walks a module's attributes in the order of their names, through lists,
tuples and dicts (dict values in the order of their keys), each value once (every path to it
`with_path`): the module's own first, then each submodule's in the order found. A Keras layer of the tf.keras facade is a
`tf.Module` too (`isinstance(layer, tf.Module)`; `install_on_layers` gives it `submodules`,
`name_scope`, `with_name_scope` and `_flatten`), walked through its attributes but the
engine's bookkeeping ones, as TF's layers are; its variables are its weights.

A module is an `AutoTrackable` (`trackable.py`): its attributes are its children in
checkpoints, lists and dicts set as attributes are wrapped (`ListWrapper`, `DictWrapper`).
Names scopes prefix the names of the variables made inside them (`torchk.variables`).
"""
import abc
import functools
import re
import sys

from .. import variables
from . import trackable

_NAME = re.compile(r'^[A-Za-z_.][A-Za-z0-9_.\-]*$')
_SCOPE_NAME = re.compile(r'^[A-Za-z0-9_.\-/>]*$')


def _snake_case(name):
    return re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


class name_scope(object):  # noqa: N801 (TF's name)
    """`tf.name_scope(name)`: within it, variables made get the name prefix `name/` (nested in
    the enclosing scopes; a name ending in `/` is a whole scope). Entering gives the full
    scope, e.g. `'outer/name/'`.

    # Arguments
        name: the scope's name.

    # Raises
        ValueError: if `name` is not a valid scope name.
    """

    def __init__(self, name):
        if not isinstance(name, str) or not _SCOPE_NAME.match(name):
            raise ValueError('%r is not a valid scope name: use letters, digits, _, -, ., / '
                             'and >.' % (name,))
        self._name = name
        self._scope = None

    @property
    def name(self):
        return self._name

    def __enter__(self):
        self._scope = variables.name_scope(self._name or None)
        return self._scope.__enter__()

    def __exit__(self, *exc_info):
        scope, self._scope = self._scope, None
        return scope.__exit__(*exc_info)


def _keras_layer_class():
    module = sys.modules.get('keras.engine.base_layer')
    return None if module is None else module.Layer


def _is_module(value):
    return isinstance(value, Module)


def _is_variable(value):
    return isinstance(value, variables.Variable)


# A Keras layer's attributes that `_flatten` does not walk (set by `install_on_layers`).
_LAYER_ATTRIBUTES_IGNORED = set()


def _attributes(module):
    """`{name: value}` of the attributes `_flatten` walks."""
    values = vars(module)
    if _keras_layer_class() is not None and isinstance(module, _keras_layer_class()):
        return {k: v for k, v in values.items() if k not in _LAYER_ATTRIBUTES_IGNORED}
    return {k: v for k, v in values.items() if k not in ('_name', '_scope_name')}


def _leaves(value, path):
    """(path, leaf) of a value, through lists, tuples and dicts (keys in sorted order)."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _leaves(value[key], path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    else:
        yield path, value


def flatten_module(module, recursive=True, predicate=None, attribute_traversal_key=None,
                   with_path=False, module_path=(), seen=None, stack=None):
    """What `Module._flatten` yields (see there): the values of `module`'s attributes that
    satisfy `predicate`, then its submodules' in the order found."""
    predicate = predicate or (lambda value: True)
    seen = {id(module)} if seen is None else seen
    stack = [] if stack is None else stack
    recursive = recursive and id(module) not in stack
    submodules = []
    attributes = _attributes(module)
    for name in sorted(attributes, key=attribute_traversal_key):
        for path, leaf in _leaves(attributes[name], (name,)):
            if not with_path:
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            if predicate(leaf):
                yield (module_path + path, leaf) if with_path else leaf
            if recursive and _is_module(leaf):
                submodules.append((module_path + path, leaf))
    stack.append(id(module))
    for path, submodule in submodules:
        yield from flatten_module(submodule, recursive, predicate, attribute_traversal_key,
                                  with_path, path, seen, stack)
    stack.pop()


class _ModuleType(abc.ABCMeta):
    """Makes the tf.keras facade's layers instances of `tf.Module`, as in TF."""

    def __subclasscheck__(cls, subclass):
        layer = _keras_layer_class()
        if cls is Module and layer is not None and issubclass(subclass, layer):
            return True
        return super().__subclasscheck__(subclass)

    def __instancecheck__(cls, instance):
        return cls.__subclasscheck__(type(instance))


class Module(trackable.AutoTrackable, metaclass=_ModuleType):
    """A named container of variables and submodules (`tf.Module`).

    # Arguments
        name: the module's name (default: the class name in snake case); letters, digits,
            `_`, `-` and `.`, not starting with a digit or `-`.

    # Raises
        ValueError: if `name` is not a valid name.
    """

    def __init__(self, name=None):
        name = _snake_case(type(self).__name__) if name is None else name
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError('tf.Module name %r is not valid: use letters, digits, _, - and '
                             '., not starting with a digit or -.' % (name,))
        self._name = name
        self._scope_name = variables._scope_prefix() + name + '/'

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """The module's `tf.name_scope`: its name is the enclosing scope, where the module
        was made, and the module's name (`'outer/dense/'`)."""
        return name_scope(self._scope_name)

    def _flatten(self, recursive=True, predicate=None, attribute_traversal_key=None,
                 with_path=False, expand_composites=False):
        """The values under this module that satisfy `predicate` (default: all).

        Attributes are walked in the order of their names (`attribute_traversal_key` to
        sort otherwise), through lists, tuples and dicts; with `recursive`, each submodule
        found is walked after this module's own attributes. Each value is given once,
        except with `with_path`: then every path to it is (a submodule reached twice is
        walked twice), as in TF.

        # Arguments
            recursive: whether to walk submodules.
            predicate: a function of a value, True for those to give.
            attribute_traversal_key: the `key` sorting attribute names.
            with_path: give `(path, value)` pairs, the path a tuple of attribute names,
                indices and keys.
            expand_composites: accepted (torchk has no composite tensors).

        # Returns
            A generator.
        """
        return flatten_module(self, recursive, predicate, attribute_traversal_key, with_path)

    @property
    def variables(self):
        """The variables of the module and its submodules (Keras layers' weights too)."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self):
        """The variables that are trainable."""
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self):
        """The variables that are not trainable."""
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self):
        """Every module under this one (Keras layers included), breadth first."""
        return tuple(self._flatten(predicate=_is_module))

    @classmethod
    def with_name_scope(cls, method):
        """Decorates a method to run in the module's `name_scope`."""
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope

    def __repr__(self):
        return '<%s.%s object at %s>' % (type(self).__module__, type(self).__name__,
                                         hex(id(self)))


def _layer_submodules(layer):
    return tuple(flatten_module(layer, predicate=_is_module))


def install_on_layers(layer_class, ignored_attributes):
    """Gives Keras layers (`layer_class`) `tf.Module`'s `submodules`, `name_scope`,
    `with_name_scope` and `_flatten`; `_flatten` does not walk `ignored_attributes` (the
    engine's bookkeeping)."""
    _LAYER_ATTRIBUTES_IGNORED.update(ignored_attributes)
    layer_class.submodules = property(_layer_submodules)
    layer_class.name_scope = property(lambda layer: name_scope(layer.name + '/'))
    layer_class.with_name_scope = classmethod(Module.with_name_scope.__func__)
    layer_class._flatten = Module._flatten
