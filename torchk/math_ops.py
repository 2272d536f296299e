"""Math ops: casting, linear algebra, reductions and element-wise functions.

Every op takes torch tensors, numpy arrays, Python numbers or (nested) lists of them, and
returns a `torch.Tensor`. Conversion follows one rule, `_tensor`: torch tensors pass through,
numpy arrays keep their dtype, Python floats become `floatx()`, Python ints `int64` (torch's
index dtype; TF would pick int32) and bools `bool`. Next to a tensor, a Python number is a
"weak" scalar, as in torch and TF: `K.maximum(x, 0.)` keeps the dtype of `x`.

Differences from the TensorFlow backend, all deliberate:
- `mean`, `var`, `std` and `logsumexp` cast bool *and integer* tensors to `floatx()` first
  (TF casts bool only and does integer division for ints).
- `sum`, `prod`, `cumsum` and `cumprod` keep the input dtype like TF; bool counts as int64
  (TF refuses bool).
- Binary ops promote mismatched tensor dtypes the torch way (TF raises); numpy arrays keep
  their dtype there, so a float64 array of rank >= 1 promotes a float32 tensor.
"""
import builtins
import math
import operator

import numpy as np
import torch

from . import config
from . import dtypes
from . import graph
from .graph import op, target_device

__all__ = [
    'cast', 'dot', 'batch_dot', 'transpose', 'max', 'min', 'sum', 'prod', 'cumsum', 'cumprod',
    'var', 'std', 'mean', 'any', 'all', 'argmax', 'argmin', 'logsumexp', 'square', 'abs',
    'sqrt', 'exp', 'log', 'round', 'sign', 'pow', 'clip', 'equal', 'not_equal', 'greater',
    'greater_equal', 'less', 'less_equal', 'maximum', 'minimum', 'sin', 'cos', 'divide_no_nan',
]

_NUMBERS = (bool, int, float)


# Conversion and argument helpers, shared with array_ops.

def _tensor(x, dtype=None, device=None):
    """Returns `x` as a `torch.Tensor`, cast to `dtype` when given.

    torch tensors pass through (not moved). numpy arrays keep their dtype; Python floats (also
    inside lists) become `floatx()`, Python ints int64, bools bool. A list or tuple holding
    tensors is stacked (`[K.shape(x)[0], 3]`). New tensors go on `device`, else on the device
    of the list's first tensor, else on `graph.target_device()`.
    """
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(dtypes.to_torch(dtype))
    if isinstance(x, (list, tuple)) and _contains_tensor(x):
        tensor = torch.stack(_tensor_list(x))
        return tensor if dtype is None else tensor.to(dtypes.to_torch(dtype))
    value = np.asarray(x)
    if value.dtype == object:
        raise TypeError('Cannot convert %r (of type %s) to a tensor; expected a tensor, a numpy '
                        'array, a number or a list of them.' % (x, type(x).__name__))
    if dtype is None and value.dtype.kind == 'f' and not isinstance(x, (np.ndarray, np.generic)):
        dtype = config.floatx()
    return dtypes.as_tensor(value, dtype=None if dtype is None else dtypes.to_torch(dtype),
                            device=target_device() if device is None else device)


def _contains_tensor(values):
    return builtins.any(isinstance(v, torch.Tensor)
                        or (isinstance(v, (list, tuple)) and _contains_tensor(v))
                        for v in values)


def _tensor_list(values):
    """Converts a list of tensors, arrays and numbers to tensors that torch can stack.

    Python numbers take the dtype torch gives them next to the list's first tensor, so that
    `K.stack([1, n])` keeps the dtype of `n`.
    """
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError('Expected a non-empty list or tuple of tensors, got %r.' % (values,))
    first = next((v for v in values if isinstance(v, torch.Tensor)), None)
    if first is None:
        return [_tensor(v) for v in values]
    return [_weak(v, first) if isinstance(v, _NUMBERS) else _tensor(v, device=first.device)
            for v in values]


def _weak(number, like):
    """A Python number as a 0-d tensor with the dtype torch gives it next to `like`."""
    return torch.as_tensor(number, dtype=torch.result_type(like, number), device=like.device)


def _operands(x, y, numbers=True):
    """Prepares the operands of a binary op: `x` a tensor, `y` a tensor or (if `numbers`) a
    Python number. A non-tensor operand goes on the device of the tensor one."""
    if not isinstance(x, torch.Tensor):
        if isinstance(y, torch.Tensor):
            x = _weak(x, y) if isinstance(x, _NUMBERS) else _tensor(x, device=y.device)
        else:
            x = _tensor(x)
    if not isinstance(y, torch.Tensor) and not (numbers and isinstance(y, _NUMBERS)):
        y = _weak(y, x) if isinstance(y, _NUMBERS) else _tensor(y, device=x.device)
    return x, y


def _float(x):
    """Casts a bool or integer tensor to `floatx()`; float and complex tensors pass."""
    if x.is_floating_point() or x.is_complex():
        return x
    return x.to(dtypes.to_torch(config.floatx()))


def _accumulable(x):
    """Bool tensors are summed and multiplied as int64."""
    return x.to(torch.int64) if x.dtype == torch.bool else x


def _axis(axis, rank, name='axis'):
    """Returns `axis` checked against `rank`, as a non-negative int.

    # Raises
        TypeError: if `axis` is not an integer.
        ValueError: if `axis` is outside `[-rank, rank)`.
    """
    try:
        index = operator.index(axis)
    except TypeError:
        raise TypeError('%s must be an integer, got %r (of type %s).'
                        % (name, axis, type(axis).__name__)) from None
    if not -rank <= index < rank:
        raise ValueError('Invalid %s %d for a tensor of rank %d: expected an integer in '
                         '[%d, %d).' % (name, index, rank, -rank, rank))
    return index % rank


def _axes(axis, rank, name='axis'):
    """Returns `axis` (None for all axes, an int, or a list/tuple of ints) as a tuple of
    non-negative ints. An empty list gives an empty tuple: no reduction.

    # Raises
        ValueError: if an axis is out of range or repeated.
    """
    if axis is None:
        return tuple(range(rank))
    if not isinstance(axis, (list, tuple)):
        return (_axis(axis, rank, name),)
    axes = tuple(_axis(a, rank, name) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError('%s must not repeat an axis, got %r for a tensor of rank %d.'
                         % (name, axis, rank))
    return axes


# Casting and linear algebra.

@op
def cast(x, dtype):
    """Casts a tensor to a different dtype and returns it.

    # Arguments
        x: Tensor, variable, numpy array or Python number.
        dtype: Target dtype: a string (`'float32'`), a numpy dtype, a torch dtype or the
            `.dtype` of a tensor.

    # Returns
        A tensor of dtype `dtype` (`x` itself when it has that dtype already).
    """
    return _tensor(x, dtype)


@op
def dot(x, y):
    """Multiplies 2 tensors (and/or variables) and returns a tensor.

    For nD inputs it follows Theano and TF: the last axis of `x` is contracted with the
    second-to-last axis of `y`, e.g. `(2, 3) . (4, 3, 5) -> (2, 4, 5)`. `x` may be a sparse
    COO matrix.

    # Arguments
        x: Tensor or variable.
        y: Tensor or variable.

    # Returns
        A tensor, dot product of `x` and `y`.

    # Raises
        ValueError: if an input is a scalar or the contracted dimensions differ.
    """
    x = _tensor(x)
    y = _tensor(y, device=x.device)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError('dot needs inputs of rank >= 1, got shapes %s and %s.'
                         % (tuple(x.shape), tuple(y.shape)))
    y_axis = builtins.max(y.ndim - 2, 0)
    if x.shape[-1] != y.shape[y_axis]:
        raise ValueError('Cannot dot x of shape %s with y of shape %s: x.shape[-1] (%d) != '
                         'y.shape[%d] (%d).' % (tuple(x.shape), tuple(y.shape), x.shape[-1],
                                                y_axis, y.shape[y_axis]))
    if x.is_sparse:
        return torch.sparse.mm(x, y)
    if y.ndim <= 2:
        return torch.matmul(x, y)
    return torch.tensordot(x, y, dims=([x.ndim - 1], [y_axis]))


def _linear(x, kernel, bias):
    """`bias_add(dot(x, kernel), bias)` for a 2-D `kernel` `(in, out)` and a bias of `out`
    values: one `F.linear` call, which adds the bias inside the matrix product (torch's
    `addmm`) and takes the bias gradient from the same backward, as TF's `MatMul` + `BiasAdd`
    pair is one fused kernel. Values agree with the two ops to float32 rounding."""
    return torch.nn.functional.linear(x, kernel.t(), bias)


def _folded_dense_bias_add(x, bias, data_format):
    """Records `bias_add(x, bias, data_format)` as one `_linear` node when `x` is the
    result of a recorded `dot` of a dense tensor by a 2-D kernel, and `bias` a 1D vector of
    the kernel's output size and `x`'s dtype, added along the last axis; returns None
    otherwise (`conv_ops.bias_add` then adds it as usual)."""
    node = x.node if isinstance(x, graph.KerasTensor) else None
    if node is None or x.path != () or node.fn is not dot.__wrapped__ or node.kwargs:
        return None
    inputs, kernel = node.args
    bias = graph.read_variable(bias)
    if not builtins.all(isinstance(v, (graph.KerasTensor, torch.Tensor))
                        for v in (inputs, kernel, bias)):
        return None
    if (_static_shape(kernel) is None or len(_static_shape(kernel)) != 2
            or _static_shape(bias) != (_static_shape(kernel)[1],)
            or getattr(inputs, 'is_sparse', False) or x.ndim is None or x.ndim < 2
            or (data_format == 'channels_first' and 3 <= x.ndim <= 5)
            or data_format not in (None, 'channels_first', 'channels_last')
            or not builtins.all(_dtype_of(v) == _dtype_of(x) for v in (inputs, kernel, bias))):
        return None
    return graph.record(_linear, (inputs, kernel, bias), {})


def _static_shape(x):
    shape = x._static_shape if isinstance(x, graph.KerasTensor) else tuple(x.shape)
    return None if shape is None else tuple(shape)


def _dtype_of(x):
    return x._torch_dtype if isinstance(x, graph.KerasTensor) else x.dtype


@op
def batch_dot(x, y, axes=None):
    """Batchwise dot product.

    Computes, for each sample `i`, the dot product of `x[i]` and `y[i]` over the axes `axes`
    (axis numbers include the batch axis). With `x` of shape `(100, 20)` and `y` of shape
    `(100, 30, 20)`, `batch_dot(x, y, axes=(1, 2))` has shape `(100, 30)`. A result of rank 1
    is returned with shape `(batch_size, 1)`.

    # Arguments
        x: Tensor or variable with `ndim >= 2`.
        y: Tensor or variable with `ndim >= 2`.
        axes: None, an int, or a pair of ints: the axes of `x` and `y` to reduce. Defaults
            to the last axis of `x` and the second-to-last of `y` (the last if `y` is 2D).

    # Returns
        A tensor with the shape of `x` less the reduced axis, followed by the shape of `y`
        less its batch and reduced axes.

    # Raises
        ValueError: on ranks below 2, different batch sizes, bad `axes`, a reduction over
            the batch axis, or reduced dimensions that differ.
    """
    x = _tensor(x)
    y = _tensor(y, device=x.device)
    x_ndim, y_ndim = x.ndim, y.ndim
    shapes = 'Received inputs with shapes %s and %s.' % (tuple(x.shape), tuple(y.shape))
    if x_ndim < 2 or y_ndim < 2:
        raise ValueError('Can not do batch_dot on inputs with rank < 2. ' + shapes)
    if x.shape[0] != y.shape[0]:
        raise ValueError('Can not do batch_dot on inputs with different batch sizes. ' + shapes)
    if axes is None:
        axes = (x_ndim - 1, y_ndim - 1 if y_ndim == 2 else y_ndim - 2)
    elif not isinstance(axes, (list, tuple)):
        axes = (axes, axes)
    if len(axes) != 2 or builtins.any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError('Multiple target dimensions are not supported. Expected: None, int, '
                         '(int, int), Provided: %r.' % (axes,))
    a0 = _axis(axes[0], x_ndim, 'axes[0]')
    a1 = _axis(axes[1], y_ndim, 'axes[1]')
    if a0 == 0 or a1 == 0:
        raise ValueError('Can not perform batch_dot over axis 0 (axes=%r). If your inputs are '
                         'not batched, add a dummy batch dimension with K.expand_dims(x, 0).'
                         % (axes,))
    if x.shape[a0] != y.shape[a1]:
        raise ValueError('Can not do batch_dot on inputs with shapes %s and %s with axes=%r. '
                         'x.shape[%d] != y.shape[%d] (%d != %d).'
                         % (tuple(x.shape), tuple(y.shape), axes, a0, a1,
                            x.shape[a0], y.shape[a1]))
    if x_ndim == 2:
        x = x.unsqueeze(1)
        a0 += 1
    if y_ndim == 2:
        y = y.unsqueeze(2)
    x = torch.movedim(x, a0, -1)
    y = torch.movedim(y, a1, 1)
    batch, depth = x.shape[0], x.shape[-1]
    x_mid, y_trail = tuple(x.shape[1:-1]), tuple(y.shape[2:])
    result = torch.matmul(x.reshape(batch, math.prod(x_mid), depth),
                          y.reshape(batch, depth, math.prod(y_trail)))
    result = result.reshape((batch,) + x_mid + y_trail)
    if x_ndim == 2:
        return result.squeeze(1)
    if y_ndim == 2:
        return result.squeeze(-1)
    return result


@op
def transpose(x):
    """Reverses the order of the axes of a tensor (a matrix transpose in 2D).

    # Arguments
        x: Tensor or variable.

    # Returns
        A tensor.
    """
    x = _tensor(x)
    return x.permute(tuple(range(x.ndim - 1, -1, -1)))


# Reductions.

@op
def max(x, axis=None, keepdims=False):
    """Maximum value in a tensor.

    # Arguments
        x: A tensor or variable.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the maximum values of `x`; over no values, the lowest value of the
        dtype (`-inf` for floats), as in TF.
    """
    x = _tensor(x)
    return _extremum(torch.amax, x, _axes(axis, x.ndim), keepdims, largest=True)


@op
def min(x, axis=None, keepdims=False):
    """Minimum value in a tensor.

    # Arguments
        x: A tensor or variable.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the minimum values of `x`; over no values, the highest value of the
        dtype (`inf` for floats), as in TF.
    """
    x = _tensor(x)
    return _extremum(torch.amin, x, _axes(axis, x.ndim), keepdims, largest=False)


def _extremum(reduce, x, axes, keepdims, largest):
    """`reduce(x, axes, keepdims)`, `torch.amax` or `torch.amin` (`largest`), which refuse
    to reduce an empty axis: there the result is the reduction's identity, as in TF."""
    if not axes:
        return x
    if 0 not in [x.shape[a] for a in axes]:
        return reduce(x, axes, keepdims)
    shape = [1 if a in axes else n for a, n in enumerate(x.shape)
             if keepdims or a not in axes]
    if x.dtype == torch.bool:
        identity = not largest
    elif x.dtype.is_floating_point:
        identity = float('-inf') if largest else float('inf')
    else:
        identity = torch.iinfo(x.dtype).min if largest else torch.iinfo(x.dtype).max
    return torch.full(shape, identity, dtype=x.dtype, device=x.device)


@op
def sum(x, axis=None, keepdims=False):
    """Sum of the values in a tensor, along the specified axes.

    # Arguments
        x: A tensor or variable.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the sum of `x`, of the dtype of `x` (int64 for bool).
    """
    x = _accumulable(_tensor(x))
    axes = _axes(axis, x.ndim)
    return torch.sum(x, axes, keepdims, dtype=x.dtype) if axes else x


@op
def prod(x, axis=None, keepdims=False):
    """Multiplies the values in a tensor, along the specified axes.

    # Arguments
        x: A tensor or variable, or a list of scalars (`K.prod([K.shape(x)[0], 3])`).
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the product of `x`, of the dtype of `x` (int64 for bool).
    """
    x = _accumulable(_tensor(x))
    for a in sorted(_axes(axis, x.ndim), reverse=True):
        x = torch.prod(x, a, keepdims, dtype=x.dtype)
    return x


@op
def cumsum(x, axis=0):
    """Cumulative sum of the values in a tensor, along the specified axis.

    # Arguments
        x: A tensor or variable.
        axis: An integer, the axis to compute the sum.

    # Returns
        A tensor of the cumulative sum of `x` along `axis`, of the dtype of `x`.
    """
    x = _accumulable(_tensor(x))
    return torch.cumsum(x, _axis(axis, x.ndim), dtype=x.dtype)


@op
def cumprod(x, axis=0):
    """Cumulative product of the values in a tensor, along the specified axis.

    # Arguments
        x: A tensor or variable.
        axis: An integer, the axis to compute the product.

    # Returns
        A tensor of the cumulative product of `x` along `axis`, of the dtype of `x`.
    """
    x = _accumulable(_tensor(x))
    return torch.cumprod(x, _axis(axis, x.ndim), dtype=x.dtype)


def _var(x, axis, keepdims):
    x = _float(_tensor(x))
    axes = _axes(axis, x.ndim)
    if not axes:
        return torch.zeros_like(x)
    return torch.var(x, axes, correction=0, keepdim=keepdims)


@op
def var(x, axis=None, keepdims=False):
    """Population variance (ddof 0) of a tensor, along the specified axes.

    # Arguments
        x: A tensor or variable; bool and integer tensors are cast to `floatx()`.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing (the variance is then 0).
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the variance of `x`.
    """
    return _var(x, axis, keepdims)


@op
def std(x, axis=None, keepdims=False):
    """Population standard deviation (ddof 0) of a tensor, along the specified axes.

    # Arguments
        x: A tensor or variable; bool and integer tensors are cast to `floatx()`.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing (the deviation is then 0).
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the standard deviation of `x`.
    """
    return torch.sqrt(_var(x, axis, keepdims))


@op
def mean(x, axis=None, keepdims=False):
    """Mean of a tensor, along the specified axes.

    # Arguments
        x: A tensor or variable; bool and integer tensors are cast to `floatx()`.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A tensor with the mean of `x`.
    """
    x = _float(_tensor(x))
    axes = _axes(axis, x.ndim)
    return torch.mean(x, axes, keepdims) if axes else x


@op
def any(x, axis=None, keepdims=False):
    """Logical OR reduction (`x` is cast to bool first).

    # Arguments
        x: Tensor or variable.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A bool tensor.
    """
    x = _tensor(x).to(torch.bool)
    axes = _axes(axis, x.ndim)
    return torch.any(x, axes, keepdims) if axes else x


@op
def all(x, axis=None, keepdims=False):
    """Logical AND reduction (`x` is cast to bool first).

    # Arguments
        x: Tensor or variable.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        A bool tensor.
    """
    x = _tensor(x).to(torch.bool)
    axes = _axes(axis, x.ndim)
    return torch.all(x, axes, keepdims) if axes else x


@op
def argmax(x, axis=-1):
    """Returns the index of the maximum value along an axis.

    # Arguments
        x: Tensor or variable.
        axis: Axis along which to perform the reduction.

    # Returns
        An int64 tensor.
    """
    x = _tensor(x)
    return torch.argmax(x, _axis(axis, x.ndim))


@op
def argmin(x, axis=-1):
    """Returns the index of the minimum value along an axis.

    # Arguments
        x: Tensor or variable.
        axis: Axis along which to perform the reduction.

    # Returns
        An int64 tensor.
    """
    x = _tensor(x)
    return torch.argmin(x, _axis(axis, x.ndim))


@op
def logsumexp(x, axis=None, keepdims=False):
    """Computes log(sum(exp(elements across dimensions of a tensor))), stably.

    # Arguments
        x: A tensor or variable; bool and integer tensors are cast to `floatx()`.
        axis: An integer, a list of integers in [-rank(x), rank(x)), or None (default) for
            all axes. An empty list reduces nothing.
        keepdims: Whether to keep the reduced axes, with length 1.

    # Returns
        The reduced tensor.
    """
    x = _float(_tensor(x))
    axes = _axes(axis, x.ndim)
    return torch.logsumexp(x, axes, keepdims) if axes else x


# Element-wise functions.

@op
def square(x):
    """Element-wise square.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.square(_tensor(x))


@op
def abs(x):
    """Element-wise absolute value.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.abs(_tensor(x))


@op
def sqrt(x):
    """Element-wise square root; negative values are clipped to 0 first, as in TF.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.sqrt(torch.clamp_min(_tensor(x), 0))


@op
def exp(x):
    """Element-wise exponential.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.exp(_tensor(x))


@op
def log(x):
    """Element-wise natural logarithm.

    # Arguments
        x: Tensor, variable or number (`K.log(2.)`).

    # Returns
        A tensor.
    """
    return torch.log(_tensor(x))


@op
def round(x):
    """Element-wise rounding to the closest integer; ties round half to even.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.round(_tensor(x))


@op
def sign(x):
    """Element-wise sign: -1, 0 or 1.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.sign(_tensor(x))


@op
def pow(x, a):
    """Element-wise exponentiation, `x ** a`.

    # Arguments
        x: Tensor, variable, numpy array or number.
        a: Exponent: a number or a tensor (broadcast against `x`).

    # Returns
        A tensor.
    """
    return torch.pow(*_operands(x, a))


def _bound(value, x):
    """A clip bound as a Python number, a tensor on the device of `x`, or None."""
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        return value.item()
    if value is None or isinstance(value, (_NUMBERS, torch.Tensor)):
        return value
    return _tensor(value, device=x.device)


@op
def clip(x, min_value, max_value):
    """Element-wise value clipping.

    # Arguments
        x: Tensor or variable.
        min_value: Number, tensor, or None for no lower bound.
        max_value: Number, tensor, or None for no upper bound. A number below a number
            `min_value` is raised to `min_value`, as in TF.

    # Returns
        A tensor.
    """
    x = _tensor(x)
    low, high = _bound(min_value, x), _bound(max_value, x)
    if isinstance(low, _NUMBERS) and isinstance(high, _NUMBERS) and high < low:
        high = low
    if low is None and high is None:
        return x
    if isinstance(low, torch.Tensor) and isinstance(high, _NUMBERS):
        high = _weak(high, x)
    if isinstance(high, torch.Tensor) and isinstance(low, _NUMBERS):
        low = _weak(low, x)
    return torch.clamp(x, low, high)


@op
def equal(x, y):
    """Element-wise equality between two tensors.

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A bool tensor.
    """
    return torch.eq(*_operands(x, y))


@op
def divide_no_nan(x, y):
    """Element-wise `x / y`, 0 where `y` is 0 (TF's `tf.math.divide_no_nan`; a mean of no
    values in tf.keras' metrics). Not a Keras backend function: `torchk.tf` and
    `torchk.keras` use it.

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A tensor of the promoted dtype of `x` and `y`.
    """
    x, y = _operands(x, y)
    quotient = x / y
    return torch.where(y == 0, torch.zeros_like(quotient), quotient)


@op
def not_equal(x, y):
    """Element-wise inequality between two tensors.

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A bool tensor.
    """
    return torch.ne(*_operands(x, y))


@op
def greater(x, y):
    """Element-wise truth value of (x > y).

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A bool tensor.
    """
    return torch.gt(*_operands(x, y))


@op
def greater_equal(x, y):
    """Element-wise truth value of (x >= y).

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A bool tensor.
    """
    return torch.ge(*_operands(x, y))


@op
def less(x, y):
    """Element-wise truth value of (x < y).

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A bool tensor.
    """
    return torch.lt(*_operands(x, y))


@op
def less_equal(x, y):
    """Element-wise truth value of (x <= y).

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A bool tensor.
    """
    return torch.le(*_operands(x, y))


@op
def maximum(x, y):
    """Element-wise maximum of two tensors.

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A tensor.
    """
    return torch.maximum(*_operands(x, y, numbers=False))


@op
def minimum(x, y):
    """Element-wise minimum of two tensors.

    # Arguments
        x: Tensor, variable, numpy array or number.
        y: Tensor, variable, numpy array or number.

    # Returns
        A tensor.
    """
    return torch.minimum(*_operands(x, y, numbers=False))


@op
def sin(x):
    """Computes sin of x element-wise.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.sin(_tensor(x))


@op
def cos(x):
    """Computes cos of x element-wise.

    # Arguments
        x: Tensor, variable or number.

    # Returns
        A tensor.
    """
    return torch.cos(_tensor(x))
