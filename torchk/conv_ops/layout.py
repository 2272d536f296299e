"""What the convolution, pooling and padding ops share: their arguments (data formats, the Keras
1 names, tuples, padding pairs), the layouts (channels-last tensors viewed channels-first,
Keras kernels as torch's), and TensorFlow's 'same' padding (`_ConstantPad` writes only the
border cells and the input).
"""
import operator

import torch
import torch.nn.functional as F

from .. import config
from .. import dtypes
from .. import graph

_PADDINGS = ('valid', 'same')


# ---------------------------------------------------------------------------------------------
# Argument helpers

def _tensor(value):
    """Returns `value` as a torch tensor (numpy arrays and Python data go to the target device)."""
    if isinstance(value, torch.Tensor):
        return value
    return dtypes.as_tensor(value, device=graph.target_device())


def _keras1_alias(value, default, legacy, name, legacy_name):
    """Returns the Keras 1 keyword's value `legacy` when it was given, else `value`.

    # Raises
        ValueError: if both the Keras 2 argument and its Keras 1 name were given.
    """
    if legacy is None:
        return value
    if value != default:
        raise ValueError('Pass either %s or its Keras 1 name %s, not both; got %s=%r and %s=%r.'
                         % (name, legacy_name, name, value, legacy_name, legacy))
    return legacy


def _data_format(data_format, dim_ordering=None):
    """Returns the checked data format; None (or Keras 1's `'default'`) means the configured one."""
    data_format = _keras1_alias(data_format, None, dim_ordering, 'data_format', 'dim_ordering')
    if data_format == 'default':
        data_format = None
    return config.normalize_data_format(data_format)


def _check_choice(value, choices, argument, name):
    if not isinstance(value, str) or value not in choices:
        raise ValueError('Invalid %s %r for %s; expected %s.'
                         % (argument, value, name, ' or '.join(repr(c) for c in choices)))


def _normalize_tuple(value, n, argument):
    """Returns `value` (an int, or a tuple/list of `n` ints) as a tuple of `n` positive ints.

    Integer 0-d tensors are accepted as ints.
    """
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    try:
        values = tuple(operator.index(v) for v in values)
    except TypeError:
        values = None
    if values is None or len(values) != n:
        raise ValueError('%s must be an integer or a tuple of %d integers; got %r.'
                         % (argument, n, value))
    if min(values) < 1:
        raise ValueError('%s must be positive integers; got %r.' % (argument, value))
    return values


def _padding_pairs(padding, n, name):
    """Returns a padding pattern as `n` `(before, after)` pairs of non-negative ints.

    Accepts an int (the same on every side), `n` ints (symmetric per axis, the Keras 1 form)
    or `n` pairs (the Keras 2 form).
    """
    message = ('Invalid padding %r for %s; expected an integer, %d integers or %d pairs '
               '(before, after) of non-negative integers.' % (padding, name, n, n))
    if not isinstance(padding, (tuple, list)):
        padding = (padding,) * n
    if len(padding) != n:
        raise ValueError(message)
    pairs = []
    for pair in padding:
        if not isinstance(pair, (tuple, list)):
            pair = (pair, pair)
        try:
            pair = tuple(operator.index(p) for p in pair)
        except TypeError:
            raise ValueError(message) from None
        if len(pair) != 2 or min(pair) < 0:
            raise ValueError(message)
        pairs.append(pair)
    return pairs


def _check_rank(x, rank, name, argument='x'):
    if x.ndim != rank:
        raise ValueError('%s expects a %dD %s; got shape %s.'
                         % (name, rank, argument, tuple(x.shape)))


def _check_equal(name, what, got, expected_what, expected, details):
    """`details` is a function returning the end of the message: it is formatted only on
    failure (a traced loop body must not format shapes)."""
    if got != expected:
        raise ValueError('%s: %s (%d) must equal %s (%d); %s.'
                         % (name, what, got, expected_what, expected, details()))


def _to_channels_first(x, data_format, rank, name):
    """Returns `x` (checked to have `rank` spatial dims) as a channels-first view."""
    _check_rank(x, rank + 2, name, 'input (batch, %d spatial dims, channels)' % rank)
    if data_format == 'channels_first':
        return x
    return x.permute(0, rank + 1, *range(1, rank + 1))


def _from_channels_first(x, data_format):
    """Inverse of `_to_channels_first`: a view of `x` in `data_format`."""
    if data_format == 'channels_first':
        return x
    return x.permute(0, *range(2, x.ndim), 1)


def _torch_kernel(kernel):
    """A Keras kernel `(*spatial, a, b)` viewed as torch's `(b, a, *spatial)`.

    This turns a convolution kernel `(*spatial, in, out)` into `F.conv*`'s `(out, in, *spatial)`,
    and a transposed-convolution kernel `(*spatial, out, in)` into `F.conv_transpose*`'s
    `(in, out, *spatial)`.
    """
    return kernel.permute(kernel.ndim - 1, kernel.ndim - 2, *range(kernel.ndim - 2))


# ---------------------------------------------------------------------------------------------
# Padding arithmetic

def _same_padding(size, kernel_size, stride, dilation):
    """TensorFlow's 'same' padding of one axis: `(before, after)`, the odd cell after."""
    # ceil division on non-negative operands only: ONNX divides integers towards zero
    output_size = (size + stride - 1) // stride
    # torch.sym_max: sizes may be symbolic, and `max` of one is miscompiled inside a
    # `scan` body (torch 2.13 gives 0)
    total = torch.sym_max((output_size - 1) * stride + (kernel_size - 1) * dilation + 1 - size,
                          0)
    return total // 2, total - total // 2


def _spatial_pads(sizes, kernel_sizes, strides, dilations, padding):
    """`(before, after)` pads of every spatial axis for `padding` 'valid', 'same' or 'causal'."""
    if padding == 'valid':
        return [(0, 0)] * len(sizes)
    if padding == 'causal':
        return [((k - 1) * d, 0) for k, d in zip(kernel_sizes, dilations)]
    return [_same_padding(n, k, s, d)
            for n, k, s, d in zip(sizes, kernel_sizes, strides, dilations)]


class _ConstantPad(torch.autograd.Function):
    """Pads the trailing axes of `x` by `(before, after)` pairs of cells holding `value`.

    Unlike `F.pad`, which fills the whole result and then copies `x` in, it writes the border
    cells and `x` once each; the result keeps `x`'s memory format (channels_last stays so).
    The gradient is a view of the incoming one.
    """

    @staticmethod
    def forward(ctx, x, pairs, value):
        lead = x.ndim - len(pairs)
        shape = list(x.shape[:lead]) + [size + before + after for size, (before, after)
                                         in zip(x.shape[lead:], pairs)]
        memory_format = torch.contiguous_format
        channels_last = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.ndim)
        if (channels_last is not None and not x.is_contiguous()
                and x.is_contiguous(memory_format=channels_last)):
            memory_format = channels_last
        padded = torch.empty(shape, dtype=x.dtype, device=x.device,
                             memory_format=memory_format)
        interior = padded
        for axis, (before, after) in enumerate(pairs, lead):
            if before:
                padded.narrow(axis, 0, before).fill_(value)
            if after:
                padded.narrow(axis, shape[axis] - after, after).fill_(value)
            interior = interior.narrow(axis, before, x.shape[axis])
        interior.copy_(x)
        ctx.pairs, ctx.sizes = pairs, x.shape[lead:]
        return padded

    @staticmethod
    def backward(ctx, grad):
        lead = grad.ndim - len(ctx.pairs)
        for axis, ((before, _), size) in enumerate(zip(ctx.pairs, ctx.sizes), lead):
            grad = grad.narrow(axis, before, size)
        return grad, None, None


def _constant_pad(x, pairs, value=0.):
    """`x` with its last `len(pairs)` axes padded by `(before, after)` pairs of `value`.

    Under `torch.export` (sizes may be symbolic) it is `F.pad`, which exports as one op."""
    if graph.exporting():
        return F.pad(x, _flat_pads(pairs), value=value)
    return _ConstantPad.apply(x, tuple(tuple(pair) for pair in pairs), value)


def _apply_padding(x, pads, value=0.):
    """Returns `(x, torch_padding)`: symmetric pads are left to the torch op as
    `torch_padding`; asymmetric ones, and symbolic ones (under `torch.export`, where asking
    whether they are symmetric would fix the input size), are applied to the channels-first
    `x` with `F.pad`."""
    if all(type(before) is int and before == after for before, after in pads):
        return x, tuple(before for before, _ in pads)
    return _constant_pad(x, pads, value), (0,) * len(pads)


def _flat_pads(pads):
    """`(before, after)` pairs of the trailing axes in `F.pad` order (last axis first)."""
    return [p for pair in reversed(pads) for p in pair]
