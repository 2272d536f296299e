"""`TFOpLambda` and `SlicingOpLambda`: TensorFlow ops that tf.keras saved as layers.

In functional code, tf.keras (2.4 to 2.15) and tf_keras turn a TensorFlow op applied to a
Keras tensor (`x * 2`, `tf.nn.relu6(x)`, `x[:, 0]`, `tf.concat([a, b], -1)`) into a layer
whose config names the op (`{'function': 'math.multiply'}`), and save the op's other
arguments in the layer's inbound node: the op's first argument is the node's input
(`['_CONSTANT_VALUE', -1, value]` when it is a constant), the others are the node's keyword
arguments, where a Keras tensor is `[layer_name, node_index, tensor_index]`, a slice is
`{'start', 'stop', 'step'}` and `...` is `{'class_name': '__ellipsis__'}`.

Keras 2.3.1's `Network.from_config` reads inbound nodes as lists of input tensors only.
This module wraps it (at import, once) so that the inbound nodes of these two layers are
rewritten into Keras 2.3.1's own form first: every tensor the op uses becomes an input of
the node, and the node's keyword argument `call_structure` keeps the op's arguments with
`{'class_name': '__tensor__', 'index': i}` in place of the i-th input. Keras 2.3.1 saves and
loads that form as it is, so models loaded from tf.keras files save and load again.

Each op is computed with the backend (`_OPS`, keyed by tf.keras' op name); any other op
raises a ValueError naming the layer and the op.
"""
import functools

import numpy as np
import torch

from keras import activations as keras_activations
from keras import backend as K
from keras.engine import network
from keras.engine.base_layer import Layer

from .. import activations
from . import preprocessing

__all__ = ['TFOpLambda', 'SlicingOpLambda']

_CONSTANT_VALUE = '_CONSTANT_VALUE'
_TENSOR = '__tensor__'
_ELLIPSIS = '__ellipsis__'
_CALL_STRUCTURE = 'call_structure'


# The ops. Each takes the op's first argument positionally and the others by TensorFlow's
# parameter names; `name` arguments are dropped before the call.

def _constant_like(value, reference):
    """`value` as a tensor of `reference`'s dtype if it is a list (TF converts it so)."""
    if isinstance(value, (list, tuple)):
        return K.constant(np.asarray(value), dtype=K.dtype(reference))
    return value


def _binary(operator):
    def op(x, y):
        if not K.is_tensor(x):
            x = _constant_like(x, y)
        else:
            y = _constant_like(y, x)
        return operator(x, y)
    return op


def _elementwise(function):
    def op(x):
        return function(x)
    return op


def _reduction(function):
    def op(input_tensor, axis=None, keepdims=False):
        return function(input_tensor, axis=axis, keepdims=keepdims)
    return op


def _transpose(a, perm=None, conjugate=False):
    if perm is None:
        perm = list(reversed(range(K.ndim(a))))
    return K.permute_dimensions(a, tuple(perm))


def _squeeze(input, axis=None):
    if axis is None:
        axis = [i for i, d in enumerate(K.int_shape(input)) if d == 1]
    for a in sorted((a % K.ndim(input) for a in np.atleast_1d(axis)), reverse=True):
        input = K.squeeze(input, int(a))
    return input


def _pad(tensor, paddings, mode='CONSTANT', constant_values=0):
    if mode.upper() != 'CONSTANT':
        raise ValueError('tf.pad with mode=%r is not supported; supported: "CONSTANT".' % mode)
    flat = [int(p) for pair in reversed(paddings) for p in pair]
    return torch.nn.functional.pad(tensor, flat, value=constant_values)


def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise ValueError('tf.where(condition) without x and y (the indices form) is not '
                         'supported; pass x and y.')
    return torch.where(K.cast(condition, 'bool'), x, y)


def _gather(params, indices, validate_indices=None, axis=None, batch_dims=0):
    if batch_dims:
        raise ValueError('tf.gather with batch_dims=%r is not supported; supported: 0.'
                         % batch_dims)
    if not K.is_tensor(indices):
        indices = K.constant(np.asarray(indices), dtype='int64')
    if K.ndim(indices) > 1:
        raise ValueError('tf.gather with %d-D indices is not supported; supported: 0-D and '
                         '1-D.' % K.ndim(indices))
    axis = (axis or 0) % K.ndim(params)
    taken = torch.index_select(params, axis, K.reshape(K.cast(indices, 'int64'), (-1,)))
    return K.squeeze(taken, axis) if K.ndim(indices) == 0 else taken


def _take_along(value, axis, start, stop):
    index = [slice(None)] * K.ndim(value)
    index[axis] = slice(start, stop)
    return value[tuple(index)]


def _split(value, num_or_size_splits, axis=0, num=None):
    axis = axis % K.ndim(value)
    if isinstance(num_or_size_splits, int):
        size = K.int_shape(value)[axis] // num_or_size_splits
        sizes = [size] * num_or_size_splits
    else:
        sizes = list(num_or_size_splits)
    bounds = np.cumsum([0] + sizes)
    return [_take_along(value, axis, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _unstack(value, num=None, axis=0):
    axis = axis % K.ndim(value)
    index = [slice(None)] * K.ndim(value)
    outputs = []
    for i in range(K.int_shape(value)[axis]):
        index[axis] = i
        outputs.append(value[tuple(index)])
    return outputs


def _matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
            a_is_sparse=False, b_is_sparse=False, output_type=None):
    if transpose_a or adjoint_a:
        a = torch.transpose(a, -1, -2)
    if transpose_b or adjoint_b:
        b = torch.transpose(b, -1, -2)
    return torch.matmul(a, b)


def _l2_normalize(x, axis=None, epsilon=1e-12, dim=None):
    axis = dim if axis is None else axis
    squares = K.sum(K.square(x), axis=axis, keepdims=True)
    return x * torch.rsqrt(K.maximum(squares, epsilon))


def _cumsum(x, axis=0, exclusive=False, reverse=False):
    if reverse:
        x = K.reverse(x, axis)
    total = K.cumsum(x, axis=axis)
    if exclusive:
        total = total - x
    return K.reverse(total, axis) if reverse else total


def _one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None):
    if axis not in (None, -1):
        raise ValueError('tf.one_hot with axis=%r is not supported; supported: -1.' % axis)
    encoded = K.one_hot(K.cast(indices, 'int64'), depth)
    on = 1. if on_value is None else on_value
    off = 0. if off_value is None else off_value
    if (on, off) != (1., 0.):
        encoded = encoded * (on - off) + off
    return K.cast(encoded, dtype or K.floatx())


def _top_k(input, k=1, sorted=True):
    return list(torch.topk(input, k, dim=-1, sorted=True))


def _clip_by_norm(t, clip_norm, axes=None):
    norm = K.sqrt(K.sum(K.square(t), axis=axes, keepdims=True))
    return t * clip_norm / K.maximum(norm, clip_norm)


def _divide_no_nan(x, y):
    return torch.where(K.equal(y, 0), K.zeros_like(x * y), x / y)


def _multiply_no_nan(x, y):
    return torch.where(K.equal(y, 0), K.zeros_like(x * y), x * y)


def _softmax(logits, axis=None):
    return K.softmax(logits, axis=-1 if axis is None else axis)


def _log_softmax(logits, axis=None):
    return torch.log_softmax(logits, dim=-1 if axis is None else axis)


def _bias_add(value, bias, data_format=None):
    bias = K.constant(bias) if not K.is_tensor(bias) else bias
    if data_format in ('NCHW', 'NCW', 'NCDHW', 'channels_first'):
        return K.bias_add(value, bias, data_format='channels_first')
    return value + bias


def _shape(input, out_type='int32'):
    return K.cast(K.shape(input), out_type)


def _norm(tensor, ord='euclidean', axis=None, keepdims=None, keep_dims=None):
    if ord not in ('euclidean', 'fro', 2) or (ord == 2 and np.ndim(axis) > 0):
        raise ValueError('tf.norm with ord=%r is not supported; supported: "euclidean".'
                         % (ord,))
    return K.sqrt(K.sum(K.square(tensor), axis=axis, keepdims=bool(keepdims or keep_dims)))


def _image_resize(images, size, method='bilinear', preserve_aspect_ratio=False,
                  antialias=False):
    if preserve_aspect_ratio or antialias:
        raise ValueError('tf.image.resize with preserve_aspect_ratio or antialias is not '
                         'supported.')
    preprocessing.check_interpolation(method, 'tf.image.resize')
    preprocessing.image_size(images, 'tf.image.resize')
    return preprocessing.resize(K.cast(images, K.floatx()), size[0], size[1], method)


def _getitem(tensor, slice_spec, var=None):
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    return tensor[tuple(slice_spec)]


_OPS = {}
_OPS.update({name: _binary(operator) for names, operator in [
    (('__operators__.add', 'math.add'), lambda x, y: x + y),
    (('math.subtract',), lambda x, y: x - y),
    (('math.multiply',), lambda x, y: x * y),
    (('math.truediv', 'math.divide'), lambda x, y: x / y),
    (('compat.v1.floor_div', 'math.floordiv'), lambda x, y: x // y),
    (('math.floormod', 'math.mod'), lambda x, y: x % y),
    (('math.pow',), lambda x, y: x ** y),
    (('math.maximum',), K.maximum),
    (('math.minimum',), K.minimum),
    (('math.squared_difference',), lambda x, y: K.square(x - y)),
    (('math.equal', '__operators__.eq'), K.equal),
    (('math.not_equal', '__operators__.ne'), K.not_equal),
    (('math.greater',), K.greater),
    (('math.greater_equal',), K.greater_equal),
    (('math.less',), K.less),
    (('math.less_equal',), K.less_equal),
    (('math.logical_and',), lambda x, y: torch.logical_and(x, y)),
    (('math.logical_or',), lambda x, y: torch.logical_or(x, y)),
    (('math.logical_xor',), lambda x, y: torch.logical_xor(x, y)),
    (('math.divide_no_nan',), _divide_no_nan),
    (('math.multiply_no_nan',), _multiply_no_nan),
] for name in names})
_OPS.update({name: _elementwise(function) for names, function in [
    (('math.negative',), lambda x: -x),
    (('math.abs',), K.abs),
    (('math.sign',), K.sign),
    (('math.square',), K.square),
    (('math.sqrt',), K.sqrt),
    (('math.rsqrt',), torch.rsqrt),
    (('math.exp',), K.exp),
    (('math.log',), K.log),
    (('math.log1p',), torch.log1p),
    (('math.reciprocal',), lambda x: 1. / x),
    (('math.floor',), torch.floor),
    (('math.ceil',), torch.ceil),
    (('math.round', 'math.rint'), K.round),
    (('math.sin',), K.sin),
    (('math.cos',), K.cos),
    (('math.tan',), torch.tan),
    (('math.erf',), torch.erf),
    (('math.tanh', 'nn.tanh'), K.tanh),
    (('math.sigmoid', 'nn.sigmoid'), K.sigmoid),
    (('math.softplus', 'nn.softplus'), K.softplus),
    (('math.softsign', 'nn.softsign'), K.softsign),
    (('math.logical_not',), torch.logical_not),
    (('nn.relu',), K.relu),
    (('nn.relu6',), lambda x: K.relu(x, max_value=6.)),
    (('nn.elu',), K.elu),
    (('nn.selu',), keras_activations.selu),
    (('identity',), K.identity),
] for name in names})
_OPS.update({'math.' + name: _reduction(function) for name, function in [
    ('reduce_sum', K.sum), ('reduce_mean', K.mean), ('reduce_max', K.max),
    ('reduce_min', K.min), ('reduce_prod', K.prod), ('reduce_std', K.std),
    ('reduce_variance', K.var), ('reduce_any', K.any), ('reduce_all', K.all),
    ('reduce_logsumexp', K.logsumexp),
    ('reduce_euclidean_norm', lambda x, axis, keepdims: _norm(x, axis=axis, keepdims=keepdims))]})
_OPS.update({
    'nn.leaky_relu': lambda features, alpha=0.2: K.relu(features, alpha=alpha),
    'nn.gelu': lambda features, approximate=False: activations.gelu(features, approximate),
    'nn.silu': lambda features, beta=1.0: features * K.sigmoid(beta * features),
    'nn.softmax': _softmax,
    'nn.log_softmax': _log_softmax,
    'nn.bias_add': _bias_add,
    'math.l2_normalize': _l2_normalize,
    'nn.l2_normalize': _l2_normalize,
    'math.argmax': lambda input, axis=None, output_type='int64': K.cast(
        K.argmax(input, axis=0 if axis is None else axis), output_type),
    'math.argmin': lambda input, axis=None, output_type='int64': K.cast(
        K.argmin(input, axis=0 if axis is None else axis), output_type),
    'math.cumsum': _cumsum,
    'math.add_n': lambda inputs: functools.reduce(lambda a, b: a + b, inputs),
    'math.top_k': _top_k,
    'math.scalar_mul': lambda scalar, x: scalar * x,
    'compat.v1.math.scalar_mul': lambda scalar, x: scalar * x,
    'linalg.matmul': _matmul,
    'reshape': lambda tensor, shape: K.reshape(tensor, tuple(shape)),
    'concat': lambda values, axis: K.concatenate(list(values), axis=axis),
    'stack': lambda values, axis=0: K.stack(list(values), axis=axis),
    'unstack': _unstack,
    'split': _split,
    'transpose': _transpose,
    'compat.v1.transpose': _transpose,
    'expand_dims': lambda input, axis: K.expand_dims(input, axis),
    'squeeze': _squeeze,
    'compat.v1.squeeze': _squeeze,
    'cast': lambda x, dtype: K.cast(x, dtype),
    'tile': lambda input, multiples: K.tile(input, list(multiples)),
    'pad': _pad,
    'compat.v1.pad': _pad,
    'where': _where,
    'gather': _gather,
    'compat.v1.gather': _gather,
    'reverse': lambda tensor, axis: K.reverse(tensor, list(axis)),
    'ones_like': lambda input, dtype=None: K.ones_like(input, dtype=dtype),
    'zeros_like': lambda input, dtype=None: K.zeros_like(input, dtype=dtype),
    'one_hot': _one_hot,
    'clip_by_value': lambda t, clip_value_min, clip_value_max: K.clip(
        t, clip_value_min, clip_value_max),
    'clip_by_norm': _clip_by_norm,
    'broadcast_to': lambda input, shape: torch.broadcast_to(input, tuple(shape)),
    'shape': _shape,
    'compat.v1.shape': _shape,
    'norm': _norm,
    'compat.v1.norm': _norm,
    'linalg.norm': _norm,
    'image.resize': _image_resize,
    '__operators__.getitem': _getitem,
})


class TFOpLambda(Layer):
    """A TensorFlow op of a tf.keras functional model, computed with the backend.

    # Arguments
        function: the op's name as tf.keras saves it, without the `tf.` prefix
            (`'math.multiply'`, `'nn.relu6'`, `'__operators__.add'`, `'reshape'`).
        **kwargs: the base layer's arguments (`name`, `trainable`, `dtype`).

    The layer is called on the tensors the op uses, with the keyword argument
    `call_structure`: `{'args': first_argument, 'kwargs': other_arguments}`, where
    `{'class_name': '__tensor__', 'index': i}` stands for the i-th input tensor.

    # Raises
        ValueError: if the op is not one of the ops this module maps.
    """

    def __init__(self, function, **kwargs):
        super(TFOpLambda, self).__init__(**kwargs)
        if function not in _OPS:
            raise ValueError(
                'Layer %r (%s) applies the TensorFlow op tf.%s, which torchk does not map; '
                'supported ops: %s. Replace it in the model with a Lambda layer or a custom '
                'layer that computes it.' % (self.name, type(self).__name__, function,
                                             ', '.join(sorted(_OPS))))
        self.function = function
        self.supports_masking = True
        self._call_structure = None
        self._input_dtypes = None

    def call(self, inputs, call_structure=None):
        if call_structure is None:
            call_structure = {'args': {'class_name': _TENSOR, 'index': 0}, 'kwargs': {}}
        tensors = inputs if isinstance(inputs, list) else [inputs]
        self._call_structure = call_structure
        self._input_dtypes = [K.dtype(t) for t in tensors]
        first = _fill(call_structure['args'], tensors)
        arguments = _fill(call_structure.get('kwargs') or {}, tensors)
        arguments.pop('name', None)
        try:
            return _OPS[self.function](first, **arguments)
        except (TypeError, ValueError) as error:
            raise type(error)('Layer %r: tf.%s called with arguments %s: %s'
                              % (self.name, self.function, sorted(arguments), error)) from error

    def compute_output_shape(self, input_shape):
        several = isinstance(input_shape, list)
        shapes = input_shape if several else [input_shape]
        dtypes = self._input_dtypes or [K.floatx()] * len(shapes)
        placeholders = [K.placeholder(shape=shape, dtype=dtype)
                        for shape, dtype in zip(shapes, dtypes)]
        outputs = self.call(placeholders if several else placeholders[0],
                            self._call_structure)
        if isinstance(outputs, list):
            return [K.int_shape(output) for output in outputs]
        return K.int_shape(outputs)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = {'function': self.function}
        base_config = super(TFOpLambda, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class SlicingOpLambda(TFOpLambda):
    """`tensor[slice_spec]` of a tf.keras functional model (`__operators__.getitem`).

    Slices are saved as `{'start', 'stop', 'step'}` dicts, `...` as
    `{'class_name': '__ellipsis__'}` and `tf.newaxis` as `None`.

    # Arguments
        function: `'__operators__.getitem'`.
        **kwargs: the base layer's arguments.
    """

    def call(self, inputs, call_structure=None):
        return super(SlicingOpLambda, self).call(inputs, _slices(call_structure))


def _slices(structure):
    """`structure` with slice dicts and ellipsis markers as `slice` objects and `Ellipsis`."""
    if isinstance(structure, dict):
        if set(structure) == {'start', 'stop', 'step'}:
            return slice(_slices(structure['start']), _slices(structure['stop']),
                         _slices(structure['step']))
        if structure.get('class_name') == _ELLIPSIS:
            return Ellipsis
        return {key: _slices(value) for key, value in structure.items()}
    if isinstance(structure, list):
        return [_slices(item) for item in structure]
    return structure


def _fill(structure, tensors):
    """`structure` with each tensor marker replaced by its tensor."""
    if isinstance(structure, dict):
        if structure.get('class_name') == _TENSOR:
            return tensors[structure['index']]
        return {key: _fill(value, tensors) for key, value in structure.items()}
    if isinstance(structure, list):
        return [_fill(item, tensors) for item in structure]
    return structure


def _is_tensor_reference(data):
    """Whether `data` is tf.keras' `[layer_name, node_index, tensor_index(, kwargs)]`."""
    return (isinstance(data, list) and len(data) in (3, 4) and isinstance(data[0], str)
            and isinstance(data[1], int) and (len(data) == 3 or isinstance(data[3], dict)))


def _is_keras2_node(node_data):
    """Whether `node_data` is already Keras 2.3.1's list of inputs with `call_structure`."""
    return (isinstance(node_data, list) and node_data
            and all(_is_tensor_reference(entry) and len(entry) == 4
                    and _CALL_STRUCTURE in entry[3] for entry in node_data))


def keras2_node(node_data):
    """Rewrites one tf.keras inbound node of a `TFOpLambda` into Keras 2.3.1's form.

    # Arguments
        node_data: tf.keras' node: one `[layer, node_index, tensor_index, kwargs]` entry,
            or a nested list of them (the op's first argument is a list of tensors).

    # Returns
        A list of `[layer, node_index, tensor_index, {'call_structure': ...}]`, one per
        tensor the op uses (unchanged if `node_data` is already in that form).
    """
    if _is_keras2_node(node_data):
        return node_data
    references = []
    last_kwargs = [{}]

    def tensor(entry):
        references.append(list(entry[:3]))
        return {'class_name': _TENSOR, 'index': len(references) - 1}

    def first_argument(data):
        if _is_tensor_reference(data):
            if len(data) == 4:
                last_kwargs[0] = data[3]
            if data[0] == _CONSTANT_VALUE:
                return data[2]
            return tensor(data)
        if isinstance(data, list):
            return [first_argument(item) for item in data]
        return data

    def keyword_argument(data):
        if _is_tensor_reference(data) and len(data) == 3:
            return tensor(data)
        if isinstance(data, list):
            return [keyword_argument(item) for item in data]
        if isinstance(data, dict):
            return {key: keyword_argument(value) for key, value in data.items()}
        return data

    args = first_argument(node_data)
    kwargs = keyword_argument(last_kwargs[0])
    structure = {'args': args, 'kwargs': kwargs}
    return [reference + [{_CALL_STRUCTURE: structure}] for reference in references]


def keras2_network_config(config):
    """`config` (a functional model's) with its op layers' inbound nodes in Keras 2.3.1's form."""
    layers = []
    for layer in config.get('layers', []):
        if layer.get('class_name') in ('TFOpLambda', 'SlicingOpLambda'):
            layer = dict(layer, inbound_nodes=[keras2_node(node)
                                               for node in layer['inbound_nodes']])
        layers.append(layer)
    return dict(config, layers=layers)


def _install():
    """Wraps `Network.from_config` (engine/network.py:953) to rewrite op-layer nodes first."""
    keras_from_config = network.Network.from_config.__func__
    if getattr(keras_from_config, '_torchk_op_layers', False):
        return

    @functools.wraps(keras_from_config)
    def from_config(cls, config, custom_objects=None, **kwargs):  # and safe_mode
        return keras_from_config(cls, keras2_network_config(config), custom_objects, **kwargs)
    from_config._torchk_op_layers = True
    network.Network.from_config = classmethod(from_config)


_install()
