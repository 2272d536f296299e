"""TF's indexing ops on torch tensors: `tf.slice`, `tf.gather_nd`, `tf.scatter_nd`, the
`tf.tensor_scatter_nd_*` family and `tf.meshgrid`.

Each is a backend op (`graph.op`): it runs at once on tensors and records on Keras symbols.
TF's names and arguments; `torchk.op_table` maps the TF paths to them. An index of `gather_nd`
and of the scatters is a vector of `depth` coordinates into the first `depth` axes of a
tensor, held in the last axis of `indices`.
"""
import torch

from . import tf_dtypes as dtypes
from .graph import op


def _as_tensor(value, device=None):
    """`value` as a tensor (TF's dtype rules for lists and numbers), on `device` if given."""
    if not isinstance(value, torch.Tensor):
        value = dtypes.value_to_tensor(value)
    return value if device is None else value.to(device)


def _sizes(values):
    """A shape or a position (a list, a tuple or a 1-D tensor) as a list of ints."""
    if isinstance(values, torch.Tensor):
        return [int(v) for v in values.reshape(-1).tolist()]
    return [int(v) for v in values]


@op
def slice_tensor(input_, begin, size):
    """`tf.slice`: the block of `input_` that starts at `begin` and has `size` elements
    along each axis.

    # Arguments
        input_: a tensor.
        begin: where the block starts on each axis (ints or a 1-D int tensor).
        size: its size on each axis; `-1` takes the rest of the axis.

    # Returns
        The block, a tensor of `input_`'s dtype.

    # Raises
        ValueError: if `begin` or `size` do not have one entry per axis, or the block does
            not fit in `input_`.
    """
    begin, size = _sizes(begin), _sizes(size)
    if len(begin) != input_.ndim or len(size) != input_.ndim:
        raise ValueError('tf.slice: begin and size need one entry per axis of the input '
                         '(rank %d); got begin=%s, size=%s.' % (input_.ndim, begin, size))
    index = []
    for axis, (start, length) in enumerate(zip(begin, size)):
        stop = input_.shape[axis] if length == -1 else start + length
        if start < 0 or length < -1 or stop > input_.shape[axis]:
            raise ValueError('tf.slice: begin %d with size %d does not fit axis %d of size %d.'
                             % (start, length, axis, input_.shape[axis]))
        index.append(slice(start, stop))
    return input_[tuple(index)]


def _coordinates(indices, shape, op_name):
    """`indices` (`(..., depth)`) as `depth` int64 vectors of coordinates, checked against
    the first `depth` sizes of `shape`."""
    depth = indices.shape[-1]
    if depth > len(shape):
        raise ValueError('%s: indices of depth %d index a tensor of rank %d.'
                         % (op_name, depth, len(shape)))
    flat = indices.reshape(-1, depth).to(torch.int64)
    bounds = torch.tensor(shape[:depth], dtype=torch.int64, device=flat.device)
    if flat.numel() and not flat.is_meta and bool(((flat < 0) | (flat >= bounds)).any()):
        bad = flat[((flat < 0) | (flat >= bounds)).any(-1)][0].tolist()
        raise ValueError('%s: index %s is out of bounds for a tensor of shape %s.'
                         % (op_name, bad, list(shape)))
    return tuple(flat.unbind(-1))


@op
def gather_nd(params, indices, batch_dims=0):
    """`tf.gather_nd`: the slices of `params` at `indices`.

    # Arguments
        params: a tensor.
        indices: an int tensor (or nested lists) of shape `batch + (depth,)`, each index the
            coordinates of one slice in the first `depth` axes of `params`.
        batch_dims: only 0 is supported.

    # Returns
        A tensor of shape `batch + params.shape[depth:]`.

    # Raises
        ValueError: for another `batch_dims`, or an index out of bounds.
    """
    if batch_dims:
        raise ValueError('tf.gather_nd with batch_dims=%r is not supported; supported: 0.'
                         % (batch_dims,))
    indices = _as_tensor(indices, params.device)
    coordinates = _coordinates(indices, tuple(params.shape), 'tf.gather_nd')
    gathered = params[coordinates]
    return gathered.reshape(tuple(indices.shape[:-1]) + tuple(gathered.shape[1:]))


def _rows(tensor, indices, updates, op_name):
    """`tensor`'s coordinates for `indices`, and `updates` with one row per index, shaped
    as the slices they write."""
    coordinates = _coordinates(indices, tuple(tensor.shape), op_name)
    depth = indices.shape[-1]
    expected = tuple(indices.shape[:-1]) + tuple(tensor.shape[depth:])
    if tuple(updates.shape) != expected:
        raise ValueError('%s: updates of shape %s do not match indices of shape %s into a '
                         'tensor of shape %s (expected %s).'
                         % (op_name, list(updates.shape), list(indices.shape),
                            list(tensor.shape), list(expected)))
    return coordinates, updates.reshape((-1,) + tuple(tensor.shape[depth:]))


def _scatter(tensor, indices, updates, how, op_name):
    indices = _as_tensor(indices, tensor.device)
    updates = _as_tensor(updates, tensor.device).to(tensor.dtype)
    coordinates, rows = _rows(tensor, indices, updates, op_name)
    if how == 'update':
        return tensor.index_put(coordinates, rows)
    if how in ('add', 'sub'):
        return tensor.index_put(coordinates, rows if how == 'add' else -rows, accumulate=True)
    # min and max: one scatter_reduce over the flattened indexed axes
    depth = indices.shape[-1]
    leading = tuple(tensor.shape[:depth])
    flat_index = torch.zeros(rows.shape[0], dtype=torch.int64, device=tensor.device)
    for axis, coordinate in enumerate(coordinates):
        flat_index = flat_index * leading[axis] + coordinate
    flat = tensor.reshape((-1,) + tuple(tensor.shape[depth:]))
    index = flat_index.reshape((-1,) + (1,) * (flat.ndim - 1)).expand_as(rows)
    reduced = flat.scatter_reduce(0, index, rows, reduce='a' + how, include_self=True)
    return reduced.reshape(tensor.shape)


@op
def scatter_nd(indices, updates, shape):
    """`tf.scatter_nd`: a tensor of zeros of `shape` with `updates` added at `indices`
    (updates at the same index are summed).

    # Arguments
        indices: an int tensor of shape `batch + (depth,)`.
        updates: a tensor of shape `batch + shape[depth:]`.
        shape: the shape of the result (ints or a 1-D int tensor).

    # Returns
        A tensor of `updates`' dtype.

    # Raises
        ValueError: if the shapes do not match, or an index is out of bounds.
    """
    updates = _as_tensor(updates)
    zeros = torch.zeros(_sizes(shape), dtype=updates.dtype, device=updates.device)
    return _scatter(zeros, indices, updates, 'add', 'tf.scatter_nd')


def _tensor_scatter(how):
    @op
    def tensor_scatter(tensor, indices, updates):
        return _scatter(tensor, indices, updates, how, 'tf.tensor_scatter_nd_' + how)
    tensor_scatter.__name__ = tensor_scatter.__qualname__ = 'tensor_scatter_nd_' + how
    tensor_scatter.__doc__ = (
        '`tf.tensor_scatter_nd_%s`: `tensor` with the slices at `indices` %s `updates` '
        '(of shape `indices.shape[:-1] + tensor.shape[depth:]`).' % (how, {
            'update': 'replaced by', 'add': 'plus', 'sub': 'minus',
            'min': 'replaced by their minimum with', 'max': 'replaced by their maximum with',
        }[how]))
    return tensor_scatter


tensor_scatter_nd_update = _tensor_scatter('update')
tensor_scatter_nd_add = _tensor_scatter('add')
tensor_scatter_nd_sub = _tensor_scatter('sub')
tensor_scatter_nd_min = _tensor_scatter('min')
tensor_scatter_nd_max = _tensor_scatter('max')


@op
def meshgrid(*args, indexing='xy'):
    """`tf.meshgrid`: coordinate grids of the 1-D tensors `args`.

    # Arguments
        *args: 1-D tensors (or lists) of coordinates.
        indexing: `'xy'` (Cartesian: the first two axes of the grids swapped) or `'ij'`
            (matrix indexing).

    # Returns
        A list of `len(args)` tensors, each of shape `(len(args[1]), len(args[0]), ...)`
        for `'xy'`, `(len(args[0]), len(args[1]), ...)` for `'ij'`.

    # Raises
        ValueError: for another `indexing`.
    """
    if indexing not in ('xy', 'ij'):
        raise ValueError('tf.meshgrid: indexing must be "xy" or "ij"; got %r.' % (indexing,))
    if not args:
        return []
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
    tensors = [_as_tensor(a, device).reshape(-1) for a in args]
    return list(torch.meshgrid(*tensors, indexing=indexing))
