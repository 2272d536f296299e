"""`bias_add`, and the convolutions that add their bias themselves.

When `bias_add` gets the result of a recorded `conv1d`/`conv2d`/`conv3d` and a matching 1D
channel bias in the same data format, it records one `_biased_conv` node instead: the
convolution with its `bias` argument (record-time folding, docs/ARCHITECTURE.md "CPU
convolutions"). `convolution_parts`, `is_depthwise` and `fused_convolution` take recorded
convolutions apart and compute them with a bias and an activation, for the inference folding
pass (`torchk/passes/folding.py`).
"""
import functools
import inspect

import torch

from .. import graph
from .. import math_ops
from ..graph import op
from .layout import _check_equal, _data_format, _tensor
from .convolution import _depthwise_conv2d, _keras_conv, conv1d, conv2d, conv3d, depthwise_conv2d

__all__ = ['bias_add']

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
    the convolution itself (see `_biased_conv`), and one added to a recorded dense product by
    the product (`math_ops._folded_dense_bias_add`)."""
    @functools.wraps(bias_add_op)
    def bias_add(x, bias, data_format=None):
        folded = _folded_bias_add(x, bias, data_format)
        if folded is None:
            folded = math_ops._folded_dense_bias_add(x, bias, data_format)
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


def convolution_parts(node):
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


def is_depthwise(conv):
    """True if `conv` (from `convolution_parts`) is the depthwise convolution, whose output
    channel `c * depth_multiplier + m` comes from `kernel[..., c, m]`."""
    return conv is depthwise_conv2d.__wrapped__


def fused_convolution(conv, x, kernel, options, bias=None, activation=None,
                      packed_weights=None):
    """`conv(x, kernel, **options)` (from `convolution_parts`) plus a 1D `bias` per output
    channel and an `activation` (`('relu', ())` or `('hardtanh', (low, high))`), both computed
    by the torch convolution itself; `packed_weights`: a dict for the kernel reordered for
    oneDNN, to be emptied by the caller when the kernel changes (see `_convolve`)."""
    if is_depthwise(conv):
        return _depthwise_conv2d(x, kernel, bias=bias, activation=activation,
                                 packed_weights=packed_weights, **options)
    return _keras_conv(_FUSABLE_RANKS[conv], x, kernel, bias=bias, activation=activation,
                       packed_weights=packed_weights, **options)
