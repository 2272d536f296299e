"""`tf.Module`: a named container whose variables and submodules are found by walking its
attributes, as TF finds them.

Attributes are walked in the order of their names, through lists, tuples and dicts (dict
values in the order of their keys), a module's own before its submodules'; a Keras layer
found there gives its weights. Each variable and submodule is listed once.
"""
import re

from .. import variables


def _snake_case(name):
    return re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


class _NameScope(object):
    """A module's `name_scope`: its `name` is the module's name with a trailing `/`; as a
    context manager it has no effect (torch ops carry no names)."""

    def __init__(self, name):
        self.name = name + '/'

    def __enter__(self):
        return self.name

    def __exit__(self, *exc_info):
        return False


def _children(value):
    """The variables, modules and Keras layers held in an attribute value."""
    from keras.engine.base_layer import Layer
    if isinstance(value, (variables.Variable, Module, Layer)):
        yield value
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _children(value[key])
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _children(item)


class Module(object):
    """A named container of variables and submodules (`tf.Module`).

    # Arguments
        name: the module's name (default: the class name in snake case); letters, digits,
            `_`, `-` and `.`, not starting with a digit or `-`.

    # Raises
        ValueError: if `name` is not a valid name.
    """

    def __init__(self, name=None):
        name = _snake_case(type(self).__name__) if name is None else name
        if not re.match(r'^[A-Za-z_.][A-Za-z0-9_.\-]*$', name):
            raise ValueError('tf.Module name %r is not valid: use letters, digits, _, - and '
                             '., not starting with a digit or -.' % (name,))
        self._name = name

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        return _NameScope(self._name)

    def _walk(self, seen=None):
        """Every variable, module and layer under this module (itself excluded), in TF's
        order: the module's own, by attribute name, then each submodule's."""
        seen = {id(self)} if seen is None else seen
        found, submodules = [], []
        for key in sorted(vars(self)):
            for child in _children(vars(self)[key]):
                if id(child) not in seen:
                    seen.add(id(child))
                    found.append(child)
                    if isinstance(child, Module):
                        submodules.append(child)
        for module in submodules:
            found.extend(module._walk(seen))
        return found

    @property
    def variables(self):
        """The variables of the module and its submodules (Keras layers' weights too)."""
        from keras.engine.base_layer import Layer
        result, seen = [], set()
        for child in self._walk():
            for variable in (child.weights if isinstance(child, Layer) else
                             [child] if isinstance(child, variables.Variable) else []):
                if id(variable) not in seen:
                    seen.add(id(variable))
                    result.append(variable)
        return tuple(result)

    @property
    def trainable_variables(self):
        """The variables that are trainable."""
        return tuple(v for v in self.variables if v.trainable)

    @property
    def non_trainable_variables(self):
        """The variables that are not trainable."""
        return tuple(v for v in self.variables if not v.trainable)

    @property
    def submodules(self):
        """Every module under this one (Keras layers included)."""
        from keras.engine.base_layer import Layer
        return tuple(child for child in self._walk() if isinstance(child, (Module, Layer)))

    @classmethod
    def with_name_scope(cls, method):
        """Decorates a method to run in the module's `name_scope` (no effect here)."""
        return method
