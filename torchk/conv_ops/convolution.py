"""Convolutions: `conv1d`, `conv2d`, `conv3d`, their transposes (`deconv2d`), separable and
depthwise convolutions, and the unshared-weights `local_conv1d`, `local_conv2d` (the
conventions are the package's, `torchk.conv_ops`).
"""
import math

import torch
import torch.nn.functional as F

from .. import graph
from .. import validation
from .. import variables
from ..graph import op
from .layout import (_PADDINGS, _apply_padding, _check_choice, _check_equal, _check_rank,
                     _data_format, _flat_pads, _from_channels_first, _keras1_alias,
                     _normalize_tuple, _same_padding, _spatial_pads, _tensor, _to_channels_first,
                     _torch_kernel)

__all__ = [
    'conv1d', 'conv2d', 'conv2d_transpose', 'conv3d', 'conv3d_transpose', 'deconv2d',
    'depthwise_conv2d', 'local_conv1d', 'local_conv2d', 'separable_conv1d', 'separable_conv2d',
]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {2: F.conv_transpose2d, 3: F.conv_transpose3d}


# ---------------------------------------------------------------------------------------------
# Shared implementations (channels-first, torch kernels)

def _convolve(x, weight, strides, padding, dilations, groups=1, bias=None, activation=None,
              packed_weights=None):
    """Convolution of the channels-first `x` with the torch `weight` (plus the 1D `bias` per
    output channel, if given), TF padding rules.

    `activation` (`('relu', ())` or `('hardtanh', (low, high))`) is applied to the result.
    For float32 (and native bfloat16) CPU tensors outside autograd (inference programs,
    `folding.py`), oneDNN applies it as a post-op of the convolution, in the same pass;
    `packed_weights`, a dict owned by the caller (to be emptied when `weight` changes), then
    keeps a 2D or 3D convolution's `weight` reordered into oneDNN's blocked layout per input
    shape, which saves the reorder on every call.
    Elsewhere the activation is a separate op."""
    rank = x.ndim - 2
    pads = _spatial_pads(x.shape[2:], weight.shape[2:], strides, dilations, padding)
    x, torch_padding = _apply_padding(x, pads)
    if _slow_in_bfloat16(x, weight, strides, groups):
        y = _CONV[rank](x.float(), weight.float(), None if bias is None else bias.float(),
                        strides, torch_padding, dilations, groups).to(x.dtype)
        return _activated(y, activation)
    if activation is None and packed_weights is None:
        return _CONV[rank](x, weight, bias, strides, torch_padding, dilations, groups)
    name, scalars = activation or ('none', ())
    if (x.device.type == 'cpu' and x.dtype == weight.dtype and _mkldnn_computes(x.dtype)
            and not torch.is_grad_enabled()):
        arguments = list(torch_padding), list(strides), list(dilations), groups
        if packed_weights is not None and rank > 1:
            key = tuple(x.shape)
            if key not in packed_weights:
                packed_weights[key] = torch.ops.mkldnn._reorder_convolution_weight(
                    weight, *arguments, list(x.shape))
            weight = packed_weights[key]
        return torch.ops.mkldnn._convolution_pointwise(x, weight, bias, *arguments, name,
                                                       list(scalars), '')
    return _activated(_CONV[rank](x, weight, bias, strides, torch_padding, dilations, groups),
                      activation)


def _activated(y, activation):
    """`y` with `activation` (None, `('relu', ())` or `('hardtanh', (low, high))`) applied."""
    if activation is None or activation[0] == 'none':
        return y
    name, scalars = activation
    return torch.relu(y) if name == 'relu' else F.hardtanh(y, *scalars)


def _slow_in_bfloat16(x, weight, strides, groups):
    """Whether the convolution of bfloat16 CPU tensors is one whose backward oneDNN computes
    much slower than float32's: a grouped (depthwise) convolution with a stride, the
    gradient of its input. Measured (2 threads, AVX512-BF16 and AMX; MobileNetV2's depthwise
    3x3 stride 2, 96 channels at 49x49, batch 32): 58 ms in bfloat16, 8 ms in float32, while
    the stride-1 ones and ungrouped convolutions are faster in bfloat16. Such a
    convolution computes in float32 when a gradient may follow."""
    return (x.dtype == torch.bfloat16 and x.device.type == 'cpu' and groups > 1
            and any(s > 1 for s in strides) and torch.is_grad_enabled()
            and (x.requires_grad or weight.requires_grad))


def _mkldnn_computes(dtype):
    """Whether oneDNN runs CPU convolutions of `dtype` with post-ops: float32, and bfloat16
    on a CPU with AVX512-BF16 or AMX."""
    if not torch.backends.mkldnn.is_available():
        return False
    return dtype == torch.float32 or (dtype == torch.bfloat16 and
                                      torch.ops.mkldnn._is_mkldnn_bf16_supported())


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


# ---------------------------------------------------------------------------------------------
# Convolutions

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
