"""Array ops: shapes, joining, slicing, indexing and tensors shaped like others.

Arguments are converted as in `math_ops` (`_tensor`). Shape-like arguments (`reshape`'s
`shape`, `tile`'s `n`, `slice`'s `start` and `size`) may be lists of ints and 0-d int tensors
(`K.shape(x)[0]`) or a 1-D int tensor.

Differences from the TensorFlow backend, all deliberate:
- `one_hot`, `zeros_like` and `ones_like` default to `floatx()` (TF: float32 for `one_hot`).
- `tile` with more multiples than axes raises ValueError (TF: NotImplementedError).
- `concatenate` and `stack` promote mismatched dtypes the torch way (TF raises).
- `squeeze` and `slice` check sizes when the graph runs. While static shapes are inferred,
  unknown dimensions are example sizes, so there `squeeze` drops the axis whatever its size
  and `slice` may exceed it, as TF's static shapes do.
"""
import builtins
import math

import numpy as np
import torch

from . import config
from . import dtypes
from . import graph
from . import validation
from .graph import KerasTensor, inferring, op, target_device
from .math_ops import _axes, _axis, _tensor, _tensor_list

__all__ = [
    'concatenate', 'reshape', 'permute_dimensions', 'repeat_elements', 'repeat', 'arange',
    'tile', 'flatten', 'batch_flatten', 'expand_dims', 'squeeze', 'stack', 'one_hot', 'reverse',
    'slice', 'gather', 'zeros_like', 'ones_like', 'identity', 'shape', 'size',
]


@op
def _shape(x):
    return torch.tensor(tuple(x.shape), dtype=torch.int64)


class _ShapeTensor(KerasTensor):
    """`K.shape` of a symbol whose shape is partly static: its entries at the static axes
    are constants (a program computes nothing for them), the others are read when the
    graph runs, one axis at a time."""

    def __init__(self, symbol, of):
        super().__init__(symbol.node, symbol.path, symbol._static_shape, symbol._torch_dtype,
                         symbol._examples, symbol.name)
        self._dimensions = tuple(of._static_shape)
        self._of = of

    def __getitem__(self, key):
        rank = len(self._dimensions)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool) \
                and -rank <= key < rank:
            size = self._dimensions[key]
            return _dimension(self._of, key % rank) if size is None else _constant_shape(size)
        if isinstance(key, builtins.slice) and not graph.contains_symbol(key):
            sizes = self._dimensions[key]
            if None not in sizes:
                return _constant_shape(sizes)
        return super().__getitem__(key)


def _constant_shape(sizes):
    """Sizes known when the graph is built, as `_shape` gives them."""
    return torch.tensor(sizes, dtype=torch.int64)


@op
def _dimension(x, axis):
    """`K.shape(x)[axis]` of an axis whose size is known when the graph runs: a 0-d int64
    tensor."""
    return torch.tensor(x.shape[axis], dtype=torch.int64)


def shape(x):
    """Returns the shape of a tensor as a 1-D int64 tensor (symbolic for symbols).

    The static part of a symbol's shape is known when the graph is built: `K.shape(x)` of a
    symbol of static shape, and `K.shape(x)[i]` (or a slice) at its static axes, are
    constant tensors; an unknown axis `K.shape(x)[i]` is the one size read when the graph
    runs.

    # Example
    >>> K.reshape(x, (K.shape(x)[0], -1))
    """
    if isinstance(x, graph.SymbolicOperators):
        static = x._keras_shape if isinstance(x, KerasTensor) else tuple(x.shape)
        if static is not None and None not in static:
            return _constant_shape(tuple(static))
        symbol = _shape(x)
        return symbol if static is None else _ShapeTensor(symbol, x)
    return _shape(x)


@op
def _size(x):
    return torch.tensor(x.numel(), dtype=torch.int64)


def size(x, name=None):
    """Returns the number of elements of `x` as a scalar int64 tensor."""
    return _size(x)


def _int(value, name):
    """Returns `value` (a Python, numpy or 0-d tensor integer) as a Python int."""
    try:
        return graph.size_value(value)
    except TypeError:
        raise TypeError('%s must hold integers, got %r (of type %s).'
                        % (name, value, type(value).__name__)) from None


def _ints(values, name):
    """Returns a shape-like argument as a tuple of Python ints.

    `values` is an int, a list or tuple of ints and 0-d int tensors, or a 1-D int tensor or
    numpy array.
    """
    if isinstance(values, (torch.Tensor, np.ndarray)):
        if values.ndim > 1:
            raise ValueError('%s must be 1-D, got a tensor of shape %s.'
                             % (name, tuple(values.shape)))
        if isinstance(values, torch.Tensor) and (values.is_floating_point()
                                                 or values.is_complex()):
            raise TypeError('%s must hold integers, got a tensor of dtype %s.'
                            % (name, dtypes.name(values.dtype)))
        values = values.reshape(-1).tolist()
    elif not isinstance(values, (list, tuple)):
        values = [values]
    return tuple(_int(v, name) for v in values)


def concatenate(tensors, axis=-1):
    """Concatenates a list of tensors along the specified axis.

    Sparse tensors are concatenated as sparse when all are, else densified.

    # Arguments
        tensors: List of tensors to concatenate.
        axis: Concatenation axis.

    # Returns
        A tensor.
    """
    result = _concatenate(tensors, axis)
    if isinstance(result, KerasTensor) and all(
            getattr(t, '_is_sparse', False) or getattr(t, 'is_sparse', False) for t in tensors):
        result._is_sparse = True  # `K.is_sparse` of the symbol, as for a sparse placeholder
    return result


@op
def _concatenate(tensors, axis):
    tensors = _tensor_list(tensors)
    axis = _axis(axis, tensors[0].ndim)
    if not all(t.is_sparse for t in tensors):
        tensors = [t.to_dense() if t.is_sparse else t for t in tensors]
    return torch.cat(tensors, axis)


@op
def _dimension(x, axis):
    """`K.shape(x)[axis]` of an axis whose size is known when the graph runs: a 0-d int64
    tensor."""
    return torch.tensor(x.shape[axis], dtype=torch.int64)


@op
def reshape(x, shape):
    """Reshapes a tensor to the specified shape.

    # Arguments
        x: Tensor or variable.
        shape: Target shape: a tuple or list of ints, which may hold one `-1` and 0-d int
            tensors such as `K.shape(x)[0]`, or a 1-D int tensor.

    # Returns
        A tensor.

    # Raises
        ValueError: if `shape` does not fit the number of elements of `x`.
    """
    x = _tensor(x)
    shape = _ints(shape, 'shape')
    try:
        return x.reshape(shape)
    except RuntimeError as e:
        if inferring() and shape.count(-1) <= 1 and 0 not in shape:
            # Example sizes of unknown dimensions need not fit like the real ones: the
            # result has the target shape, its `-1` dimension unknown, as in TF; real sizes
            # are checked when run.
            known = abs(math.prod(shape))
            return x.new_empty([x.numel() // known if d == -1 else d for d in shape])
        raise ValueError('Cannot reshape a tensor of shape %s (%d elements) to shape %s: %s'
                         % (tuple(x.shape), x.numel(), shape, e)) from None


@op
def permute_dimensions(x, pattern):
    """Permutes axes in a tensor.

    # Arguments
        x: Tensor or variable.
        pattern: A tuple of dimension indices, e.g. `(0, 2, 1)`.

    # Returns
        A tensor.

    # Raises
        ValueError: if `pattern` is not a permutation of `range(ndim(x))`.
    """
    x = _tensor(x)
    pattern = _ints(pattern, 'pattern')
    if sorted(pattern) != list(range(x.ndim)):
        raise ValueError('pattern must be a permutation of %s for a tensor of rank %d, got %r.'
                         % (tuple(range(x.ndim)), x.ndim, pattern))
    return x.permute(pattern)


@op
def repeat_elements(x, rep, axis):
    """Repeats the elements of a tensor along an axis, like `np.repeat`.

    If `x` has shape `(s1, s2, s3)` and `axis` is `1`, the output will have shape
    `(s1, s2 * rep, s3)`.

    # Arguments
        x: Tensor or variable.
        rep: Integer, number of times to repeat.
        axis: Axis along which to repeat.

    # Returns
        A tensor.
    """
    x = _tensor(x)
    rep = _int(rep, 'rep')
    if rep < 0:
        raise ValueError('rep must be >= 0, got %d.' % rep)
    return torch.repeat_interleave(x, rep, _axis(axis, x.ndim))


@op
def repeat(x, n):
    """Repeats a 2D tensor: `(samples, dim)` becomes `(samples, n, dim)`.

    # Arguments
        x: Tensor or variable of rank 2.
        n: Integer, number of times to repeat.

    # Returns
        A tensor.
    """
    x = _tensor(x)
    if x.ndim != 2:
        raise ValueError('repeat expects a tensor of rank 2, got shape %s.' % (tuple(x.shape),))
    return x.unsqueeze(1).repeat(1, _int(n, 'n'), 1)


def _arange_bound(value, name):
    if isinstance(value, (torch.Tensor, np.integer)):
        return _int(value, name)
    return value


@op(dynamic_axes=(0,))  # the length depends on the values of start, stop and step
def arange(start, stop=None, step=1, dtype='int32'):
    """Creates a 1D tensor containing a sequence of numbers.

    As in Theano and numpy, a single argument is the stop value and start is 0; an empty
    range gives an empty tensor.

    # Arguments
        start: Start value (a number or a 0-d int tensor).
        stop: Stop value.
        step: Difference between two successive values.
        dtype: Dtype of the result (default `'int32'`, as in TF).

    # Returns
        A 1D tensor.
    """
    start = _arange_bound(start, 'start')
    stop = _arange_bound(stop, 'stop')
    step = _arange_bound(step, 'step')
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError('step must not be 0.')
    if (stop - start) * step < 0:
        stop = start
    dtype = dtypes.to_torch(dtype)
    if all(isinstance(v, int) for v in (start, stop, step)):
        return torch.arange(start, stop, step, dtype=dtype, device=target_device())
    return torch.arange(start, stop, step, device=target_device()).to(dtype)


@op
def tile(x, n):
    """Creates a tensor by tiling `x` by `n`.

    # Arguments
        x: A tensor or variable.
        n: An int, a list of ints (padded on the left with 1s up to the rank of `x`), or a
            1-D int tensor.

    # Returns
        A tiled tensor.

    # Raises
        ValueError: if `n` has more entries than `x` has axes.
    """
    x = _tensor(x)
    n = _ints(n, 'n')
    if len(n) > x.ndim:
        raise ValueError('n must have at most %d entries for a tensor of rank %d, got %r.'
                         % (x.ndim, x.ndim, n))
    return x.repeat((1,) * (x.ndim - len(n)) + n)


@op
def flatten(x):
    """Flattens a tensor into 1-D.

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor, reshaped into 1-D.
    """
    return _tensor(x).reshape(-1)


@op
def batch_flatten(x):
    """Turns a nD tensor into a 2D tensor with the same first dimension.

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor of shape `(x.shape[0], product of the other dimensions)`.
    """
    x = _tensor(x)
    return x.reshape(x.shape[0] if x.ndim else 1, math.prod(x.shape[1:]))


@op
def expand_dims(x, axis=-1):
    """Adds a 1-sized dimension at index `axis`.

    # Arguments
        x: A tensor or variable.
        axis: Position where to add a new axis, in [-rank(x) - 1, rank(x)].

    # Returns
        A tensor with expanded dimensions.
    """
    x = _tensor(x)
    return x.unsqueeze(_axis(axis, x.ndim + 1))


@op
def squeeze(x, axis):
    """Removes a 1-sized dimension from the tensor at index `axis`.

    # Arguments
        x: A tensor or variable.
        axis: Axis to drop.

    # Returns
        A tensor with the same data as `x` but reduced dimensions.

    # Raises
        ValueError: if the dimension at `axis` is not 1.
    """
    x = _tensor(x)
    axis = _axis(axis, x.ndim)
    if x.shape[axis] == 1:
        return x.squeeze(axis)
    if inferring():
        # The example size of an unknown dimension need not be 1, as the real one must:
        # as in TF, the size is checked when the graph runs.
        return x.new_empty(x.shape[:axis] + x.shape[axis + 1:])
    raise ValueError('Cannot squeeze axis %d of a tensor of shape %s: expected a dimension '
                     'of 1, got %d.' % (axis, tuple(x.shape), x.shape[axis]))


@op
def stack(x, axis=0):
    """Stacks a list of rank `R` tensors into a rank `R+1` tensor.

    # Arguments
        x: List of tensors; Python numbers are allowed next to 0-d tensors
            (`K.stack([1, n])`) and take their dtype.
        axis: Axis along which to perform stacking.

    # Returns
        A tensor.
    """
    tensors = _tensor_list(x)
    return torch.stack(tensors, _axis(axis, tensors[0].ndim + 1))


@op
def one_hot(indices, num_classes):
    """Computes the one-hot representation of an integer tensor.

    Indices outside `[0, num_classes)` give all-zero rows, as in TF.

    # Arguments
        indices: nD integer tensor of shape `(batch_size, dim1, ..., dim(n-1))`.
        num_classes: Integer, number of classes to consider.

    # Returns
        (n + 1)D one-hot representation of the input, of shape
        `(batch_size, dim1, ..., dim(n-1), num_classes)` and dtype `floatx()`.
    """
    indices = _tensor(indices)
    classes = torch.arange(_int(num_classes, 'num_classes'), device=indices.device)
    return (indices.unsqueeze(-1) == classes).to(dtypes.to_torch(config.floatx()))


@op
def reverse(x, axes):
    """Reverses a tensor along the specified axes.

    # Arguments
        x: Tensor to reverse.
        axes: Integer or list of integers: axes to reverse.

    # Returns
        A tensor.
    """
    x = _tensor(x)
    return torch.flip(x, _axes(axes, x.ndim, 'axes'))


@op
def slice(x, start, size):
    """Extracts a slice from a tensor.

    # Arguments
        x: Input tensor.
        start: Integer list/tuple or 1-D tensor: the start index of the slice on each axis.
        size: Integer list/tuple or 1-D tensor: the size of the slice on each axis; -1 takes
            everything from the start index on.

    # Returns
        A sliced tensor:
        `new_x = x[start[0]: start[0] + size[0], ..., start[-1]: start[-1] + size[-1]]`

    # Raises
        ValueError: if the lengths of `start` and `size` differ from the rank of `x`, or the
            slice does not fit in `x`.
    """
    x = _tensor(x)
    start = _ints(start, 'start')
    size = _ints(size, 'size')
    if not x.ndim == len(start) == len(size):
        raise ValueError('The dimension and the size of indices should match: x has rank %d, '
                         'start %r and size %r.' % (x.ndim, start, size))
    slices = []
    for begin, length, dim in zip(start, size, x.shape):
        end = dim if length == -1 else begin + length
        if not 0 <= begin <= end <= dim:
            raise ValueError('Slice with start %r and size %r does not fit in a tensor of '
                             'shape %s.' % (start, size, tuple(x.shape)))
        slices.append(builtins.slice(begin, end))
    return x[tuple(slices)]


@op
def gather(reference, indices):
    """Retrieves the elements of indices `indices` in the tensor `reference` (along axis 0).

    # Arguments
        reference: A tensor.
        indices: An integer tensor of indices (any integer dtype), a list or a numpy array.

    # Returns
        A tensor of shape `indices.shape + reference.shape[1:]`, of the dtype of `reference`.

    # Raises
        TypeError: if `indices` is not integer.
        ValueError: if an index of CPU `indices` is outside `[0, len(reference))` (negative
            indices included, as in TF).
    """
    reference = _tensor(reference)
    indices = _tensor(indices, device=reference.device)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype == torch.bool:
        raise TypeError("indices must be an integer tensor, got dtype %s; cast it with "
                        "K.cast(indices, 'int32')." % dtypes.name(indices.dtype))
    validation.check_index_range('gather', 'indices', indices, reference.shape[0])
    return _gather_checked(reference, indices)


def _gather_checked(reference, indices):
    """`gather` of integer `indices` already known to lie in `[0, len(reference))`: rows of a
    2-D `reference` with `torch.embedding` (whose backward is one kernel), else
    `index_select`."""
    if reference.ndim == 2:
        return torch.embedding(reference, indices)
    flat = torch.index_select(reference, 0, indices.reshape(-1))
    return flat.reshape(tuple(indices.shape) + tuple(reference.shape[1:]))


def _dtype_or_floatx(dtype):
    return dtypes.to_torch(config.floatx() if dtype is None else dtype)


@op
def zeros_like(x, dtype=None, name=None):
    """Instantiates an all-zeros tensor of the same shape as another tensor.

    # Arguments
        x: Tensor or variable.
        dtype: Dtype of the result; None means `floatx()` (as in TF, not the dtype of `x`).
        name: Unused; kept for Keras compatibility.

    # Returns
        A tensor of zeros with the shape of `x`.
    """
    return torch.zeros_like(_tensor(x), dtype=_dtype_or_floatx(dtype))


@op
def ones_like(x, dtype=None, name=None):
    """Instantiates an all-ones tensor of the same shape as another tensor.

    # Arguments
        x: Tensor or variable.
        dtype: Dtype of the result; None means `floatx()` (as in TF, not the dtype of `x`).
        name: Unused; kept for Keras compatibility.

    # Returns
        A tensor of ones with the shape of `x`.
    """
    return torch.ones_like(_tensor(x), dtype=_dtype_or_floatx(dtype))


@op
def identity(x, name=None):
    """Returns a tensor with the same content as the input tensor.

    The result is a new tensor object that aliases `x` (a view, no copy): inside a graph it
    reads a variable's value when the graph runs.

    # Arguments
        x: The input tensor.
        name: Unused; kept for Keras compatibility.

    # Returns
        A tensor of the same shape, type and content.
    """
    x = _tensor(x)
    return x.view_as(x)
