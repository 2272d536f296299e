"""The one mapping from TensorFlow op names to torchk ops.

Keys are the op names tf.keras saves in a `TFOpLambda` layer's config (`'math.multiply'`,
`'nn.relu6'`, `'reshape'`, `'__operators__.add'`): TF's public path without the `tf.`
prefix. `torchk.layers.tf_ops` computes saved op layers with this table, and `torchk.tf`
builds its `tf.*` functions from it, under the key's path and the other paths TF exports the
same op at (`ALIASES`: `tf.math.reduce_sum` is also `tf.reduce_sum`).

Each op takes its first argument positionally and the others by TF's parameter names, and
runs eagerly on tensors and records a graph on Keras symbols: it is written with torchk's
backend ops and torch functions (which Keras symbols record), or, where it reads a tensor's
attributes (`device`, `dtype`, a result's `.values`), made an op with `graph.op`.
"""
import functools

import numpy as np
import torch

from . import config
from . import core as K
from . import graph, image_ops, math_ops, signal_ops
from . import index_ops, linalg_ops
from . import tf_dtypes as dtypes

def _constant_like(value, reference):
    """`value` as a tensor of `reference`'s dtype if it is a list or an array (TF converts
    it so); Python numbers stay numbers."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return K.constant(np.asarray(value), dtype=K.dtype(reference))
    return value


def _operand(value):
    """`value` as a tensor if it is an array or a list; Python numbers stay numbers."""
    return tensor_of(value) if isinstance(value, (list, tuple, np.ndarray)) else value


def _activations():
    """torchk's Keras activations (imported when first used, after Keras, which they use)."""
    import keras  # noqa: F401  (Keras first: importing it registers these activations)
    from . import activations
    return activations


def _keras_activations():
    from keras import activations
    return activations


def tensor_of(value):
    """`value` as a tensor unless it is one (or a Keras symbol), by TF's dtype rules
    (`tf_dtypes.value_to_tensor`); a (nested) list holding tensors is packed into one, as TF
    packs it (`tf.stack`)."""
    if isinstance(value, torch.Tensor) or K.is_tensor(value):
        return value
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return K.stack([tensor_of(item) for item in value])
    return dtypes.value_to_tensor(value)


def _holds_tensor(value):
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(item) for item in value)
    return isinstance(value, torch.Tensor) or K.is_tensor(value)


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
    return torch.where(K.cast(tensor_of(condition), 'bool'), _operand(x), _operand(y))


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
    a, b = tensor_of(a), tensor_of(b)
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
    image_ops.check_interpolation(method, 'tf.image.resize')
    return image_ops.at_image_size(
        lambda known: image_ops.resize(known, size[0], size[1], method),
        K.cast(images, K.floatx()))


def _getitem(tensor, slice_spec, var=None):
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    return tensor[tuple(slice_spec)]


def _spatial(values, argument, rank=2):
    """TF's `strides`/`dilations` of a convolution (an int, or a list of `rank` or
    `rank + 2` ints) as a tuple of `rank` ints."""
    if values is None:
        return (1,) * rank
    if isinstance(values, int):
        return (values,) * rank
    values = [int(v) for v in values]
    if len(values) == rank + 2:
        values = values[1:-1]
    if len(values) != rank:
        raise ValueError('%s must be an int or a list of %d or %d ints; got %s.'
                         % (argument, rank, rank + 2, values))
    return tuple(values)


def _conv2d(input, filters, strides, padding, data_format='NHWC', dilations=None):
    """`tf.nn.conv2d`: 'SAME' or 'VALID' padding (explicit paddings are not supported)."""
    if not isinstance(padding, str):
        raise ValueError('tf.nn.conv2d: padding must be "SAME" or "VALID"; torchk does not '
                         'take explicit paddings (got %r).' % (padding,))
    if data_format not in ('NHWC', 'NCHW'):
        raise ValueError('tf.nn.conv2d: data_format must be "NHWC" or "NCHW"; got %r.'
                         % (data_format,))
    return K.conv2d(input, filters, strides=_spatial(strides, 'strides'),
                    padding=padding.lower(),
                    data_format='channels_last' if data_format == 'NHWC' else 'channels_first',
                    dilation_rate=_spatial(dilations, 'dilations'))


def _compat_v1_conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,
                      data_format='NHWC', dilations=None, filters=None):
    """`tf.compat.v1.nn.conv2d` (what tf.keras records for `tf.nn.conv2d`): the filters as
    `filter` (or `filters`)."""
    return _conv2d(input, filter if filter is not None else filters, strides, padding,
                   data_format=data_format, dilations=dilations)


def _eager_range(start, limit=None, delta=1, dtype=None):
    """Numbers from `start` to `limit` (excluded) by `delta`, as `tf.range`: int32 for ints,
    float32 if an argument is a float, unless `dtype` is given."""
    if limit is None:
        start, limit = 0, start
    bounds = [b.item() if isinstance(b, torch.Tensor) else b for b in (start, limit, delta)]
    if dtype is None:
        dtype = (dtypes.float32 if any(isinstance(b, float) for b in bounds)
                 else dtypes.int32)
    return torch.arange(*bounds, dtype=dtypes.torch_dtype(dtype), device=config.device())


def _range(start, limit=None, delta=1, dtype=None):
    """`tf.range`: eager on numbers and tensors (`_eager_range`), recorded (`K.arange`)
    when a bound is a Keras symbol, as in a model's position embedding."""
    bounds = (start, limit, delta)
    if not any(graph.is_symbol(b) for b in bounds):
        return _eager_range(start, limit, delta, dtype=dtype)
    if dtype is None:
        dtype = 'float32' if any(isinstance(b, float) for b in bounds) else 'int32'
    if limit is None:
        start, limit = 0, start
    return K.arange(start, limit, delta, dtype=str(dtypes.as_dtype(dtype)))


OPS = {}
OPS.update({name: _binary(operator) for names, operator in [
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
    (('math.divide_no_nan',), math_ops.divide_no_nan),
    (('math.multiply_no_nan',), _multiply_no_nan),
] for name in names})
OPS.update({name: _elementwise(function) for names, function in [
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
    (('nn.selu',), lambda x: _keras_activations().selu(x)),
    (('identity',), K.identity),
] for name in names})
OPS.update({'math.' + name: _reduction(function) for name, function in [
    ('reduce_sum', K.sum), ('reduce_max', K.max),
    ('reduce_min', K.min), ('reduce_prod', K.prod), ('reduce_std', K.std),
    ('reduce_variance', K.var), ('reduce_any', K.any), ('reduce_all', K.all),
    ('reduce_logsumexp', K.logsumexp),
    ('reduce_euclidean_norm', lambda x, axis, keepdims: _norm(x, axis=axis, keepdims=keepdims))]})
OPS.update({
    'nn.leaky_relu': lambda features, alpha=0.2: K.relu(features, alpha=alpha),
    'nn.gelu': lambda features, approximate=False: _activations().gelu(features, approximate),
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
    'ones_like': lambda input, dtype=None: K.ones_like(input, dtype=dtype or K.dtype(input)),
    'zeros_like': lambda input, dtype=None: K.zeros_like(input,
                                                          dtype=dtype or K.dtype(input)),
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




def _reduce_mean(input_tensor, axis=None, keepdims=False):
    if K.is_tensor(input_tensor) and not K.dtype(input_tensor).startswith(('float', 'bfloat',
                                                                            'complex')):
        mean = K.mean(K.cast(input_tensor, 'float64'), axis=axis, keepdims=keepdims)
        return K.cast(mean, K.dtype(input_tensor))
    return K.mean(input_tensor, axis=axis, keepdims=keepdims)


def _sparse_softmax_cross_entropy(labels=None, logits=None):
    logits = tensor_of(logits)
    labels = K.cast(tensor_of(labels), 'int64')
    picked = torch.gather(torch.log_softmax(logits, dim=-1), -1, labels.unsqueeze(-1))
    return -picked.squeeze(-1)


def _softmax_cross_entropy(labels=None, logits=None, axis=-1):
    logits = tensor_of(logits)
    labels = tensor_of(labels)
    return -K.sum(labels * torch.log_softmax(logits, dim=axis), axis=axis)


def _sigmoid_cross_entropy(labels=None, logits=None):
    logits = tensor_of(logits)
    labels = K.cast(tensor_of(labels), K.dtype(logits))
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels,
                                                                reduction='none')


def _moments(x, axes, shift=None, keepdims=False):
    variance, mean = torch.var_mean(x, dim=list(axes), correction=0, keepdim=keepdims)
    return mean, variance


@graph.op
def _dropout(x, rate, noise_shape=None, seed=None):
    if not 0 <= rate < 1:
        raise ValueError('tf.nn.dropout: rate must be in [0, 1); got %r.' % (rate,))
    shape = x.shape if noise_shape is None else tuple(int(d) for d in noise_shape)
    keep = torch.rand(shape, device=x.device) >= rate
    return x * keep.to(x.dtype) / (1. - rate)


def _boolean_mask(tensor, mask, axis=None):
    mask = K.cast(tensor_of(mask), 'bool')
    axis = 0 if axis is None else axis % tensor.ndim
    return tensor[(slice(None),) * axis + (mask,)]


def _tensordot(a, b, axes):
    b = tensor_of(b)
    if isinstance(axes, (list, tuple)):
        axes = [list(np.atleast_1d(a_axes)) for a_axes in axes]
    return torch.tensordot(a, b, dims=axes)


def _size(input, out_type='int32'):
    return K.cast(K.prod(K.shape(input)), out_type)


def _rank(input):
    return torch.tensor(K.ndim(input), dtype=torch.int32)


def _count_nonzero(input, axis=None, keepdims=False, dtype='int64'):
    return K.cast(K.sum(K.cast(K.not_equal(input, 0), 'int64'), axis=axis, keepdims=keepdims),
                  dtype)


@graph.op
def _sort(values, axis=-1, direction='ASCENDING'):
    return torch.sort(values, dim=axis, descending=_descending(direction)).values


@graph.op
def _argsort(values, axis=-1, direction='ASCENDING', stable=False):
    indices = torch.sort(values, dim=axis, descending=_descending(direction),
                         stable=stable).indices
    return indices.to(torch.int32)


def _descending(direction):
    if direction not in ('ASCENDING', 'DESCENDING'):
        raise ValueError('direction must be "ASCENDING" or "DESCENDING"; got %r.' % (direction,))
    return direction == 'DESCENDING'


def _sequence_mask(lengths, maxlen=None, dtype='bool'):
    lengths = tensor_of(lengths)
    maxlen = int(lengths.max()) if maxlen is None else int(maxlen)
    positions = torch.arange(maxlen, device=lengths.device)
    return K.cast(positions < lengths.unsqueeze(-1), dtype)


def _repeat(input, repeats, axis=None):
    if axis is None:
        input, axis = K.reshape(input, (-1,)), 0
    return torch.repeat_interleave(input, tensor_of(repeats) if isinstance(repeats, list)
                                   else repeats, dim=axis)


def _confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype='int32'):
    labels, predictions = K.cast(tensor_of(labels), 'int64'), K.cast(tensor_of(predictions),
                                                                     'int64')
    if num_classes is None:
        num_classes = int(torch.maximum(labels.max(), predictions.max())) + 1
    counts = torch.bincount(labels * num_classes + predictions, minlength=num_classes ** 2,
                            weights=None if weights is None else tensor_of(weights))
    return K.cast(counts.reshape(num_classes, num_classes), dtype)


def _random_flip(axis):
    @graph.op
    def flip(image, seed=None):
        flipped = torch.flip(image, [axis])
        if image.ndim == 3:
            return flipped if bool(torch.rand(()) < 0.5) else image
        chosen = torch.rand(image.shape[0], device=image.device) < 0.5
        return torch.where(chosen.view(-1, 1, 1, 1), flipped, image)
    return flip


@graph.op
def _convert_image_dtype(image, dtype, saturate=False):
    source, target = image.dtype, dtypes.torch_dtype(dtype)
    if source == target:
        return image
    if source.is_floating_point and target.is_floating_point:
        return image.to(target)
    if source.is_floating_point:
        scale = torch.iinfo(target).max + 0.5
        return (image * scale).to(target)
    converted = image.to(target if target.is_floating_point else torch.float64)
    converted = converted / torch.iinfo(source).max
    if target.is_floating_point:
        return converted
    return (converted * (torch.iinfo(target).max + 0.5)).to(target)


@graph.op
def _per_image_standardization(image):
    image = image.float() if not image.is_floating_point() else image
    axes = [-1, -2, -3]
    mean = image.mean(dim=axes, keepdim=True)
    count = image.shape[-1] * image.shape[-2] * image.shape[-3]
    floor = torch.rsqrt(torch.tensor(float(count), device=image.device))
    std = torch.maximum(image.std(dim=axes, keepdim=True, correction=0), floor)
    return (image - mean) / std


OPS.update({name: _elementwise(function) for names, function in [
    (('math.is_nan',), torch.isnan),
    (('math.is_finite',), torch.isfinite),
    (('math.is_inf',), torch.isinf),
    (('math.log_sigmoid',), torch.nn.functional.logsigmoid),
    (('math.expm1',), torch.expm1),
    (('math.asin',), torch.asin),
    (('math.acos',), torch.acos),
    (('math.atan',), torch.atan),
    (('math.sinh',), torch.sinh),
    (('math.cosh',), torch.cosh),
    (('stop_gradient',), K.stop_gradient),
] for name in names})
OPS.update({
    'math.reduce_mean': _reduce_mean,
    'math.xlogy': _binary(torch.xlogy),
    'math.atan2': _binary(torch.atan2),
    'math.count_nonzero': _count_nonzero,
    'nn.sparse_softmax_cross_entropy_with_logits': _sparse_softmax_cross_entropy,
    'nn.softmax_cross_entropy_with_logits': _softmax_cross_entropy,
    'nn.sigmoid_cross_entropy_with_logits': _sigmoid_cross_entropy,
    'nn.moments': _moments,
    'nn.dropout': _dropout,
    'boolean_mask': _boolean_mask,
    'tensordot': _tensordot,
    'size': _size,
    'rank': _rank,
    'sort': _sort,
    'argsort': _argsort,
    'sequence_mask': _sequence_mask,
    'repeat': _repeat,
    'roll': lambda input, shift, axis: torch.roll(input, shift, axis),
    'einsum': lambda equation, *inputs: torch.einsum(equation, *map(tensor_of, inputs)),
    'nn.l2_loss': lambda t: K.sum(K.square(t)) / 2,
    'nn.embedding_lookup': lambda params, ids, max_norm=None: torch.nn.functional.embedding(
        K.cast(tensor_of(ids), 'int64'), params),
    'math.confusion_matrix': _confusion_matrix,
    'image.flip_left_right': lambda image: torch.flip(image, [-2]),
    'image.flip_up_down': lambda image: torch.flip(image, [-3]),
    'image.random_flip_left_right': _random_flip(-2),
    'image.random_flip_up_down': _random_flip(-3),
    'image.convert_image_dtype': _convert_image_dtype,
    'image.per_image_standardization': _per_image_standardization,
    'image.extract_patches': image_ops.extract_patches,
    'image.crop_to_bounding_box': image_ops.crop_to_bounding_box,
    'image.pad_to_bounding_box': image_ops.pad_to_bounding_box,
    'nn.conv2d': _conv2d,
    'compat.v1.nn.conv2d': _compat_v1_conv2d,
    'range': _range,
})
OPS.update({
    'slice': index_ops.slice_tensor,
    'gather_nd': index_ops.gather_nd,
    'scatter_nd': index_ops.scatter_nd,
    'tensor_scatter_nd_update': index_ops.tensor_scatter_nd_update,
    'tensor_scatter_nd_add': index_ops.tensor_scatter_nd_add,
    'tensor_scatter_nd_sub': index_ops.tensor_scatter_nd_sub,
    'tensor_scatter_nd_min': index_ops.tensor_scatter_nd_min,
    'tensor_scatter_nd_max': index_ops.tensor_scatter_nd_max,
    'meshgrid': index_ops.meshgrid,
    'linalg.svd': linalg_ops.svd,
    'linalg.diag': linalg_ops.diag,
    'linalg.solve': linalg_ops.solve,
    'image.adjust_contrast': image_ops.adjust_contrast,
})

OPS.update({
    'signal.rfft': signal_ops.rfft,
    'signal.irfft': signal_ops.irfft,
    'signal.fft': signal_ops.fft,
    'signal.ifft': signal_ops.ifft,
    'signal.frame': signal_ops.frame,
    'signal.stft': signal_ops.stft,
})

# tf.experimental.numpy's settings (`experimental_enable_numpy_behavior`): its values take
# numpy's dtypes, float32 for float64 with `prefer_float32`.
NUMPY_SETTINGS = {'prefer_float32': False}


def _numpy_float():
    return 'float32' if NUMPY_SETTINGS['prefer_float32'] else 'float64'


def _numpy_array(value):
    """A Python value as a tensor by numpy's dtype rules (`tf.experimental.numpy`)."""
    array = np.asarray(value)
    if array.dtype == np.float64:
        array = array.astype(_numpy_float())
    return tensor_of(array)


def _numpy_add(x1, x2):
    """`x1 + x2`; two Python values give a tensor of numpy's dtype (`tnp.add(1., 2.)` is
    float64), a Python number with a tensor takes the tensor's dtype."""
    if not (K.is_tensor(x1) or K.is_tensor(x2)):
        x1 = _numpy_array(x1)
    return _binary(lambda a, b: a + b)(x1, x2)


def _numpy_sqrt(x):
    """The square root; integers and Python numbers give numpy's float64 (float32 with
    `prefer_float32`)."""
    x = x if K.is_tensor(x) else _numpy_array(x)
    if not K.dtype(x).startswith(('float', 'bfloat', 'complex')):
        x = K.cast(x, _numpy_float())
    return K.sqrt(x)


OPS.update({
    'experimental.numpy.add': _numpy_add,
    'experimental.numpy.sqrt': _numpy_sqrt,
    'experimental.numpy.copy': lambda a: K.identity(tensor_of(a)),
})

# The other paths TF 2 exports an op at (`tf.math.exp` is also `tf.exp`).
ALIASES = {
    'math.abs': ('abs',), 'math.acos': ('acos',), 'math.add': ('add',),
    'math.add_n': ('add_n',), 'math.argmax': ('argmax',), 'math.argmin': ('argmin',),
    'math.asin': ('asin',), 'math.atan': ('atan',), 'math.atan2': ('atan2',),
    'math.cos': ('cos',), 'math.cosh': ('cosh',), 'math.cumsum': ('cumsum',),
    'math.divide': ('divide',), 'math.equal': ('equal',), 'math.exp': ('exp',),
    'math.floor': ('floor',), 'math.greater': ('greater',),
    'math.greater_equal': ('greater_equal',), 'math.less': ('less',),
    'math.less_equal': ('less_equal',), 'math.logical_and': ('logical_and',),
    'math.logical_not': ('logical_not',), 'math.logical_or': ('logical_or',),
    'math.maximum': ('maximum',), 'math.minimum': ('minimum',),
    'math.multiply': ('multiply',), 'math.negative': ('negative',),
    'math.not_equal': ('not_equal',), 'math.pow': ('pow',), 'math.round': ('round',),
    'math.scalar_mul': ('scalar_mul',), 'math.sigmoid': ('sigmoid',), 'math.sign': ('sign',),
    'math.sin': ('sin',), 'math.sinh': ('sinh',), 'math.sqrt': ('sqrt',),
    'math.square': ('square',), 'math.subtract': ('subtract',), 'math.tan': ('tan',),
    'math.tanh': ('tanh',), 'math.truediv': ('truediv',),
    'math.reduce_all': ('reduce_all',), 'math.reduce_any': ('reduce_any',),
    'math.reduce_logsumexp': ('reduce_logsumexp',), 'math.reduce_max': ('reduce_max',),
    'math.reduce_mean': ('reduce_mean',), 'math.reduce_min': ('reduce_min',),
    'math.reduce_prod': ('reduce_prod',), 'math.reduce_sum': ('reduce_sum',),
    'math.top_k': ('nn.top_k',), 'math.l2_normalize': ('linalg.l2_normalize',),
    'nn.log_softmax': ('math.log_softmax',), 'nn.softmax': ('math.softmax',),
    'nn.silu': ('nn.swish',), 'linalg.matmul': ('matmul',), 'norm': ('linalg.norm',),
    'tensordot': ('linalg.tensordot',), 'einsum': ('linalg.einsum',),
}
# tf.experimental.numpy's names of the table's ops (its functions with numpy's arguments
# that the ops take as TF names them, positionally the same).
_NUMPY_NAMES = {
    'matmul': 'linalg.matmul', 'maximum': 'math.maximum', 'minimum': 'math.minimum',
    'mean': 'math.reduce_mean', 'sum': 'math.reduce_sum', 'max': 'math.reduce_max',
    'min': 'math.reduce_min', 'square': 'math.square', 'exp': 'math.exp',
    'abs': 'math.abs', 'tanh': 'math.tanh', 'reshape': 'reshape', 'transpose': 'transpose',
    'concatenate': 'concat', 'stack': 'stack', 'where': 'where',
    'expand_dims': 'expand_dims',
}
for _name, _key in _NUMPY_NAMES.items():
    ALIASES[_key] = ALIASES.get(_key, ()) + ('experimental.numpy.' + _name,)

_NOT_RECORDABLE_REASONS = {
    'not an op: a dtype, a class, a constant or an object TF builds graphs with': (
        'DType', 'as_dtype', 'bfloat16', 'bool', 'complex128', 'complex64', 'double',
        'float16', 'float32', 'float64', 'half', 'int16', 'int32', 'int64', 'int8', 'uint8',
        'newaxis', 'Tensor', 'TensorShape', 'TensorSpec', 'GradientTape', 'Module', 'string',
        'name_scope',
        'UnconnectedGradients', 'Variable', 'function', 'device', 'constant_initializer',
        'ones_initializer', 'random_normal_initializer', 'random_uniform_initializer',
        'zeros_initializer', 'experimental.numpy.float32', 'experimental.numpy.float64',
        'experimental.numpy.int32', 'experimental.numpy.int64', 'experimental.numpy.ndarray',
        'experimental.numpy.newaxis', 'uint16', 'uint32', 'uint64'),
    'runtime, configuration or I/O, not a tensor op': (
        'executing_eagerly', 'is_tensor', 'print', 'install_import_hook', 'random.set_seed',
        'experimental.numpy.experimental_enable_numpy_behavior', 'config.*', 'data.*',
        'debugging.*', 'errors.*', 'nest.*', 'summary.*', 'test.*', 'version.*',
        'distribute.*', 'train.*', 'saved_model.*', 'profiler.*', 'types.*'),
    'scales a loss by the replicas of the tf.distribute strategy entered at the call, which '
    'a saved model does not carry': ('nn.compute_average_loss', 'nn.scale_regularization_loss'),
    'text ops: strings stay on the host, out of torch programs (docs/ARCHITECTURE.md, '
    '"Text"); a model holds text in its text layers, not in op layers': ('strings.*',),
    'makes a tensor from Python values and static shapes; torchk computes it at once and '
    'refuses a Keras symbol as its shape, so a saved op layer of it does not load': (
        'constant', 'convert_to_tensor', 'eye', 'fill', 'linspace', 'ones', 'zeros',
        'experimental.numpy.asarray', 'experimental.numpy.array', 'experimental.numpy.ones',
        'experimental.numpy.zeros', 'experimental.numpy.arange'),
    'random ops computed at once only (torchk records random_normal and random_uniform '
    'through its backend, not as op layers)': (
        'random.categorical', 'random.gamma', 'random.normal', 'random.shuffle',
        'random.truncated_normal', 'random.uniform', 'experimental.numpy.random.randn'),
    'runs a Python function per element at once; on a Keras symbol it records Keras\' own '
    'map_fn, which is no op layer': ('map_fn', 'vectorized_map'),
    'an XLA op of TF\'s internals (`tensorflow.compiler`), computed at once only': (
        'compiler.tf2xla.python.xla.dynamic_update_slice',),
    'a decorator giving a Python function its own gradient (a torch autograd Function); '
    'on Keras symbols it records the decorated function, not a table op': (
        'custom_gradient',),
    'makes a window from its length, a Python number; computed at once': (
        'signal.hann_window', 'signal.hamming_window'),
    'file and audio I/O on the host: reads files and decodes their bytes, not a tensor op': (
        'io.*', 'audio.*'),
    'runs a Python function at once (torchk is eager); no op to record': ('py_function',),
}
# The names `torchk.tf` provides that are no op of this table, with why (`'config.*'`: every
# name of a namespace). tests/tf/test_op_table.py checks that every other name is an op.
NOT_RECORDABLE = {path: reason for reason, paths in _NOT_RECORDABLE_REASONS.items()
                  for path in paths}

