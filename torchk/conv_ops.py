"""Convolution, pooling, padding and resizing ops of the Keras 2.3.1 backend API.

Each op follows the TensorFlow backend's conventions on top of `torch.nn.functional`:

- Tensors keep Keras layouts at the API. `channels_last` inputs are permuted to
  channels-first *views* (no copy): for a contiguous NHWC tensor that view is exactly torch's
  `channels_last` memory format, which cuDNN consumes natively, so the layout is free on CUDA.
- Kernels keep Keras layouts whatever the data format: convolution `(*spatial, in, out)`,
  depthwise `(*spatial, in, depth_multiplier)`, separable pointwise `(1, ..., in * dm, out)`,
  transposed convolution `(*spatial, out, in)`.
- `'same'` padding is TensorFlow's: `ceil(size / stride)` outputs, with the odd padded cell at
  the end, for any stride and dilation. Symmetric pads go to the torch op; asymmetric ones are
  applied first, writing only the border cells and the input (`_ConstantPad`). Average pooling
  with `'same'` excludes padded cells from the mean.

The Keras 1 names and keywords from the Keras 1 documentation are accepted too:
`deconv2d`, `asymmetric_temporal_padding`, `asymmetric_spatial_2d_padding`, and the
keywords `border_mode` (for `padding`) and `dim_ordering` (`'th'`, `'tf'` or `'default'`, for
`data_format`) where the Keras 1 signature had them. Kernels always use the Keras 2 layouts.
"""
import functools
import inspect
import math
import operator

import torch
import torch.nn.functional as F

from . import config
from . import dtypes
from . import graph
from . import validation
from . import variables
from .graph import op

__all__ = [
    'asymmetric_spatial_2d_padding', 'asymmetric_temporal_padding', 'bias_add', 'conv1d',
    'conv2d', 'conv2d_transpose', 'conv3d', 'conv3d_transpose', 'deconv2d',
    'depthwise_conv2d', 'local_conv1d', 'local_conv2d', 'pool2d', 'pool3d', 'resize_images',
    'resize_volumes', 'separable_conv1d', 'separable_conv2d', 'spatial_2d_padding',
    'spatial_3d_padding', 'temporal_padding',
]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {2: F.avg_pool2d, 3: F.avg_pool3d}
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


def _lay_out_kernels(arguments):
    """`on_record` of the convolutions: a kernel variable recorded into its first op is laid
    out in memory as the torch weight whose gradient the backends compute, so that neither
    the convolution nor the optimizer's update copies it: `(out, *spatial, in)` for a 2D or
    3D convolution of channels-last data (channels-last weights), `(out, in, *spatial)`
    otherwise, `(channels, multiplier, *spatial)` for a depthwise kernel."""
    data_format = _data_format(arguments.get('data_format'), arguments.get('dim_ordering'))
    for name in ('kernel', 'depthwise_kernel', 'pointwise_kernel'):
        kernel = arguments.get(name)
        if not isinstance(kernel, variables.Variable) or kernel.ndim < 3:
            continue
        last, spatial = kernel.ndim - 1, list(range(kernel.ndim - 2))
        if name == 'depthwise_kernel':
            order = [last - 1, last] + spatial
        elif data_format == 'channels_last' and kernel.ndim in (4, 5):
            order = [last] + spatial + [last - 1]
        else:
            order = [last, last - 1] + spatial
        variables.lay_out(kernel, order)


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


# ---------------------------------------------------------------------------------------------
# Shared implementations (channels-first, torch kernels)

def _convolve(x, weight, strides, padding, dilations, groups=1, bias=None, activation=None,
              packed_weights=None):
    """Convolution of the channels-first `x` with the torch `weight` (plus the 1D `bias` per
    output channel, if given), TF padding rules.

    `activation` (`('relu', ())` or `('hardtanh', (low, high))`) is applied to the result.
    For float32 CPU tensors outside autograd (inference programs, `folding.py`), oneDNN
    applies it as a post-op of the convolution, in the same pass; `packed_weights`, a dict
    owned by the caller (to be emptied when `weight` changes), then keeps a 2D or 3D
    convolution's `weight` reordered into oneDNN's blocked layout per input shape, which
    saves the reorder on every call.
    Elsewhere the activation is a separate op."""
    rank = x.ndim - 2
    pads = _spatial_pads(x.shape[2:], weight.shape[2:], strides, dilations, padding)
    x, torch_padding = _apply_padding(x, pads)
    if activation is None and packed_weights is None:
        return _CONV[rank](x, weight, bias, strides, torch_padding, dilations, groups)
    name, scalars = activation or ('none', ())
    if (x.device.type == 'cpu' and x.dtype == weight.dtype == torch.float32
            and torch.backends.mkldnn.is_available() and not torch.is_grad_enabled()):
        arguments = list(torch_padding), list(strides), list(dilations), groups
        if packed_weights is not None and rank > 1:
            key = tuple(x.shape)
            if key not in packed_weights:
                packed_weights[key] = torch.ops.mkldnn._reorder_convolution_weight(
                    weight, *arguments, list(x.shape))
            weight = packed_weights[key]
        return torch.ops.mkldnn._convolution_pointwise(x, weight, bias, *arguments, name,
                                                       list(scalars), '')
    y = _CONV[rank](x, weight, bias, strides, torch_padding, dilations, groups)
    if name == 'none':
        return y
    return torch.relu(y) if name == 'relu' else F.hardtanh(y, *scalars)


def _conv_arguments(name, rank, x, strides, padding, data_format, dilation_rate,
                    paddings=_PADDINGS):
    """Checks the arguments every convolution shares; returns `(x_cf, strides, dilations)`
    with `x_cf` the channels-first view of `x`."""
    _check_choice(padding, paddings, 'padding', name)
    strides = _normalize_tuple(strides, rank, 'strides')
    dilation_rate = _normalize_tuple(dilation_rate, rank, 'dilation_rate')
    return _to_channels_first(_tensor(x), data_format, rank, name), strides, dilation_rate


def _kernel_details(kernel, layout, data_format):
    return lambda: 'kernel shape %s %s, data_format %r' % (tuple(kernel.shape), layout,
                                                           data_format)


def _groups(name, channels, kernel, data_format):
    """The groups of a convolution, as TensorFlow infers them: the input channels are a
    multiple of the kernel's, `(*spatial, channels / groups, filters)`, and each of the
    `groups` slices of consecutive input channels makes `filters / groups` outputs."""
    kernel_channels, filters = kernel.shape[-2], kernel.shape[-1]
    if kernel_channels == channels:
        return 1
    if kernel_channels and channels % kernel_channels == 0 \
            and filters % (channels // kernel_channels) == 0:
        return channels // kernel_channels
    details = _kernel_details(kernel, '(*spatial, in / groups, out)', data_format)
    _check_equal(name, 'input channels', channels, "the kernel's input channels",
                 kernel_channels, lambda: 'or that times a number of groups dividing the '
                 "kernel's output channels; " + details())


def _conv(name, rank, x, kernel, strides, padding, data_format, dilation_rate,
          paddings=_PADDINGS, bias=None, activation=None, packed_weights=None):
    x_cf, strides, dilation_rate = _conv_arguments(name, rank, x, strides, padding,
                                                   data_format, dilation_rate, paddings)
    kernel = _tensor(kernel)
    _check_rank(kernel, rank + 2, name, 'kernel')
    groups = _groups(name, x_cf.shape[1], kernel, data_format)
    validation.check_window_fits(name, 'kernel', x_cf.shape[2:], kernel.shape[:-2],
                                 dilation_rate, padding)
    y = _convolve(x_cf, _torch_kernel(kernel), strides, padding, dilation_rate, groups=groups,
                  bias=None if bias is None else _tensor(bias), activation=activation,
                  packed_weights=packed_weights)
    return _from_channels_first(y, data_format)


def _keras_conv(rank, x, kernel, strides, padding, data_format, dilation_rate, border_mode=None,
                dim_ordering=None, bias=None, activation=None, packed_weights=None):
    """`conv1d`, `conv2d` or `conv3d` (by `rank`), Keras 1 keywords resolved; a 1D `bias` per
    output channel is added, and `activation` applied, by the torch convolution itself
    (`packed_weights` as for `_convolve`)."""
    padding = _keras1_alias(padding, 'valid', border_mode, 'padding', 'border_mode')
    return _conv('conv%dd' % rank, rank, x, kernel, strides, padding,
                 _data_format(data_format, dim_ordering), dilation_rate,
                 paddings=_PADDINGS + ('causal',) if rank == 1 else _PADDINGS, bias=bias,
                 activation=activation, packed_weights=packed_weights)


def _depthwise(name, x_cf, depthwise_kernel, strides, padding, dilation_rate, data_format,
               bias=None, activation=None, packed_weights=None):
    """Depthwise convolution of the channels-first `x_cf`; kernel `(*spatial, in, dm)`; a 1D
    `bias` per output channel, an `activation` and `packed_weights` as for `_convolve`."""
    rank = x_cf.ndim - 2
    depthwise_kernel = _tensor(depthwise_kernel)
    _check_rank(depthwise_kernel, rank + 2, name, 'depthwise_kernel')
    channels, multiplier = depthwise_kernel.shape[-2:]
    _check_equal(name, 'input channels', x_cf.shape[1], "the depthwise kernel's input channels",
                 channels, _kernel_details(depthwise_kernel, '(*spatial, in, depth_multiplier)',
                                           data_format))
    validation.check_window_fits(name, 'depthwise_kernel', x_cf.shape[2:],
                                 depthwise_kernel.shape[:-2], dilation_rate, padding)
    weight = depthwise_kernel.reshape(*depthwise_kernel.shape[:-2], 1, channels * multiplier)
    return _convolve(x_cf, _torch_kernel(weight), strides, padding, dilation_rate,
                     groups=channels, bias=None if bias is None else _tensor(bias),
                     activation=activation, packed_weights=packed_weights)


def _separable(name, rank, x, depthwise_kernel, pointwise_kernel, strides, padding,
               data_format, dilation_rate):
    x_cf, strides, dilation_rate = _conv_arguments(
        name, rank, x, strides, padding, data_format, dilation_rate,
        paddings=_PADDINGS + ('causal',) if rank == 1 else _PADDINGS)
    y = _depthwise(name, x_cf, depthwise_kernel, strides, padding, dilation_rate, data_format)
    pointwise_kernel = _tensor(pointwise_kernel)
    _check_rank(pointwise_kernel, rank + 2, name, 'pointwise_kernel')
    if tuple(pointwise_kernel.shape[:-2]) != (1,) * rank:
        raise ValueError('%s: the pointwise kernel must have spatial size %s; got shape %s.'
                         % (name, (1,) * rank, tuple(pointwise_kernel.shape)))
    _check_equal(name, "the pointwise kernel's input channels", pointwise_kernel.shape[-2],
                 'input channels * depth_multiplier', y.shape[1],
                 lambda: 'pointwise kernel shape %s' % (tuple(pointwise_kernel.shape),))
    y = _CONV[rank](y, _torch_kernel(pointwise_kernel))
    return _from_channels_first(y, data_format)


def _output_sizes(output_shape, rank, data_format, name):
    """The spatial sizes and channel count (None if not given) of a transposed convolution's
    `output_shape`, whose entries may be ints, None or integer 0-d tensors."""
    output_shape = list(output_shape)
    if len(output_shape) != rank + 2:
        raise ValueError('%s expects an output_shape of %d entries; got %r.'
                         % (name, rank + 2, output_shape))
    if data_format == 'channels_first':
        channels, spatial = output_shape[1], output_shape[2:]
    else:
        channels, spatial = output_shape[-1], output_shape[1:-1]
    try:
        sizes = [graph.size_value(size) for size in spatial]
        channels = None if channels is None else graph.size_value(channels)
    except TypeError:
        raise ValueError('%s needs integer spatial sizes and channels in output_shape; got %r.'
                         % (name, output_shape)) from None
    return sizes, channels


def _conv_transpose(name, rank, x, kernel, output_shape, strides, padding, data_format,
                    dilation_rate):
    """Transposed convolution: the gradient of `conv` with respect to an input whose shape
    is `output_shape`, as `tf.nn.conv*_transpose` computes it."""
    x_cf, strides, dilation_rate = _conv_arguments(name, rank, x, strides, padding,
                                                   data_format, dilation_rate)
    kernel = _tensor(kernel)
    _check_rank(kernel, rank + 2, name, 'kernel')
    sizes, channels = _output_sizes(output_shape, rank, data_format, name)
    details = _kernel_details(kernel, '(*spatial, out, in)', data_format)
    _check_equal(name, 'input channels', x_cf.shape[1], "the kernel's input channels",
                 kernel.shape[-1], details)
    if channels is not None:
        _check_equal(name, 'output_shape channels', channels, "the kernel's output channels",
                     kernel.shape[-2], details)
    torch_padding, output_padding, crops = [], [], []
    for axis, (out, n, k, s, d) in enumerate(zip(sizes, x_cf.shape[2:], kernel.shape[:-2],
                                                  strides, dilation_rate)):
        before, after = _same_padding(out, k, s, d) if padding == 'same' else (0, 0)
        expected = (out + before + after - (k - 1) * d - 1) // s + 1
        if expected != n:
            raise ValueError('%s: output_shape %r does not match the input: a %r convolution '
                             'of spatial axis %d with size %d gives %d cells, not %d.'
                             % (name, list(output_shape), padding, axis, out, expected, n))
        # The full transposed result has (n - 1) * s + (k - 1) * d + 1 cells and the output
        # starts `before` cells in. Torch crops `before` cells at both ends and then appends
        # `output_padding` cells; a negative remainder is cropped from the end afterwards.
        extra = out - ((n - 1) * s + (k - 1) * d + 1 - 2 * before)
        torch_padding.append(before)
        output_padding.append(torch.sym_max(extra, 0))
        crops.append((0, torch.sym_min(extra, 0)))
    if all(type(size) is int for size in torch_padding + output_padding):
        y = _CONV_TRANSPOSE[rank](x_cf, _torch_kernel(kernel), None, strides, torch_padding,
                                  output_padding, 1, dilation_rate)
        if any(crop for _, crop in crops):
            y = F.pad(y, _flat_pads(crops))
    else:
        # Symbolic sizes (torch.export): ONNX takes output_padding as a constant, so the
        # full result is computed and `out` cells taken from `before` on (a negative pad
        # crops, a positive one appends the zero cells the full result lacks).
        y = _CONV_TRANSPOSE[rank](x_cf, _torch_kernel(kernel), None, strides, 0, 0, 1,
                                  dilation_rate)
        y = F.pad(y, _flat_pads([(-before, out - (full - before)) for before, out, full in
                                 zip(torch_padding, sizes, y.shape[2:])]))
    return _from_channels_first(y, data_format)


def _pool(name, rank, x, pool_size, strides, padding, data_format, pool_mode):
    _check_choice(padding, _PADDINGS, 'padding', name)
    _check_choice(pool_mode, ('max', 'avg'), 'pool_mode', name)
    pool_size = _normalize_tuple(pool_size, rank, 'pool_size')
    strides = _normalize_tuple(strides, rank, 'strides')
    x_cf = _to_channels_first(_tensor(x), data_format, rank, name)
    validation.check_window_fits(name, 'pool_size', x_cf.shape[2:], pool_size, (1,) * rank,
                                 padding)
    pads = _spatial_pads(x_cf.shape[2:], pool_size, strides, (1,) * rank, padding)
    if pool_mode == 'max':
        padded, torch_padding = _apply_padding(x_cf, pads, value=-math.inf)
        y = _MAX_POOL[rank](padded, pool_size, strides, torch_padding)
    elif all(type(before) is int and before == after for before, after in pads):
        y = _AVG_POOL[rank](x_cf, pool_size, strides, [p for p, _ in pads],
                            count_include_pad=False)
    else:
        # Mean over the real cells only: pooled sums of x over pooled counts of real cells.
        flat = _flat_pads(pads)
        ones = x_cf.new_ones((1, 1) + tuple(x_cf.shape[2:]))
        y = (_AVG_POOL[rank](F.pad(x_cf, flat), pool_size, strides)
             / _AVG_POOL[rank](F.pad(ones, flat), pool_size, strides))
    return _from_channels_first(y, data_format)


def _local_conv(name, x_cf, kernel, kernel_size, strides, data_format):
    """Unshared-weights convolution of the channels-first `x_cf`; returns `data_format`.

    `kernel` is `(output_positions, feature_dim, filters)`, the features of a patch
    flattened as Keras' TF backend slices them: `(*kernel_size, channels)` for channels_last
    inputs, `(channels, *kernel_size)` for channels_first ones.
    """
    rank = x_cf.ndim - 2
    kernel = _tensor(kernel)
    _check_rank(kernel, 3, name, 'kernel (output_positions, feature_dim, filters)')
    validation.check_window_fits(name, 'kernel_size', x_cf.shape[2:], kernel_size, (1,) * rank,
                                 'valid')
    patches = x_cf
    for axis, (k, s) in enumerate(zip(kernel_size, strides)):
        patches = patches.unfold(axis + 2, k, s)
    # patches: (batch, channels, *output_sizes, *kernel_size)
    output_sizes = tuple(patches.shape[2:2 + rank])
    positions = math.prod(output_sizes)
    _check_equal(name, 'kernel.shape[0]', kernel.shape[0], 'the output positions', positions,
                 lambda: 'output size %s' % (output_sizes,))
    _check_equal(name, 'kernel.shape[1]', kernel.shape[1], 'the patch features',
                 x_cf.shape[1] * math.prod(kernel_size),
                 lambda: 'kernel_size %s with %d input channels'
                 % (tuple(kernel_size), x_cf.shape[1]))
    spatial = range(2, 2 + rank)
    window = range(2 + rank, 2 + 2 * rank)
    if data_format == 'channels_first':
        order = (0, *spatial, 1, *window)
    else:
        order = (0, *spatial, *window, 1)
    patches = patches.permute(order).reshape(x_cf.shape[0], positions, -1)
    y = torch.einsum('bpf,pfo->bpo', patches, kernel)
    y = y.reshape(x_cf.shape[0], *output_sizes, kernel.shape[-1])
    return y if data_format == 'channels_last' else y.permute(0, rank + 1, *range(1, rank + 1))


def _pad(name, x, pairs, data_format):
    """Zero-pads the spatial axes of `x` (in `data_format`) by `(before, after)` pairs."""
    x = _tensor(x)
    _check_rank(x, len(pairs) + 2, name)
    if data_format == 'channels_last':
        pairs = list(pairs) + [(0, 0)]
    return _constant_pad(x, pairs)


def _spatial_axes(rank, data_format):
    first = 2 if data_format == 'channels_first' else 1
    return tuple(range(first, first + rank))


def _repeat_spatial(x, axes, factors):
    """Repeats every cell of `x` `factor` times along each of `axes` (nearest upsampling)."""
    view, expanded, final = [], [], []
    for axis, size in enumerate(x.shape):
        factor = factors[axes.index(axis)] if axis in axes else None
        if factor is None:
            view.append(size)
            expanded.append(size)
            final.append(size)
        else:
            view += [size, 1]
            expanded += [size, factor]
            final.append(size * factor)
    return x.reshape(view).expand(expanded).reshape(final)


def _upsample_linear(x, axis, factor):
    """Linear upsampling of one axis by an integer factor, as TF 1's `resize_bilinear`
    (align_corners=False, no half-pixel centers): output cell `i` samples input
    coordinate `i / factor`, clamped at the last cell."""
    size = x.shape[axis]
    target = torch.arange(size * factor, device=x.device)
    low = target // factor
    high = torch.clamp(low + 1, max=size - 1)
    weight_shape = [1] * x.ndim
    weight_shape[axis] = -1
    weight = ((target % factor).to(x.dtype) / factor).reshape(weight_shape)
    return torch.lerp(x.index_select(axis, low), x.index_select(axis, high), weight)


# ---------------------------------------------------------------------------------------------
# Convolutions

@op(on_record=_lay_out_kernels)
def conv1d(x, kernel, strides=1, padding='valid', data_format=None, dilation_rate=1, *,
           border_mode=None):
    """1D convolution.

    # Arguments
        x: Tensor or variable, `(batch, steps, channels)` (channels_last) or
            `(batch, channels, steps)` (channels_first).
        kernel: kernel tensor, `(kernel_size, input_channels, filters)`.
        strides: stride integer.
        padding: string, `"same"`, `"causal"` or `"valid"`. `"causal"` pads
            `dilation_rate * (kernel_size - 1)` zeros at the start of the steps.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: integer dilate rate.
        border_mode: Keras 1 name of `padding`.

    # Returns
        A tensor, result of 1D convolution.

    # Raises
        ValueError: if `padding`, `data_format`, `strides`, `dilation_rate` or a rank is
            invalid, or the channels of `x` and `kernel` differ.
    """
    return _keras_conv(1, x, kernel, strides, padding, data_format, dilation_rate, border_mode)


@op(on_record=_lay_out_kernels)
def conv2d(x, kernel, strides=(1, 1), padding='valid', data_format=None,
           dilation_rate=(1, 1), *, border_mode=None, dim_ordering=None):
    """2D convolution.

    # Arguments
        x: Tensor or variable.
        kernel: kernel tensor, `(rows, cols, input_channels, filters)`.
        strides: strides tuple (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: tuple of 2 integers (or integer).
        border_mode: Keras 1 name of `padding`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A tensor, result of 2D convolution.

    # Raises
        ValueError: if `padding`, `data_format`, `strides`, `dilation_rate` or a rank is
            invalid, or the channels of `x` and `kernel` differ.
    """
    return _keras_conv(2, x, kernel, strides, padding, data_format, dilation_rate, border_mode,
                       dim_ordering)


@op(on_record=_lay_out_kernels)
def conv3d(x, kernel, strides=(1, 1, 1), padding='valid', data_format=None,
           dilation_rate=(1, 1, 1), *, border_mode=None, dim_ordering=None):
    """3D convolution.

    # Arguments
        x: Tensor or variable.
        kernel: kernel tensor, `(dim1, dim2, dim3, input_channels, filters)`.
        strides: strides tuple (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: tuple of 3 integers (or integer).
        border_mode: Keras 1 name of `padding`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A tensor, result of 3D convolution.

    # Raises
        ValueError: if `padding`, `data_format`, `strides`, `dilation_rate` or a rank is
            invalid, or the channels of `x` and `kernel` differ.
    """
    return _keras_conv(3, x, kernel, strides, padding, data_format, dilation_rate, border_mode,
                       dim_ordering)


@op
def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding='valid',
                     data_format=None, dilation_rate=(1, 1)):
    """2D deconvolution (i.e. transposed convolution).

    # Arguments
        x: Tensor or variable.
        kernel: kernel tensor, `(rows, cols, output_channels, input_channels)`.
        output_shape: the output shape in `data_format` order: a tuple or list of ints,
            None (batch) or integer scalar tensors, or a 1D int tensor. The batch entry
            is taken from `x`.
        strides: strides tuple (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: tuple of 2 integers (or integer).

    # Returns
        A tensor, result of transposed 2D convolution.

    # Raises
        ValueError: if an argument or a rank is invalid, or `output_shape` is not a size
            that a `padding` convolution with these strides maps onto the shape of `x`.
    """
    return _conv_transpose('conv2d_transpose', 2, x, kernel, output_shape, strides, padding,
                           _data_format(data_format), dilation_rate)


@op
def conv3d_transpose(x, kernel, output_shape, strides=(1, 1, 1), padding='valid',
                     data_format=None):
    """3D deconvolution (i.e. transposed convolution).

    # Arguments
        x: input tensor.
        kernel: kernel tensor, `(dim1, dim2, dim3, output_channels, input_channels)`.
        output_shape: the output shape in `data_format` order (see `conv2d_transpose`).
        strides: strides tuple (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.

    # Returns
        A tensor, result of transposed 3D convolution.

    # Raises
        ValueError: if an argument or a rank is invalid, or `output_shape` is not a size
            that a `padding` convolution with these strides maps onto the shape of `x`.
    """
    return _conv_transpose('conv3d_transpose', 3, x, kernel, output_shape, strides, padding,
                           _data_format(data_format), (1, 1, 1))


@op
def deconv2d(x, kernel, output_shape, strides=(1, 1), border_mode='valid',
             dim_ordering='default', image_shape=None, filter_shape=None):
    """Keras 1 name of `conv2d_transpose`.

    # Arguments
        x: input tensor.
        kernel: kernel tensor, `(rows, cols, output_channels, input_channels)`.
        output_shape: the output shape in `dim_ordering` order.
        strides: strides tuple.
        border_mode: string, `"same"` or `"valid"`.
        dim_ordering: `'tf'`, `'th'` or `'default'` (the configured data format).
        image_shape: Keras 1 static-shape hint; not needed, ignored.
        filter_shape: Keras 1 static-shape hint; not needed, ignored.

    # Returns
        A tensor, result of transposed 2D convolution.

    # Raises
        ValueError: as `conv2d_transpose`.
    """
    return _conv_transpose('deconv2d', 2, x, kernel, output_shape, strides, border_mode,
                           _data_format(None, dim_ordering), (1, 1))


@op(on_record=_lay_out_kernels)
def separable_conv1d(x, depthwise_kernel, pointwise_kernel, strides=1, padding='valid',
                     data_format=None, dilation_rate=1):
    """1D convolution with separable filters.

    # Arguments
        x: input tensor.
        depthwise_kernel: convolution kernel for the depthwise convolution,
            `(kernel_size, input_channels, depth_multiplier)`.
        pointwise_kernel: kernel for the 1x1 convolution,
            `(1, input_channels * depth_multiplier, filters)`.
        strides: stride integer (of the depthwise convolution).
        padding: string, `"same"`, `"causal"` or `"valid"`. `"causal"` pads
            `dilation_rate * (kernel_size - 1)` zeros at the start of the steps.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: integer dilation rate (of the depthwise convolution).

    # Returns
        Output tensor.

    # Raises
        ValueError: if an argument, a rank or a kernel's channel count is invalid.
    """
    return _separable('separable_conv1d', 1, x, depthwise_kernel, pointwise_kernel, strides,
                      padding, _data_format(data_format), dilation_rate)


@op(on_record=_lay_out_kernels)
def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding='valid',
                     data_format=None, dilation_rate=(1, 1)):
    """2D convolution with separable filters.

    # Arguments
        x: input tensor.
        depthwise_kernel: convolution kernel for the depthwise convolution,
            `(rows, cols, input_channels, depth_multiplier)`.
        pointwise_kernel: kernel for the 1x1 convolution,
            `(1, 1, input_channels * depth_multiplier, filters)`.
        strides: strides tuple (of the depthwise convolution).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: tuple of integers, dilation rates of the depthwise convolution.

    # Returns
        Output tensor.

    # Raises
        ValueError: if an argument, a rank or a kernel's channel count is invalid.
    """
    return _separable('separable_conv2d', 2, x, depthwise_kernel, pointwise_kernel, strides,
                      padding, _data_format(data_format), dilation_rate)


@op(on_record=_lay_out_kernels)
def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding='valid', data_format=None,
                     dilation_rate=(1, 1)):
    """2D depthwise convolution: each input channel convolved with its own filters.

    Output channel `c * depth_multiplier + m` is input channel `c` convolved with
    `depthwise_kernel[:, :, c, m]`, as in TensorFlow.

    # Arguments
        x: input tensor.
        depthwise_kernel: convolution kernel for the depthwise convolution,
            `(rows, cols, input_channels, depth_multiplier)`.
        strides: strides tuple (length 2).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        dilation_rate: tuple of integers, dilation rates of the convolution.

    # Returns
        Output tensor with `input_channels * depth_multiplier` channels.

    # Raises
        ValueError: if an argument, a rank or the kernel's channel count is invalid.
    """
    return _depthwise_conv2d(x, depthwise_kernel, strides, padding, data_format, dilation_rate)


def _depthwise_conv2d(x, depthwise_kernel, strides, padding, data_format, dilation_rate,
                      bias=None, activation=None, packed_weights=None):
    """`depthwise_conv2d`, with a 1D `bias` per output channel and an `activation` computed
    by the torch convolution itself (`packed_weights`: see `_convolve`)."""
    name = 'depthwise_conv2d'
    data_format = _data_format(data_format)
    x_cf, strides, dilation_rate = _conv_arguments(name, 2, x, strides, padding, data_format,
                                                   dilation_rate)
    y = _depthwise(name, x_cf, depthwise_kernel, strides, padding, dilation_rate, data_format,
                   bias=bias, activation=activation, packed_weights=packed_weights)
    return _from_channels_first(y, data_format)


@op
def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    """Apply 1D conv with un-shared weights.

    As in Keras' TF backend, `inputs` are always channels_last (`LocallyConnected1D` passes
    no data format); `data_format` is only checked.

    # Arguments
        inputs: 3D tensor with shape `(batch_size, steps, input_dim)`.
        kernel: the unshared weight for convolution,
            with shape `(output_length, kernel_size * input_dim, filters)`.
        kernel_size: a tuple of a single integer, the length of the 1D convolution window.
        strides: a tuple of a single integer, the stride length of the convolution.
        data_format: the data format, channels_first or channels_last.

    # Returns
        The tensor after 1d conv with un-shared weights,
        with shape `(batch_size, output_length, filters)`.

    # Raises
        ValueError: if an argument is invalid or the kernel's shape does not match.
    """
    _data_format(data_format)
    name = 'local_conv1d'
    kernel_size = _normalize_tuple(kernel_size, 1, 'kernel_size')
    strides = _normalize_tuple(strides, 1, 'strides')
    x_cf = _to_channels_first(_tensor(inputs), 'channels_last', 1, name)
    return _local_conv(name, x_cf, kernel, kernel_size, strides, 'channels_last')


@op
def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    """Apply 2D conv with un-shared weights.

    # Arguments
        inputs: 4D tensor with shape `(batch_size, filters, new_rows, new_cols)` if
            data_format='channels_first' or `(batch_size, new_rows, new_cols, filters)` if
            data_format='channels_last'.
        kernel: the unshared weight for convolution, with shape
            `(output_rows * output_cols, feature_dim, filters)`; a patch's features are
            ordered `(rows, cols, channels)` for channels_last and `(channels, rows, cols)`
            for channels_first, as Keras' TF backend flattens them.
        kernel_size: a tuple of 2 integers, the height and width of the 2D window.
        strides: a tuple of 2 integers, the strides along the height and width.
        output_shape: a tuple with `(output_row, output_col)`.
        data_format: the data format, channels_first or channels_last.

    # Returns
        A 4D tensor with shape `(batch_size, filters, new_rows, new_cols)` if
        data_format='channels_first' or `(batch_size, new_rows, new_cols, filters)` if
        data_format='channels_last'.

    # Raises
        ValueError: if an argument is invalid or `kernel` or `output_shape` does not match.
    """
    name = 'local_conv2d'
    data_format = _data_format(data_format)
    kernel_size = _normalize_tuple(kernel_size, 2, 'kernel_size')
    strides = _normalize_tuple(strides, 2, 'strides')
    output_shape = _normalize_tuple(output_shape, 2, 'output_shape')
    x_cf = _to_channels_first(_tensor(inputs), data_format, 2, name)
    y = _local_conv(name, x_cf, kernel, kernel_size, strides, data_format)
    got = tuple(y.shape[2:] if data_format == 'channels_first' else y.shape[1:3])
    if got != output_shape:
        raise ValueError('local_conv2d: output_shape %s does not match the %s output positions '
                         'of the input.' % (output_shape, got))
    return y


# ---------------------------------------------------------------------------------------------
# Pooling

@op
def pool2d(x, pool_size, strides=(1, 1), padding='valid', data_format=None, pool_mode='max',
           *, border_mode=None, dim_ordering=None):
    """2D Pooling.

    Average pooling with `"same"` padding averages the real cells of each window only.

    # Arguments
        x: Tensor or variable.
        pool_size: tuple of 2 integers (or integer).
        strides: tuple of 2 integers (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        pool_mode: string, `"max"` or `"avg"`.
        border_mode: Keras 1 name of `padding`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A tensor, result of 2D pooling.

    # Raises
        ValueError: if `padding`, `data_format`, `pool_mode`, `pool_size`, `strides` or
            the rank of `x` is invalid.
    """
    padding = _keras1_alias(padding, 'valid', border_mode, 'padding', 'border_mode')
    return _pool('pool2d', 2, x, pool_size, strides, padding,
                 _data_format(data_format, dim_ordering), pool_mode)


@op
def pool3d(x, pool_size, strides=(1, 1, 1), padding='valid', data_format=None,
           pool_mode='max', *, border_mode=None, dim_ordering=None):
    """3D Pooling.

    Average pooling with `"same"` padding averages the real cells of each window only.

    # Arguments
        x: Tensor or variable.
        pool_size: tuple of 3 integers (or integer).
        strides: tuple of 3 integers (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        pool_mode: string, `"max"` or `"avg"`.
        border_mode: Keras 1 name of `padding`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A tensor, result of 3D pooling.

    # Raises
        ValueError: if `padding`, `data_format`, `pool_mode`, `pool_size`, `strides` or
            the rank of `x` is invalid.
    """
    padding = _keras1_alias(padding, 'valid', border_mode, 'padding', 'border_mode')
    return _pool('pool3d', 3, x, pool_size, strides, padding,
                 _data_format(data_format, dim_ordering), pool_mode)


# ---------------------------------------------------------------------------------------------
# Bias

_CONV_RANKS = {conv1d.__wrapped__: 1, conv2d.__wrapped__: 2, conv3d.__wrapped__: 3}


def _biased_conv(rank, bias, arguments):
    """`bias_add(conv(**arguments), bias)` as one torch convolution with a bias, where
    `conv` is `conv1d`, `conv2d` or `conv3d` by `rank` and `arguments` are all of its
    arguments by name (bound when the node is recorded: `inspect` in a traced loop body
    misleads `torch.export`).

    oneDNN adds the bias to each accumulated output and computes its gradient inside the
    convolution's backward: one pass over the output fewer each way, the same values to
    float32 rounding. Channels-last outputs stay channels-last strided views throughout.
    """
    return _keras_conv(rank, bias=bias, **arguments)


def _torch_dtype(x):
    return x._torch_dtype if isinstance(x, graph.KerasTensor) else x.dtype


def _folded_bias_add(x, bias, data_format):
    """Records `bias_add(x, bias, data_format)` as one `_biased_conv` node when `x` is the
    result of a recorded `conv1d`/`conv2d`/`conv3d` in the same data format and `bias` is a
    matching 1D vector of the same dtype; returns None otherwise."""
    node = x.node if isinstance(x, graph.KerasTensor) else None
    bias = graph.read_variable(bias)
    if (node is None or x.path != () or node.fn not in _CONV_RANKS or x.ndim is None
            or not isinstance(bias, (graph.KerasTensor, torch.Tensor))
            or data_format not in (None, 'channels_first', 'channels_last')):
        return None
    arguments = inspect.signature(node.fn).bind(*node.args, **node.kwargs)
    arguments.apply_defaults()
    conv_format = _data_format(arguments.arguments['data_format'],
                               arguments.arguments.get('dim_ordering'))
    channels = x.shape[1 if conv_format == 'channels_first' else -1]
    if (conv_format != _data_format(data_format) or bias.ndim != 1
            or tuple(bias.shape) != (channels,) or _torch_dtype(bias) != _torch_dtype(x)):
        return None
    return graph.record(_biased_conv, (_CONV_RANKS[node.fn], bias, arguments.arguments))


def _folds_into_convolution(bias_add_op):
    """Wraps `bias_add_op` so that a bias added to a recorded convolution's result is added by
    the convolution itself (see `_biased_conv`)."""
    @functools.wraps(bias_add_op)
    def bias_add(x, bias, data_format=None):
        folded = _folded_bias_add(x, bias, data_format)
        return bias_add_op(x, bias, data_format) if folded is None else folded
    return bias_add


@_folds_into_convolution
@op
def bias_add(x, bias, data_format=None):
    """Adds a bias vector to a tensor.

    A 1D bias is added along the channel axis: axis 1 for channels_first inputs of rank 3
    to 5, else the last axis. A bias of rank `ndim(x) - 1` covers every non-batch cell; it
    is laid out as `(*spatial, channels)` and, for channels_first inputs, reshaped (not
    transposed) to `(channels, *spatial)`, exactly as Keras' TF backend does.

    # Arguments
        x: Tensor or variable.
        bias: Bias tensor to add.
        data_format: string, `"channels_last"` or `"channels_first"`.

    # Returns
        Output tensor.

    # Raises
        ValueError: if `data_format` is invalid, or the bias has neither rank 1 nor
            `ndim(x) - 1`, or its size does not match `x`.
    """
    data_format = _data_format(data_format)
    x, bias = _tensor(x), _tensor(bias)
    if x.ndim < 2:
        raise ValueError('bias_add expects an input of rank 2 or more; got shape %s.'
                         % (tuple(x.shape),))
    if bias.ndim != 1 and bias.ndim != x.ndim - 1:
        raise ValueError('bias_add: unexpected bias dimensions %d; expected 1 or %d for an '
                         'input of shape %s.' % (bias.ndim, x.ndim - 1, tuple(x.shape)))
    channels_first = data_format == 'channels_first' and 3 <= x.ndim <= 5
    if bias.ndim == 1:
        axis = 1 if channels_first else x.ndim - 1
        _check_equal('bias_add', 'bias size', bias.shape[0], 'the channels of the input',
                     x.shape[axis], lambda: 'input shape %s, data_format %r'
                     % (tuple(x.shape), data_format))
        shape = [1] * x.ndim
        shape[axis] = -1
        return x + bias.reshape(shape)
    expected = tuple(x.shape[2:]) + (x.shape[1],) if channels_first else tuple(x.shape[1:])
    if tuple(bias.shape) != expected:
        raise ValueError('bias_add: bias shape %s does not match input shape %s; expected %s '
                         '(*spatial, channels) for data_format %r.'
                         % (tuple(bias.shape), tuple(x.shape), expected, data_format))
    if channels_first:
        bias = bias.reshape(x.shape[1:])
    return x + bias


# ---------------------------------------------------------------------------------------------
# Convolutions taken apart for the inference passes (passes/folding.py)

_FUSABLE_RANKS = dict(_CONV_RANKS)
_FUSABLE_RANKS[depthwise_conv2d.__wrapped__] = 2


def _convolution_parts(node):
    """Takes apart a recorded convolution: `conv1d`, `conv2d`, `conv3d` or `depthwise_conv2d`,
    alone or with its `bias_add` (a `_biased_conv` node).

    # Returns
        `(conv, x, kernel, bias, options)`: the plain convolution function, its input, its
        kernel (Keras layout), the bias (or None) and its other arguments by name, with the
        data format resolved; None for any other node.
    """
    conv, args, kwargs, bias = node.fn, node.args, node.kwargs, None
    if conv is _biased_conv:
        rank, bias, kwargs = args
        conv = next(fn for fn, n in _CONV_RANKS.items() if n == rank)
        args = ()
    if conv not in _FUSABLE_RANKS:
        return None
    arguments = inspect.signature(conv).bind(*args, **kwargs)
    arguments.apply_defaults()
    options = dict(arguments.arguments)
    x = options.pop('x')
    kernel = options.pop('depthwise_kernel' if 'depthwise_kernel' in options else 'kernel')
    options['data_format'] = _data_format(options['data_format'],
                                          options.pop('dim_ordering', None))
    return conv, x, kernel, bias, options


def _is_depthwise(conv):
    """True if `conv` (from `_convolution_parts`) is the depthwise convolution, whose output
    channel `c * depth_multiplier + m` comes from `kernel[..., c, m]`."""
    return conv is depthwise_conv2d.__wrapped__


def _fused_convolution(conv, x, kernel, options, bias=None, activation=None,
                      packed_weights=None):
    """`conv(x, kernel, **options)` (from `_convolution_parts`) plus a 1D `bias` per output
    channel and an `activation` (`('relu', ())` or `('hardtanh', (low, high))`), both computed
    by the torch convolution itself; `packed_weights`: a dict for the kernel reordered for
    oneDNN, to be emptied by the caller when the kernel changes (see `_convolve`)."""
    if _is_depthwise(conv):
        return _depthwise_conv2d(x, kernel, bias=bias, activation=activation,
                                 packed_weights=packed_weights, **options)
    return _keras_conv(_FUSABLE_RANKS[conv], x, kernel, bias=bias, activation=activation,
                       packed_weights=packed_weights, **options)


# ---------------------------------------------------------------------------------------------
# Padding

@op
def temporal_padding(x, padding=(1, 1)):
    """Pads the middle dimension of a 3D tensor.

    # Arguments
        x: Tensor or variable.
        padding: Tuple of 2 integers, how many zeros to add at the start and end of dim 1
            (an integer pads both ends equally, the Keras 1 form).

    # Returns
        A padded 3D tensor.

    # Raises
        ValueError: if `padding` or the rank of `x` is invalid.
    """
    if isinstance(padding, (tuple, list)):
        padding = (padding,)
    return _pad('temporal_padding', x, _padding_pairs(padding, 1, 'temporal_padding'),
                'channels_last')


@op
def asymmetric_temporal_padding(x, left_pad=1, right_pad=1):
    """Keras 1: pads the middle dimension of a 3D tensor with `left_pad` and `right_pad` zeros.

    # Arguments
        x: Tensor or variable.
        left_pad: zeros added at the start of dim 1.
        right_pad: zeros added at the end of dim 1.

    # Returns
        A padded 3D tensor.

    # Raises
        ValueError: if a pad or the rank of `x` is invalid.
    """
    name = 'asymmetric_temporal_padding'
    return _pad(name, x, _padding_pairs(((left_pad, right_pad),), 1, name), 'channels_last')


@op
def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None, *, dim_ordering=None):
    """Pads the 2nd and 3rd dimensions of a 4D tensor.

    # Arguments
        x: Tensor or variable.
        padding: Tuple of 2 tuples, padding pattern `((top, bottom), (left, right))`;
            a tuple of 2 integers pads both sides of each axis equally (the Keras 1 form).
        data_format: string, `"channels_last"` or `"channels_first"`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A padded 4D tensor.

    # Raises
        ValueError: if `padding`, `data_format` or the rank of `x` is invalid.
    """
    name = 'spatial_2d_padding'
    return _pad(name, x, _padding_pairs(padding, 2, name),
                _data_format(data_format, dim_ordering))


@op
def asymmetric_spatial_2d_padding(x, top_pad=1, bottom_pad=1, left_pad=1, right_pad=1,
                                  dim_ordering='default'):
    """Keras 1: pads the rows and columns of a 4D tensor with zeros, each side on its own.

    # Arguments
        x: Tensor or variable.
        top_pad, bottom_pad: zeros added before and after the rows.
        left_pad, right_pad: zeros added before and after the columns.
        dim_ordering: `'tf'`, `'th'` or `'default'` (the configured data format).

    # Returns
        A padded 4D tensor.

    # Raises
        ValueError: if a pad, `dim_ordering` or the rank of `x` is invalid.
    """
    name = 'asymmetric_spatial_2d_padding'
    pairs = _padding_pairs(((top_pad, bottom_pad), (left_pad, right_pad)), 2, name)
    return _pad(name, x, pairs, _data_format(None, dim_ordering))


@op
def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None, *,
                       dim_ordering=None):
    """Pads 5D tensor with zeros along the depth, height, width dimensions.

    Pads these dimensions with respectively `padding[0]`, `padding[1]` and `padding[2]`
    zeros before and after. For 'channels_last' data_format the 2nd, 3rd and 4th dimensions
    are padded; for 'channels_first' the 3rd, 4th and 5th.

    # Arguments
        x: Tensor or variable.
        padding: Tuple of 3 tuples, padding pattern; a tuple of 3 integers pads both sides
            of each axis equally (the Keras 1 form).
        data_format: string, `"channels_last"` or `"channels_first"`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A padded 5D tensor.

    # Raises
        ValueError: if `padding`, `data_format` or the rank of `x` is invalid.
    """
    name = 'spatial_3d_padding'
    return _pad(name, x, _padding_pairs(padding, 3, name),
                _data_format(data_format, dim_ordering))


# ---------------------------------------------------------------------------------------------
# Resizing

@op
def resize_images(x, height_factor, width_factor, data_format, interpolation='nearest'):
    """Resizes the images contained in a 4D tensor by integer factors.

    `'bilinear'` follows TF 1's `resize_bilinear` (the one Keras 2.3.1 calls): output pixel
    `i` samples input coordinate `i / factor`, so the first pixel of each block copies an
    input pixel and the last input pixel is repeated at the edge. Integer images come back
    as floatx for `'bilinear'`.

    # Arguments
        x: Tensor or variable to resize.
        height_factor: Positive integer.
        width_factor: Positive integer.
        data_format: string, `"channels_last"` or `"channels_first"` (None: the default;
            Keras 1 `'th'`/`'tf'` are accepted).
        interpolation: A string, one of `nearest` or `bilinear`.

    # Returns
        A tensor.

    # Raises
        ValueError: if `data_format`, `interpolation`, a factor or the rank of `x` is invalid.
    """
    name = 'resize_images'
    data_format = _data_format(data_format)
    _check_choice(interpolation, ('nearest', 'bilinear'), 'interpolation', name)
    factors = _normalize_tuple((height_factor, width_factor), 2, 'height_factor, width_factor')
    x = _tensor(x)
    _check_rank(x, 4, name)
    axes = _spatial_axes(2, data_format)
    if interpolation == 'nearest':
        return _repeat_spatial(x, axes, factors)
    if not x.is_floating_point():
        x = x.to(dtypes.to_torch(config.floatx()))
    for axis, factor in zip(axes, factors):
        x = _upsample_linear(x, axis, factor)
    return x


@op
def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """Resizes the volume contained in a 5D tensor (each cell repeated by integer factors).

    # Arguments
        x: Tensor or variable to resize.
        depth_factor: Positive integer.
        height_factor: Positive integer.
        width_factor: Positive integer.
        data_format: string, `"channels_last"` or `"channels_first"` (None: the default;
            Keras 1 `'th'`/`'tf'` are accepted).

    # Returns
        A tensor.

    # Raises
        ValueError: if `data_format`, a factor or the rank of `x` is invalid.
    """
    data_format = _data_format(data_format)
    factors = _normalize_tuple((depth_factor, height_factor, width_factor), 3,
                               'depth_factor, height_factor, width_factor')
    x = _tensor(x)
    _check_rank(x, 5, 'resize_volumes')
    return _repeat_spatial(x, _spatial_axes(3, data_format), factors)
