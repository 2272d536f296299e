"""The objects `tf.saved_model.load` gives back: the saved object graph rebuilt, its variables
with their values, its functions running the saved torch programs.

A restored function holds the concrete functions saved for it; a call runs the first whose
input signature the arguments fit (structure, dtypes, and the sizes it fixes), and raises
TF's `ValueError` listing them when none does. A concrete function converts its arguments to
tensors of the signature's dtypes, runs its graph on the variables it captured and the
arguments, writes the variables it updates, and packs the result as it was returned. A
signature (`loaded.signatures[name]`) takes its inputs by name (or in order) and returns a
dict of named outputs, as TF's signature functions do.
"""
import numpy as np
import torch

from .. import config, variables
from ..saving import saved_functions
from ..saving.errors import ModelFileError
from .. import structure
from . import function_capture, tape, trackable
from .data import TensorSpec
from .dtypes import as_dtype
from .tensors import convert_to_tensor
from .variable import Variable


class _UserObject(trackable.AutoTrackable):
    """A restored object: its saved children as attributes."""

    def __repr__(self):
        return '<torchk restored object %s>' % ', '.join(
            name for name in vars(self) if not name.startswith('_'))


class _SignatureMap(dict):
    """The signatures of a restored object (`loaded.signatures`), by name."""

    def __repr__(self):
        return '_SignatureMap(%s)' % dict.__repr__(self)


def _decode_structure(value, path):
    if not isinstance(value, dict) or len(value) != 1:
        raise ModelFileError(path, 'a function signature is malformed: %r' % (str(value)[:100],))
    (kind, content), = value.items()
    if kind == 'spec' and isinstance(content, list) and len(content) == 3:
        shape, dtype, name = content
        if shape is not None and (not isinstance(shape, list) or not all(
                d is None or isinstance(d, int) for d in shape)):
            raise ModelFileError(path, 'a tensor signature has the shape %r' % (shape,))
        try:
            return TensorSpec(None if shape is None else tuple(shape), as_dtype(dtype), name)
        except (TypeError, ValueError) as e:
            raise ModelFileError(path, 'a tensor signature has the dtype %r' % (dtype,)) from e
    if kind in ('list', 'tuple') and isinstance(content, list):
        items = [_decode_structure(item, path) for item in content]
        return items if kind == 'list' else tuple(items)
    if kind == 'dict' and isinstance(content, list):
        return {str(k): _decode_structure(v, path) for k, v in content}
    if kind == 'value' and (content is None or isinstance(content, (bool, int, float, str))):
        return content
    raise ModelFileError(path, 'a function signature is malformed: %r' % (str(value)[:100],))


def _fits(spec, tensor, dynamic):
    if spec.dtype != as_dtype(tensor.dtype):
        return False
    if spec.shape is None:
        return True
    if len(spec.shape) != tensor.ndim:
        return False
    return all(d is None and dynamic or d == size for d, size in zip(spec.shape, tensor.shape))


def _as_tensor(value, spec):
    if isinstance(value, torch.Tensor):
        return value
    return convert_to_tensor(value, spec.dtype)


class RestoredConcreteFunction(object):
    """A concrete function of a SavedModel (see the module docstring).

    # Attributes
        name: its name in the SavedModel.
        structured_input_signature: `(args, kwargs)` of `tf.TensorSpec`s and values.
        structured_outputs: the result's structure, its tensors as `tf.TensorSpec`s.
    """

    def __init__(self, name, entry, module, captures, path):
        self.name = name
        self._module = module
        self._captures = captures
        self._path = path
        self._updates = entry.get('updates', [])
        if not isinstance(self._updates, list) or not all(
                isinstance(u, int) and 0 <= u < len(captures) for u in self._updates):
            raise ModelFileError(path, 'function %s updates captures that it lacks' % name)
        arguments = _decode_structure(entry.get('arguments'), path)
        if not isinstance(arguments, list) or len(arguments) != 2 or not isinstance(
                arguments[1], dict):
            raise ModelFileError(path, 'function %s has malformed arguments' % name)
        self._args, self._kwargs = arguments
        self.structured_outputs = _decode_structure(entry.get('result'), path)
        self._dynamic = bool(entry.get('dynamic'))

    @property
    def structured_input_signature(self):
        return tuple(self._args), dict(self._kwargs)

    def _bind(self, args, kwargs):
        """The arguments' tensors in the signature's order, or None if they do not fit."""
        args, kwargs = list(args), dict(kwargs)
        if len(args) < len(self._args):
            names = [a.name if isinstance(a, TensorSpec) else None for a in self._args]
            for i in range(len(args), len(self._args)):
                if names[i] not in kwargs:
                    return None
                args.append(kwargs.pop(names[i]))
        if len(args) != len(self._args) or set(kwargs) != set(self._kwargs):
            return None
        template, given = [self._args, self._kwargs], [args, kwargs]
        flat_template = structure.flatten(template)
        try:
            flat_given = structure.flatten(structure.pack_as(template, structure.flatten(given)))
        except (StopIteration, TypeError, ValueError):
            return None
        if len(flat_given) != len(flat_template) or len(structure.flatten(given)) != len(
                flat_template):
            return None
        tensors = []
        for spec, value in zip(flat_template, flat_given):
            if isinstance(spec, TensorSpec):
                if value is None or isinstance(value, (str, bytes)):
                    return None
                tensor = _as_tensor(value, spec)
                if not _fits(spec, tensor, self._dynamic):
                    return None
                tensors.append(tensor)
            elif spec != value:
                return None
        return tensors

    def _run(self, tensors):
        tape.note_variables_read([c for c in self._captures
                                  if isinstance(c, variables.Variable)])
        outputs = iter(function_capture.run(self._module, self._captures, tensors,
                                            self._updates))
        return structure.map_structure(
            lambda leaf: next(outputs) if isinstance(leaf, TensorSpec) else leaf,
            self.structured_outputs)

    def __call__(self, *args, **kwargs):
        tensors = self._bind(args, kwargs)
        if tensors is None:
            raise ValueError('The concrete function %s takes %s; got args %r and kwargs %r.'
                             % (self.name, self.structured_input_signature, args, kwargs))
        return self._run(tensors)

    def __repr__(self):
        return '<ConcreteFunction %s%s -> %s>' % (self.name, self.structured_input_signature,
                                                  self.structured_outputs)


class RestoredFunction(object):
    """A `tf.function` of a SavedModel: calls the first of its concrete functions whose
    signature fits the arguments."""

    def __init__(self, name, concrete_functions):
        self.__name__ = name
        self.concrete_functions = concrete_functions

    def __call__(self, *args, **kwargs):
        for function in self.concrete_functions:
            tensors = function._bind(args, kwargs)
            if tensors is not None:
                return function._run(tensors)
        options = '\n'.join('Option %d: %s' % (i + 1, f.structured_input_signature)
                            for i, f in enumerate(self.concrete_functions))
        raise ValueError('Could not find matching concrete function to call loaded from the '
                         'SavedModel. Got: args %r, kwargs %r. Expected these arguments to '
                         'match one of the following %d option(s):\n%s' % (
                             args, kwargs, len(self.concrete_functions), options))

    def get_concrete_function(self, *args, **kwargs):
        """The saved concrete function of these `TensorSpec`s (the only one, when none are
        given)."""
        if not args and not kwargs and len(self.concrete_functions) == 1:
            return self.concrete_functions[0]
        for function in self.concrete_functions:
            if function.structured_input_signature == (tuple(args), dict(kwargs)):
                return function
        raise ValueError('No saved concrete function of %s takes %r, %r.' % (
            self.__name__, args, kwargs))

    def __get__(self, instance, owner=None):
        return self


class SignatureFunction(RestoredConcreteFunction):
    """A signature of a SavedModel: inputs by name (or in order), a dict of outputs."""

    def __call__(self, *args, **kwargs):
        names = sorted(self._kwargs)
        if len(args) > len(names):
            raise TypeError('The signature %s takes %d inputs (%s), got %d positional '
                            'arguments.' % (self.name, len(names), ', '.join(names), len(args)))
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError('The signature %s got the input %r twice.' % (self.name, name))
            kwargs[name] = value
        tensors = self._bind((), kwargs)
        if tensors is None:
            raise ValueError('The signature %s takes %s; got %r.' % (
                self.name, self.structured_input_signature[1], kwargs))
        return self._run(tensors)


class Loader(object):
    """Rebuilds a SavedModel's objects (`tf.saved_model.load`).

    # Arguments
        path: `saved_model.pb`, for errors.
        nodes: its `SavedObject` nodes.
        checkpoint: the `ObjectGraph` of its `variables/`.
        functions: the saved functions (`saved_functions.read_functions`).
        constants: the `TensorBundle` of the constants they capture.
        functions_path: the functions file, for errors.
    """

    def __init__(self, path, nodes, checkpoint, functions, constants, functions_path):
        self.path = path
        self.functions_path = functions_path
        self.nodes = nodes
        self.checkpoint = checkpoint
        self.functions = functions
        self.constants = constants
        self.objects = [self._object(i, node) for i, node in enumerate(nodes)]
        self._concrete = {}
        for i in reversed(range(len(nodes))):  # children (made after their parents) first
            self._attach(i, nodes[i])

    def root(self):
        """The root object (with `signatures`, empty if none were saved)."""
        root = self.objects[0]
        if isinstance(root, _UserObject) and 'signatures' not in vars(root):
            object.__setattr__(root, 'signatures', _SignatureMap())
        return root

    def _object(self, node_id, node):
        if node.HasField('variable'):
            key, _ = self.checkpoint.variable(node_id)
            value = self.checkpoint.read(key)
            variable = Variable(value, trainable=node.variable.trainable)
            variable._keras_name = node.variable.name or variable.name
            return variable
        if node.HasField('function') or node.HasField('bare_concrete_function'):
            return None  # made by _attach, once the variables exist
        identifier = node.user_object.identifier
        if identifier == 'trackable_list_wrapper':
            return trackable.ListWrapper()
        if identifier in ('trackable_dict_wrapper', 'signature_map'):
            return _SignatureMap() if identifier == 'signature_map' else trackable.DictWrapper()
        if identifier == 'trackable_tuple_wrapper':
            return []
        return _UserObject()

    def _concrete_function(self, name, signature=False):
        if name not in self._concrete:
            entry = self.functions.get(name)
            if not isinstance(entry, dict):
                raise ModelFileError(self.path, 'the object graph names the function %r, which '
                                     'the functions file lacks' % name)
            captures = entry.get('captures', [])
            if not isinstance(captures, list):
                raise ModelFileError(self.functions_path, 'function %s has malformed captures'
                                     % name)
            captures = [self._capture(c, name) for c in captures]
            module = saved_functions.decode_graph(entry.get('graph'), self.functions_path)
            cls = SignatureFunction if signature else RestoredConcreteFunction
            self._concrete[name] = cls(name, entry, module, captures, self.functions_path)
        return self._concrete[name]

    def _capture(self, capture, function):
        if isinstance(capture, dict) and isinstance(capture.get('variable'), int):
            node_id = capture['variable']
            if 0 <= node_id < len(self.objects) and isinstance(self.objects[node_id],
                                                               variables.Variable):
                return self.objects[node_id]
        if isinstance(capture, dict) and capture.get('constant') in self.constants.entries:
            value = np.asarray(self.constants.read(capture['constant']))
            return torch.as_tensor(value).to(config.device())
        raise ModelFileError(self.functions_path, 'function %s captures %r, which is neither a '
                             'variable of the object graph nor a saved constant'
                             % (function, capture))

    def _child(self, node_id):
        if not 0 <= node_id < len(self.nodes):
            raise ModelFileError(self.path, 'the object graph has no node %d' % node_id)
        node = self.nodes[node_id]
        if node.HasField('function'):
            return RestoredFunction('function', [self._concrete_function(name) for name in
                                                 node.function.concrete_functions])
        if node.HasField('bare_concrete_function'):
            return self._concrete_function(node.bare_concrete_function.concrete_function_name,
                                           signature=True)
        return self.objects[node_id]

    def _attach(self, node_id, node):
        obj = self.objects[node_id]
        if obj is None or isinstance(obj, variables.Variable):
            return
        children = [(child.local_name, self._child(child.node_id)) for child in node.children]
        if isinstance(obj, list):
            items = dict(children)
            obj.extend(items[str(i)] for i in range(len(items)) if str(i) in items)
            if node.user_object.identifier == 'trackable_tuple_wrapper':
                self.objects[node_id] = tuple(obj)
            return
        if isinstance(obj, dict):
            for name, child in children:
                dict.__setitem__(obj, name, child)
            return
        if any(name == '__call__' for name, _ in children):
            obj.__class__ = type('_UserObject', (_UserObject,), {
                '__call__': lambda self, *args, **kwargs: self.__dict__['__call__'](
                    *args, **kwargs)})
        for name, child in children:
            if isinstance(child, RestoredFunction):
                child.__name__ = name
            object.__setattr__(obj, name, child)
