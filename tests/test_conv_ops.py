"""Convolution, pooling, padding and resizing ops against TensorFlow's conventions.

References: Keras 2.3.1's `numpy_backend` where it follows TF (stride 1, odd windows), and
direct numpy computations written from TF's definitions everywhere else: 'same' padding
puts `ceil(size / stride)` outputs with the odd padded cell at the end; a transposed
convolution is the adjoint of the forward convolution over an input of `output_shape`.
"""
import ast
import functools
import importlib.util
import inspect
import itertools
import math
import os

import numpy as np
import pytest
import torch

from reference import numpy_backend as npb
from torchk import config
from torchk import conv_ops as C
from torchk.conv_ops import bias as conv_bias, convolution, layout
from torchk import core as K

LAST, FIRST = 'channels_last', 'channels_first'
FORMATS = (LAST, FIRST)


# ---------------------------------------------------------------------------------------------
# numpy references

def rand(*shape, seed=0, dtype='float32'):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def to_last(x, data_format):
    return x if data_format == LAST else np.moveaxis(x, 1, -1)


def from_last(y, data_format):
    return y if data_format == LAST else np.moveaxis(y, -1, 1)


def image(batch, spatial, channels, data_format, seed=0):
    """A random input of `spatial` size, laid out in `data_format`."""
    return from_last(rand(batch, *spatial, channels, seed=seed), data_format).copy()


def tf_pads(sizes, kernel_sizes, strides, dilations, padding):
    if padding == 'valid':
        return [(0, 0)] * len(sizes)
    if padding == 'causal':
        return [((k - 1) * d, 0) for k, d in zip(kernel_sizes, dilations)]
    pads = []
    for n, k, s, d in zip(sizes, kernel_sizes, strides, dilations):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def windows(x_last, kernel_sizes, strides, dilations, pads, fill=0.):
    """Returns the output sizes and an iterator of (output index, window (N, *k, C))."""
    xp = np.pad(x_last, [(0, 0)] + list(pads) + [(0, 0)], constant_values=fill)
    out = [(xp.shape[1 + i] - (k - 1) * d - 1) // s + 1
           for i, (k, s, d) in enumerate(zip(kernel_sizes, strides, dilations))]

    def gen():
        for idx in itertools.product(*map(range, out)):
            sl = tuple(slice(i * s, i * s + (k - 1) * d + 1, d)
                       for i, k, s, d in zip(idx, kernel_sizes, strides, dilations))
            yield idx, xp[(slice(None),) + sl]
    return out, gen()


def ref_conv(x, kernel, strides, padding, data_format, dilations):
    xl = to_last(x, data_format).astype('float64')
    rank = kernel.ndim - 2
    ks = kernel.shape[:rank]
    pads = tf_pads(xl.shape[1:-1], ks, strides, dilations, padding)
    out, gen = windows(xl, ks, strides, dilations, pads)
    y = np.zeros((xl.shape[0], *out, kernel.shape[-1]))
    for idx, win in gen:
        y[(slice(None),) + idx] = np.tensordot(win, kernel, axes=(range(1, rank + 2),
                                                                   range(rank + 1)))
    return from_last(y, data_format)


def ref_depthwise(x, kernel, strides, padding, data_format, dilations):
    xl = to_last(x, data_format).astype('float64')
    rank = kernel.ndim - 2
    ks = kernel.shape[:rank]
    pads = tf_pads(xl.shape[1:-1], ks, strides, dilations, padding)
    out, gen = windows(xl, ks, strides, dilations, pads)
    y = np.zeros((xl.shape[0], *out, kernel.shape[-2] * kernel.shape[-1]))
    for idx, win in gen:
        per_channel = (win[..., None] * kernel).sum(axis=tuple(range(1, rank + 1)))
        y[(slice(None),) + idx] = per_channel.reshape(xl.shape[0], -1)
    return from_last(y, data_format)


def ref_conv_transpose(x, kernel, out_sizes, strides, padding, data_format, dilations):
    """The adjoint of `ref_conv` over an input of spatial size `out_sizes`."""
    xl = to_last(x, data_format).astype('float64')
    rank = kernel.ndim - 2
    ks = kernel.shape[:rank]
    pads = tf_pads(out_sizes, ks, strides, dilations, padding)
    padded = [o + b + a for o, (b, a) in zip(out_sizes, pads)]
    full = np.zeros((xl.shape[0], *padded, kernel.shape[-2]))
    for idx in itertools.product(*map(range, xl.shape[1:-1])):
        for tap in itertools.product(*map(range, ks)):
            pos = tuple(i * s + t * d for i, t, s, d in zip(idx, tap, strides, dilations))
            full[(slice(None),) + pos] += xl[(slice(None),) + idx] @ kernel[tap].T
    crop = tuple(slice(b, b + o) for o, (b, _) in zip(out_sizes, pads))
    return from_last(full[(slice(None),) + crop], data_format)


def ref_pool(x, pool_size, strides, padding, data_format, pool_mode):
    xl = to_last(x, data_format).astype('float64')
    rank = len(pool_size)
    pads = tf_pads(xl.shape[1:-1], pool_size, strides, (1,) * rank, padding)
    out, gen = windows(xl, pool_size, strides, (1,) * rank, pads, fill=np.nan)
    y = np.zeros((xl.shape[0], *out, xl.shape[-1]))
    reduce = np.nanmax if pool_mode == 'max' else np.nanmean
    for idx, win in gen:
        y[(slice(None),) + idx] = reduce(win, axis=tuple(range(1, rank + 1)))
    return from_last(y, data_format)


def ref_local_conv1d(x, kernel, kernel_size, strides):
    """Keras 2.3.1's TF `local_conv1d`, step by step."""
    output_length, feature_dim, _ = kernel.shape
    xs = [x[:, i * strides[0]:i * strides[0] + kernel_size[0], :].reshape(1, -1, feature_dim)
          for i in range(output_length)]
    return np.einsum('pbf,pfo->bpo', np.concatenate(xs, axis=0), kernel)


def ref_local_conv2d(x, kernel, kernel_size, strides, output_shape, data_format):
    """Keras 2.3.1's TF `local_conv2d`, step by step."""
    feature_dim, filters = kernel.shape[1:]
    xs = []
    for i in range(output_shape[0]):
        for j in range(output_shape[1]):
            rows = slice(i * strides[0], i * strides[0] + kernel_size[0])
            cols = slice(j * strides[1], j * strides[1] + kernel_size[1])
            patch = x[:, :, rows, cols] if data_format == FIRST else x[:, rows, cols, :]
            xs.append(patch.reshape(1, -1, feature_dim))
    y = np.einsum('pbf,pfo->pbo', np.concatenate(xs, axis=0), kernel)
    y = y.reshape(output_shape[0], output_shape[1], -1, filters)
    return y.transpose((2, 3, 0, 1) if data_format == FIRST else (2, 0, 1, 3))


def ref_bilinear(x, axes, factors):
    """TF 1 `resize_bilinear` (align_corners=False, no half-pixel centers), axis by axis."""
    for axis, f in zip(axes, factors):
        n = x.shape[axis]
        rows = []
        for i in range(n * f):
            lo = int(math.floor(i / f))
            hi = min(lo + 1, n - 1)
            w = i / f - lo
            rows.append(np.take(x, lo, axis) * (1 - w) + np.take(x, hi, axis) * w)
        x = np.stack(rows, axis=axis)
    return x


def run(fn, *args, **kwargs):
    """Calls a conv_ops function on torch versions of the numpy arguments; returns numpy."""
    args = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    return fn(*args, **kwargs).numpy()


def close(actual, expected, atol=1e-5):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=atol)


# ---------------------------------------------------------------------------------------------
# Signatures

KERAS2_NAMES = [
    'conv1d', 'conv2d', 'conv3d', 'conv2d_transpose', 'conv3d_transpose',
    'separable_conv1d', 'separable_conv2d', 'depthwise_conv2d', 'local_conv1d',
    'local_conv2d', 'pool2d', 'pool3d', 'bias_add', 'temporal_padding',
    'spatial_2d_padding', 'spatial_3d_padding', 'resize_images', 'resize_volumes']


@functools.lru_cache(maxsize=None)
def _tensorflow_backend_signatures():
    keras_dir = list(importlib.util.find_spec('keras').submodule_search_locations)[0]
    with open(os.path.join(keras_dir, 'backend', 'tensorflow_backend.py')) as f:
        tree = ast.parse(f.read())
    signatures = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args]
            defaults = [ast.literal_eval(d) for d in node.args.defaults]
            signatures[node.name] = (names, defaults)
    return signatures


@pytest.mark.parametrize('name', KERAS2_NAMES)
def test_signature_matches_tensorflow_backend(name):
    names, defaults = _tensorflow_backend_signatures()[name]
    params = list(inspect.signature(getattr(C, name)).parameters.values())
    positional = [p for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional] == names
    ours = [p.default for p in positional if p.default is not p.empty]
    assert ours == defaults
    extras = [p for p in params if p.kind != p.POSITIONAL_OR_KEYWORD]
    assert all(p.kind == p.KEYWORD_ONLY and p.default is None for p in extras)


def test_all_lists_every_public_function():
    public = {name for name, value in vars(C).items()
              if inspect.isfunction(value) and not name.startswith('_')
              and value.__module__.startswith(C.__name__ + '.')}
    assert set(C.__all__) == public
    assert set(KERAS2_NAMES) < public


@pytest.mark.parametrize('name, signature', [
    ('deconv2d', "(x, kernel, output_shape, strides=(1, 1), border_mode='valid', "
                 "dim_ordering='default', image_shape=None, filter_shape=None)"),
    ('asymmetric_temporal_padding', '(x, left_pad=1, right_pad=1)'),
    ('asymmetric_spatial_2d_padding', "(x, top_pad=1, bottom_pad=1, left_pad=1, right_pad=1, "
                                      "dim_ordering='default')"),
])
def test_keras1_signatures(name, signature):
    assert str(inspect.signature(getattr(C, name))) == signature


# ---------------------------------------------------------------------------------------------
# Convolutions

CONV_SHAPES = {1: ((7,), (3,)), 2: ((7, 6), (3, 2)), 3: ((6, 5, 6), (2, 3, 3))}
CONV_FNS = {1: C.conv1d, 2: C.conv2d, 3: C.conv3d}


@pytest.mark.parametrize('rank', [1, 2, 3])
@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
@pytest.mark.parametrize('strides', [1, 2])
@pytest.mark.parametrize('dilation', [1, 2])
def test_conv(rank, data_format, padding, strides, dilation):
    spatial, ks = CONV_SHAPES[rank]
    x = image(2, spatial, 3, data_format)
    kernel = rand(*ks, 3, 4, seed=1)
    y = run(CONV_FNS[rank], x, kernel, strides, padding, data_format, dilation)
    assert y.dtype == np.float32
    close(y, ref_conv(x, kernel, (strides,) * rank, padding, data_format, (dilation,) * rank))


@pytest.mark.parametrize('rank', [1, 2, 3])
@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
@pytest.mark.parametrize('dilation', [1, 2])
def test_conv_matches_numpy_backend(rank, data_format, padding, dilation):
    # The numpy backend follows TF for stride 1 and odd kernels.
    spatial = {1: (8,), 2: (6, 7), 3: (6, 7, 5)}[rank]
    x = image(2, spatial, 2, data_format)
    kernel = rand(*(3,) * rank, 2, 3, seed=1)
    expected = npb.conv(x, kernel, padding=padding, data_format=data_format,
                        dilation_rate=dilation)
    close(run(CONV_FNS[rank], x, kernel, 1, padding, data_format, dilation), expected)


def test_conv_same_pads_the_extra_cell_at_the_end():
    x = np.arange(1., 6., dtype='float32').reshape(1, 5, 1)
    ones = np.ones((2, 1, 1), 'float32')
    # 5 steps, kernel 2, stride 1: one padded cell, after the last step.
    close(run(C.conv1d, x, ones, 1, 'same')[0, :, 0], [3, 5, 7, 9, 5])
    # 4 steps, kernel 3, stride 2: ceil(4 / 2) = 2 outputs, one padded cell at the end.
    x4 = np.arange(1., 5., dtype='float32').reshape(1, 4, 1)
    close(run(C.conv1d, x4, np.ones((3, 1, 1), 'float32'), 2, 'same')[0, :, 0], [6, 7])
    # 2-D, both axes asymmetric.
    x2 = np.arange(16., dtype='float32').reshape(1, 4, 4, 1)
    y = run(C.conv2d, x2, np.ones((2, 2, 1, 1), 'float32'), (1, 1), 'same')[0, :, :, 0]
    assert y[0, 0] == 0 + 1 + 4 + 5 and y[3, 3] == 15 and y[3, 0] == 12 + 13


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('strides, dilation', [(1, 1), (1, 3), (2, 1), (3, 2)])
def test_conv1d_causal(data_format, strides, dilation):
    x = image(2, (9,), 2, data_format)
    kernel = rand(3, 2, 4, seed=1)
    xl = to_last(x, data_format)
    padded = from_last(np.pad(xl, [(0, 0), (2 * dilation, 0), (0, 0)]), data_format)
    expected = ref_conv(padded, kernel, (strides,), 'valid', data_format, (dilation,))
    y = run(C.conv1d, x, kernel, strides, 'causal', data_format, dilation)
    close(y, expected)
    # Output step t sees input steps up to t only: changing step 6 leaves steps < 6 alone.
    changed = to_last(x, data_format).copy()
    changed[:, 6] += 1.
    y2 = to_last(run(C.conv1d, from_last(changed, data_format).copy(), kernel, strides,
                     'causal', data_format, dilation), data_format)
    steps = -(-6 // strides)
    close(y2[:, :steps], to_last(y, data_format)[:, :steps])
    assert not np.allclose(y2, to_last(y, data_format))


def test_conv_float64_and_numpy_inputs():
    x = rand(1, 5, 5, 2, dtype='float64')
    kernel = rand(3, 3, 2, 2, seed=1, dtype='float64')
    y = C.conv2d(x, kernel, padding='same')
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float64
    close(y.numpy(), ref_conv(x, kernel, (1, 1), 'same', LAST, (1, 1)), atol=1e-12)


def test_default_data_format_is_read_at_call_time(monkeypatch):
    x = image(1, (4, 4), 2, FIRST)
    kernel = rand(3, 3, 2, 3, seed=1)
    monkeypatch.setattr(config, 'image_data_format', lambda: FIRST)
    close(run(C.conv2d, x, kernel), ref_conv(x, kernel, (1, 1), 'valid', FIRST, (1, 1)))


def test_channels_last_input_is_viewed_not_copied():
    x = torch.randn(2, 5, 6, 3)
    view = layout._to_channels_first(x, LAST, 2, 'conv2d')
    assert view.shape == (2, 3, 5, 6) and view.data_ptr() == x.data_ptr()
    assert view.is_contiguous(memory_format=torch.channels_last)
    assert layout._to_channels_first(x, FIRST, 2, 'conv2d') is x


# ---------------------------------------------------------------------------------------------
# Transposed convolutions

TRANSPOSE_CASES = [
    # (spatial input size, kernel sizes, strides, padding, output sizes)
    ((3, 4), (3, 3), (2, 2), 'same', (6, 8)),
    ((3, 4), (3, 3), (2, 2), 'same', (5, 7)),      # odd output: asymmetric crop
    ((3, 4), (2, 3), (2, 1), 'same', (6, 4)),      # even kernel
    ((3, 4), (3, 3), (2, 2), 'valid', (7, 9)),
    ((3, 4), (3, 3), (2, 2), 'valid', (8, 10)),    # output_padding 1
    ((3, 3), (2, 2), (3, 3), 'valid', (9, 10)),
    ((4, 3), (1, 1), (2, 2), 'same', (8, 6)),      # kernel smaller than the stride
    ((3, 3), (3, 3), (1, 1), 'same', (3, 3)),
]


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('in_sizes, ks, strides, padding, out_sizes', TRANSPOSE_CASES)
def test_conv2d_transpose(data_format, in_sizes, ks, strides, padding, out_sizes):
    x = image(2, in_sizes, 3, data_format)
    kernel = rand(*ks, 4, 3, seed=1)
    shape = ((2,) + out_sizes + (4,)) if data_format == LAST else ((2, 4) + out_sizes)
    y = run(C.conv2d_transpose, x, kernel, shape, strides, padding, data_format)
    close(y, ref_conv_transpose(x, kernel, out_sizes, strides, padding, data_format, (1, 1)))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding, out_sizes', [('same', (5, 6)), ('valid', (9, 10))])
def test_conv2d_transpose_dilated(data_format, padding, out_sizes):
    x = image(1, (5, 6), 2, data_format)
    kernel = rand(3, 3, 3, 2, seed=1)
    shape = ((1,) + out_sizes + (3,)) if data_format == LAST else ((1, 3) + out_sizes)
    y = run(C.conv2d_transpose, x, kernel, shape, (1, 1), padding, data_format, (2, 2))
    close(y, ref_conv_transpose(x, kernel, out_sizes, (1, 1), padding, data_format, (2, 2)))
    if padding == 'same':
        close(y, npb.conv_transpose(x, kernel, shape, padding='same', data_format=data_format,
                                    dilation_rate=2))


@pytest.mark.parametrize('data_format', FORMATS)
def test_conv_transpose_matches_numpy_backend(data_format):
    # The numpy backend's conv_transpose is TF's for 'same' padding and stride 1 only.
    x = image(2, (4, 5), 3, data_format)
    kernel = rand(3, 3, 2, 3, seed=1)
    shape = (2, 4, 5, 2) if data_format == LAST else (2, 2, 4, 5)
    expected = npb.conv_transpose(x, kernel, shape, padding='same', data_format=data_format)
    close(run(C.conv2d_transpose, x, kernel, shape, (1, 1), 'same', data_format), expected)


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding, out_sizes', [('same', (5, 4, 6)), ('valid', (6, 5, 7))])
def test_conv3d_transpose(data_format, padding, out_sizes):
    x = image(1, (3, 2, 3), 2, data_format)
    kernel = rand(2, 3, 2, 3, 2, seed=1)
    shape = ((1,) + out_sizes + (3,)) if data_format == LAST else ((1, 3) + out_sizes)
    y = run(C.conv3d_transpose, x, kernel, shape, (2, 2, 2), padding, data_format)
    close(y, ref_conv_transpose(x, kernel, out_sizes, (2, 2, 2), padding, data_format,
                                (1, 1, 1)))


@pytest.mark.parametrize('padding, out_sizes', [('same', (7, 6)), ('valid', (8, 7))])
def test_conv_transpose_is_the_adjoint_of_conv(padding, out_sizes):
    # <conv(z), x> == <z, conv_transpose(x)> for a kernel read in both layouts.
    kernel = torch.randn(3, 2, 4, 5, dtype=torch.float64)
    z = torch.randn(2, *out_sizes, 4, dtype=torch.float64)
    fwd = C.conv2d(z, kernel, (2, 2), padding)
    x = torch.randn_like(fwd)
    back = C.conv2d_transpose(x, kernel, z.shape, (2, 2), padding)
    assert back.shape == z.shape
    torch.testing.assert_close((fwd * x).sum(), (z * back).sum())


def test_conv_transpose_output_shape_forms():
    x = torch.randn(2, 3, 4, 3)
    kernel = torch.randn(3, 3, 5, 3)
    expected = C.conv2d_transpose(x, kernel, (2, 6, 8, 5), (2, 2), 'same')
    batch = torch.tensor(x.shape[0])
    for shape in [(None, 6, 8, 5), (batch, torch.tensor(6), torch.tensor(8), 5),
                  torch.tensor([2, 6, 8, 5]), [2, 6, 8, None]]:
        torch.testing.assert_close(C.conv2d_transpose(x, kernel, shape, (2, 2), 'same'),
                                   expected)


def test_deconv2d_is_the_keras1_conv2d_transpose():
    x = image(1, (3, 4), 2, FIRST)
    kernel = rand(3, 3, 3, 2, seed=1)
    y = run(C.deconv2d, x, kernel, (1, 3, 7, 9), (2, 2), 'valid', 'th')
    close(y, ref_conv_transpose(x, kernel, (7, 9), (2, 2), 'valid', FIRST, (1, 1)))


# ---------------------------------------------------------------------------------------------
# Depthwise and separable convolutions

@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
@pytest.mark.parametrize('strides, dilation', [((1, 1), (1, 1)), ((2, 2), (1, 1)),
                                               ((1, 1), (2, 2)), ((2, 1), (1, 2))])
@pytest.mark.parametrize('multiplier', [1, 2])
def test_depthwise_conv2d(data_format, padding, strides, dilation, multiplier):
    x = image(2, (7, 6), 3, data_format)
    kernel = rand(3, 2, 3, multiplier, seed=1)
    y = run(C.depthwise_conv2d, x, kernel, strides, padding, data_format, dilation)
    close(y, ref_depthwise(x, kernel, strides, padding, data_format, dilation))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
def test_depthwise_and_separable_match_numpy_backend(data_format, padding):
    x = image(2, (6, 5), 3, data_format)
    depthwise = rand(3, 3, 3, 2, seed=1)
    pointwise = rand(1, 1, 6, 4, seed=2)
    close(run(C.depthwise_conv2d, x, depthwise, (1, 1), padding, data_format),
          npb.depthwise_conv(x, depthwise, padding=padding, data_format=data_format))
    close(run(C.separable_conv2d, x, depthwise, pointwise, (1, 1), padding, data_format),
          npb.separable_conv(x, depthwise, pointwise, padding=padding, data_format=data_format))


@pytest.mark.parametrize('rank', [1, 2])
@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
@pytest.mark.parametrize('strides, dilation', [(1, 1), (2, 1), (1, 2)])
def test_separable_conv(rank, data_format, padding, strides, dilation):
    spatial = {1: (9,), 2: (7, 6)}[rank]
    x = image(2, spatial, 3, data_format)
    depthwise = rand(*(3,) * rank, 3, 2, seed=1)
    pointwise = rand(*(1,) * rank, 6, 4, seed=2)
    fn = {1: C.separable_conv1d, 2: C.separable_conv2d}[rank]
    y = run(fn, x, depthwise, pointwise, strides, padding, data_format, dilation)
    middle = ref_depthwise(x, depthwise, (strides,) * rank, padding, data_format,
                           (dilation,) * rank)
    close(y, ref_conv(middle, pointwise, (1,) * rank, 'valid', data_format, (1,) * rank))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('strides, dilation', [(1, 1), (2, 1), (1, 2)])
def test_separable_conv1d_causal(data_format, strides, dilation):
    # As Keras 2.3.1's TF backend: the steps padded at the start, then a 'valid' convolution.
    x = image(2, (9,), 3, data_format)
    depthwise, pointwise = rand(3, 3, 2, seed=1), rand(1, 6, 4, seed=2)
    padded = from_last(np.pad(to_last(x, data_format), [(0, 0), (2 * dilation, 0), (0, 0)]),
                       data_format).copy()
    y = run(C.separable_conv1d, x, depthwise, pointwise, strides, 'causal', data_format, dilation)
    close(y, run(C.separable_conv1d, padded, depthwise, pointwise, strides, 'valid', data_format,
                 dilation))
    middle = ref_depthwise(padded, depthwise, (strides,), 'valid', data_format, (dilation,))
    close(y, ref_conv(middle, pointwise, (1,), 'valid', data_format, (1,)))


# ---------------------------------------------------------------------------------------------
# Locally connected

@pytest.mark.parametrize('kernel_size, strides', [(3, 1), (2, 2), (3, 2)])
@pytest.mark.parametrize('data_format', [None, LAST, FIRST])
def test_local_conv1d(kernel_size, strides, data_format):
    # The input is channels_last whatever data_format says, as in the TF backend.
    x = rand(2, 8, 3)
    out = (8 - kernel_size) // strides + 1
    kernel = rand(out, kernel_size * 3, 4, seed=1)
    y = run(C.local_conv1d, x, kernel, (kernel_size,), (strides,), data_format)
    close(y, ref_local_conv1d(x, kernel, (kernel_size,), (strides,)))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('kernel_size, strides', [((3, 2), (1, 1)), ((2, 2), (2, 1)),
                                                  ((3, 3), (2, 2))])
def test_local_conv2d(data_format, kernel_size, strides):
    x = image(2, (7, 6), 3, data_format)
    out = tuple((n - k) // s + 1 for n, k, s in zip((7, 6), kernel_size, strides))
    kernel = rand(out[0] * out[1], kernel_size[0] * kernel_size[1] * 3, 4, seed=1)
    y = run(C.local_conv2d, x, kernel, kernel_size, strides, out, data_format)
    close(y, ref_local_conv2d(x, kernel, kernel_size, strides, out, data_format))


# ---------------------------------------------------------------------------------------------
# Pooling

POOL_CASES = [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((2, 3), (1, 1)), ((3, 2), (1, 2)),
              ((3, 3), (3, 3))]


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
@pytest.mark.parametrize('pool_mode', ['max', 'avg'])
@pytest.mark.parametrize('pool_size, strides', POOL_CASES)
def test_pool2d(data_format, padding, pool_mode, pool_size, strides):
    x = image(2, (7, 6), 3, data_format)
    y = run(C.pool2d, x, pool_size, strides, padding, data_format, pool_mode)
    assert y.dtype == np.float32
    close(y, ref_pool(x, pool_size, strides, padding, data_format, pool_mode))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', ['valid', 'same'])
@pytest.mark.parametrize('pool_mode', ['max', 'avg'])
@pytest.mark.parametrize('pool_size, strides', [((2, 2, 2), (2, 2, 2)),
                                                ((3, 2, 3), (2, 1, 2))])
def test_pool3d(data_format, padding, pool_mode, pool_size, strides):
    x = image(2, (5, 4, 5), 2, data_format)
    y = run(C.pool3d, x, pool_size, strides, padding, data_format, pool_mode)
    close(y, ref_pool(x, pool_size, strides, padding, data_format, pool_mode))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('pool_mode', ['max', 'avg'])
@pytest.mark.parametrize('padding, pool_size, strides', [('valid', (2, 2), (2, 2)),
                                                         ('valid', (3, 2), (1, 2)),
                                                         ('same', (3, 3), (1, 1))])
def test_pool_matches_numpy_backend(data_format, pool_mode, padding, pool_size, strides):
    # The numpy backend follows TF for valid windows, and 'same' with odd windows, stride 1.
    x = image(2, (7, 6), 3, data_format)
    close(run(C.pool2d, x, pool_size, strides, padding, data_format, pool_mode),
          npb.pool(x, pool_size, strides, padding, data_format, pool_mode))


def test_avg_pool_same_excludes_padded_cells():
    x = np.ones((1, 3, 3, 1), 'float32')
    # Every window mean is 1 although 'same' pads the bottom and right (and top-left for 3x3).
    close(run(C.pool2d, x, (2, 2), (1, 1), 'same', LAST, 'avg'), np.ones((1, 3, 3, 1)))
    close(run(C.pool2d, x, (3, 3), (2, 2), 'same', LAST, 'avg'), np.ones((1, 2, 2, 1)))
    x = np.arange(1., 5., dtype='float32').reshape(1, 2, 2, 1)
    close(run(C.pool2d, x, (2, 2), (1, 1), 'same', LAST, 'avg')[0, :, :, 0],
          [[2.5, 3.], [3.5, 4.]])


def test_max_pool_same_ignores_padded_cells():
    x = -np.ones((1, 3, 3, 1), 'float32')
    close(run(C.pool2d, x, (2, 2), (2, 2), 'same', LAST, 'max'), -np.ones((1, 2, 2, 1)))


def test_pool1d_through_pool2d_like_keras():
    # Keras' MaxPooling1D expands (batch, steps, features) to 4-D and pools (k, 1) windows.
    x = rand(2, 7, 3)
    y = run(C.pool2d, x[:, :, None, :], (2, 1), (2, 1), 'same', LAST, 'avg')[:, :, 0, :]
    close(y, ref_pool(x, (2,), (2,), 'same', LAST, 'avg'))


# ---------------------------------------------------------------------------------------------
# bias_add

@pytest.mark.parametrize('rank', [2, 3, 4, 5, 6])
@pytest.mark.parametrize('data_format', FORMATS)
def test_bias_add_vector(rank, data_format):
    shape = (2, 3, 4, 5, 3, 2)[:rank]
    x = rand(*shape)
    channels_first = data_format == FIRST and rank in (3, 4, 5)
    bias = rand(shape[1] if channels_first else shape[-1], seed=1)
    y = run(C.bias_add, x, bias, data_format)
    close(y, npb.bias_add(x, bias, data_format if channels_first else LAST))


@pytest.mark.parametrize('rank', [3, 4, 5])
@pytest.mark.parametrize('data_format', FORMATS)
def test_bias_add_full_rank_bias_reshaped_like_tf(rank, data_format):
    spatial = (4, 3, 2)[:rank - 2]
    x = image(2, spatial, 5, data_format)
    bias = rand(*spatial, 5, seed=1)            # Keras' (*spatial, channels) layout
    y = run(C.bias_add, x, bias, data_format)
    if data_format == FIRST:
        expected = x + bias.reshape((5,) + spatial)    # a reshape, as TF does
    else:
        expected = x + bias
    close(y, expected)


@pytest.mark.parametrize('bias_shape', [(1, 2), (2, 2)])
def test_bias_add_refuses_a_bias_in_another_layout(bias_shape):
    # TF reshapes a (1, 2) bias to (1, 2, 1) and broadcasts it over a (1, 1, 2) input.
    x = rand(1, 1, 2)
    with pytest.raises(ValueError, match=r'bias shape \(%d, 2\).*expected \(2, 1\)'
                       % bias_shape[0]):
        C.bias_add(torch.as_tensor(x), torch.as_tensor(rand(*bias_shape)), FIRST)


FOLD_CASES = [  # (rank, padding, strides, dilation)
    (1, 'valid', 1, 1), (1, 'causal', 1, 2), (1, 'same', 2, 1),
    (2, 'valid', 1, 1), (2, 'same', 2, 1), (2, 'same', 1, 2),
    (3, 'valid', 1, 1), (3, 'same', 2, 1),
]


def _conv_bias_graph(rank, padding, strides, dilation, data_format, bias_add):
    """`bias_add(conv(x, kernel), bias)` recorded on a placeholder; returns a function of the
    input giving the output and the gradients of a weighted sum of it w.r.t. the input, the
    kernel and the bias, and the recorded output."""
    x = K.placeholder(shape=(None,) + ((7, 6, 5)[:rank] + (3,) if data_format == LAST
                                       else (3,) + (7, 6, 5)[:rank]))
    kernel = K.variable(rand(*(3, 2, 2)[:rank], 3, 4, seed=1))
    bias = K.variable(rand(4, seed=2))
    conv = {1: K.conv1d, 2: K.conv2d, 3: K.conv3d}[rank]
    y = bias_add(conv(x, kernel, strides, padding, data_format, dilation), bias, data_format)
    loss = K.sum(y * K.constant(rand(*K.int_shape(y)[1:], seed=3)))
    return K.function([x], [y] + K.gradients(loss, [x, kernel, bias])), y


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('rank, padding, strides, dilation', FOLD_CASES)
def test_bias_add_of_a_conv_is_folded_with_the_same_values_and_gradients(
        rank, padding, strides, dilation, data_format):
    folded, y = _conv_bias_graph(rank, padding, strides, dilation, data_format, K.bias_add)
    assert y.node.fn is conv_bias._biased_conv
    unfolded, y = _conv_bias_graph(rank, padding, strides, dilation, data_format,
                                   C.bias_add.__wrapped__)
    assert y.node.fn is C.bias_add.__wrapped__.__wrapped__
    x = from_last(rand(2, *(7, 6, 5)[:rank], 3, seed=4), data_format).copy()
    for got, expected in zip(folded([x]), unfolded([x])):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_bias_add_folds_only_a_matching_channel_bias():
    x = K.placeholder(shape=(None, 5, 5, 3))
    y = K.conv2d(x, K.variable(rand(3, 3, 3, 4)), data_format=LAST)
    unfolded = C.bias_add.__wrapped__.__wrapped__
    assert K.bias_add(y, K.variable(rand(4)), LAST).node.fn is conv_bias._biased_conv
    assert K.bias_add(y, K.variable(rand(4)), None).node.fn is conv_bias._biased_conv
    assert K.bias_add(y, K.variable(rand(3, 3, 4)), LAST).node.fn is unfolded
    assert K.bias_add(y, K.variable(rand(4), dtype='float64'), LAST).node.fn is unfolded
    assert K.bias_add(y * 2, K.variable(rand(4)), LAST).node.fn is unfolded
    assert K.bias_add(y, K.variable(rand(3)), FIRST).node.fn is unfolded  # adds on axis 1


@pytest.mark.parametrize('data_format', FORMATS)
def test_biased_conv_output_keeps_the_input_memory_format(data_format):
    x = torch.from_numpy(image(2, (6, 5), 3, data_format))
    y = convolution._keras_conv(2, x, torch.from_numpy(rand(3, 3, 3, 4, seed=1)), 1, 'valid', data_format,
                      1, bias=torch.from_numpy(rand(4, seed=2)))
    assert y.is_contiguous()


def test_bias_add_float64_keeps_dtype():
    y = C.bias_add(torch.zeros(2, 3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    assert y.dtype == torch.float64


# ---------------------------------------------------------------------------------------------
# Padding

@pytest.mark.parametrize('padding', [(1, 1), (0, 2), (3, 0), [2, 1]])
def test_temporal_padding(padding):
    x = rand(2, 4, 3)
    close(run(C.temporal_padding, x, padding), npb.temporal_padding(x, tuple(padding)))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', [((1, 1), (1, 1)), ((0, 2), (1, 0)), ((2, 1), (0, 3))])
def test_spatial_2d_padding(data_format, padding):
    x = image(2, (3, 4), 2, data_format)
    close(run(C.spatial_2d_padding, x, padding, data_format),
          npb.spatial_2d_padding(x, padding, data_format))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', [((1, 1), (1, 1), (1, 1)), ((0, 2), (1, 0), (2, 1))])
def test_spatial_3d_padding(data_format, padding):
    x = image(1, (2, 3, 2), 2, data_format)
    close(run(C.spatial_3d_padding, x, padding, data_format),
          npb.spatial_3d_padding(x, padding, data_format))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('padding', [((0, 1), (0, 1)), ((2, 1), (0, 3))])
def test_spatial_2d_padding_gradient_and_layout(data_format, padding):
    """The gradient is the incoming one without the border (F.pad's), and a channels_last
    input stays channels_last in memory."""
    x = torch.from_numpy(image(2, (3, 4), 2, data_format)).double().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: C.spatial_2d_padding(t, padding, data_format), (x,))
    assert torch.autograd.gradgradcheck(
        lambda t: C.spatial_2d_padding(t, padding, data_format), (x,))
    y = C.spatial_2d_padding(x, padding, data_format)
    assert y.is_contiguous()
    x_cf = x.detach().permute(0, 3, 1, 2) if data_format == LAST else x.detach()
    flat = [p for pair in reversed(padding) for p in pair]
    y_cf = layout._constant_pad(x_cf, padding, -1.5)
    assert torch.equal(y_cf, torch.nn.functional.pad(x_cf, flat, value=-1.5))
    assert y_cf.is_contiguous(memory_format=torch.channels_last) == (data_format == LAST)


def test_keras1_padding_forms():
    x3 = rand(2, 4, 3)
    close(run(C.temporal_padding, x3, 2), npb.temporal_padding(x3, (2, 2)))
    close(run(C.asymmetric_temporal_padding, x3, 0, 3), npb.temporal_padding(x3, (0, 3)))
    x4 = image(1, (3, 4), 2, FIRST)
    expected = npb.spatial_2d_padding(x4, ((1, 1), (2, 2)), FIRST)
    close(run(C.spatial_2d_padding, x4, (1, 2), dim_ordering='th'), expected)
    close(run(C.spatial_2d_padding, x4, (1, 2), 'th'), expected)
    close(run(C.asymmetric_spatial_2d_padding, x4, 1, 0, 2, 3, dim_ordering='th'),
          npb.spatial_2d_padding(x4, ((1, 0), (2, 3)), FIRST))
    x5 = image(1, (2, 2, 2), 1, LAST)
    close(run(C.spatial_3d_padding, x5, (1, 0, 2), dim_ordering='tf'),
          npb.spatial_3d_padding(x5, ((1, 1), (0, 0), (2, 2)), LAST))


# ---------------------------------------------------------------------------------------------
# Resizing

@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('factors', [(2, 2), (1, 3), (3, 2)])
def test_resize_images_nearest(data_format, factors):
    x = image(2, (3, 4), 2, data_format)
    close(run(C.resize_images, x, *factors, data_format),
          npb.resize_images(x, *factors, data_format))


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('factors', [(2, 2), (1, 3), (3, 2)])
def test_resize_images_bilinear(data_format, factors):
    x = image(2, (3, 4), 2, data_format)
    axes = (1, 2) if data_format == LAST else (2, 3)
    y = run(C.resize_images, x, *factors, data_format, 'bilinear')
    assert y.dtype == np.float32
    close(y, ref_bilinear(x, axes, factors))


def test_resize_images_bilinear_samples_like_tf1():
    # TF 1 resize_bilinear (align_corners=False, no half-pixel centers) samples i / factor.
    x = np.array([0., 1.], 'float32').reshape(1, 2, 1, 1)
    y = run(C.resize_images, x, 2, 1, LAST, 'bilinear')
    close(y.ravel(), [0., 0.5, 1., 1.])
    ints = torch.tensor([0, 3]).reshape(1, 2, 1, 1)
    y = C.resize_images(ints, 3, 1, LAST, interpolation='bilinear')
    assert y.dtype == torch.float32
    close(y.numpy().ravel(), [0., 1., 2., 3., 3., 3.])


@pytest.mark.parametrize('data_format', FORMATS)
def test_resize_volumes(data_format):
    x = image(1, (2, 3, 2), 2, data_format)
    close(run(C.resize_volumes, x, 2, 1, 3, data_format),
          npb.resize_volumes(x, 2, 1, 3, data_format))


def test_resize_keras1_dim_ordering_values():
    x = image(1, (2, 3), 2, FIRST)
    close(run(C.resize_images, x, 2, 2, 'th'), npb.resize_images(x, 2, 2, FIRST))
    close(run(C.resize_volumes, x[:, :, None], 1, 2, 2, 'th'),
          npb.resize_volumes(x[:, :, None], 1, 2, 2, FIRST))


# ---------------------------------------------------------------------------------------------
# Keras 1 keywords

def test_keras1_keywords_are_aliases():
    x = image(1, (5, 6), 2, FIRST)
    kernel = rand(3, 3, 2, 3, seed=1)
    expected = run(C.conv2d, x, kernel, (1, 1), 'same', FIRST)
    close(run(C.conv2d, x, kernel, border_mode='same', dim_ordering='th'), expected)
    x1 = rand(1, 6, 2)
    close(run(C.conv1d, x1, rand(3, 2, 2), border_mode='same'),
          run(C.conv1d, x1, rand(3, 2, 2), padding='same'))
    x5 = image(1, (4, 4, 4), 2, LAST)
    close(run(C.conv3d, x5, rand(3, 3, 3, 2, 1), border_mode='same', dim_ordering='tf'),
          run(C.conv3d, x5, rand(3, 3, 3, 2, 1), padding='same', data_format=LAST))
    close(run(C.pool2d, x, (2, 2), (2, 2), border_mode='same', dim_ordering='th'),
          run(C.pool2d, x, (2, 2), (2, 2), 'same', FIRST))
    close(run(C.pool3d, x5, (2, 2, 2), border_mode='same', dim_ordering='default'),
          run(C.pool3d, x5, (2, 2, 2), padding='same'))


def test_keras1_keyword_and_keras2_argument_together_are_an_error():
    x, kernel = torch.zeros(1, 4, 4, 1), torch.zeros(3, 3, 1, 1)
    with pytest.raises(ValueError, match='padding or its Keras 1 name border_mode'):
        C.conv2d(x, kernel, padding='same', border_mode='valid')
    with pytest.raises(ValueError, match='data_format or its Keras 1 name dim_ordering'):
        C.conv2d(x, kernel, data_format=LAST, dim_ordering='tf')


# ---------------------------------------------------------------------------------------------
# Errors

def _conv2d_call(**overrides):
    kwargs = dict(x=torch.zeros(1, 5, 5, 2), kernel=torch.zeros(3, 3, 2, 4), strides=(1, 1),
                  padding='valid', data_format=LAST)
    kwargs.update(overrides)
    return C.conv2d(**kwargs)


@pytest.mark.parametrize('overrides, message', [
    (dict(padding='full'), "Invalid padding 'full' for conv2d; expected 'valid' or 'same'"),
    (dict(padding='causal'), "Invalid padding 'causal' for conv2d"),
    (dict(data_format='channels_middle'), "Unknown data_format: 'channels_middle'"),
    (dict(x=torch.zeros(5, 5, 2)), r'conv2d expects a 4D input .*got shape \(5, 5, 2\)'),
    (dict(kernel=torch.zeros(3, 2, 4)), r'conv2d expects a 4D kernel; got shape \(3, 2, 4\)'),
    (dict(kernel=torch.zeros(3, 3, 6, 4)),
     r"input channels \(2\) must equal the kernel's input channels \(6\)"),
    (dict(strides=(1, 1, 1)), r'strides must be an integer or a tuple of 2 integers'),
    (dict(strides=(0, 1)), r'strides must be positive integers; got \(0, 1\)'),
    (dict(strides=1.5), r'strides must be an integer or a tuple of 2 integers; got 1.5'),
])
def test_conv_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        _conv2d_call(**overrides)


@pytest.mark.parametrize('call, message', [
    (lambda: C.conv1d(torch.zeros(1, 5, 2), torch.zeros(3, 2, 1), dilation_rate=0),
     'dilation_rate must be positive'),
    (lambda: C.pool2d(torch.zeros(1, 4, 4, 1), (2, 2), pool_mode='min'),
     "Invalid pool_mode 'min' for pool2d; expected 'max' or 'avg'"),
    (lambda: C.pool2d(torch.zeros(1, 4, 4, 1), (2, 2), padding='causal'),
     "Invalid padding 'causal' for pool2d"),
    (lambda: C.pool3d(torch.zeros(1, 4, 4, 1), (2, 2, 2)), 'pool3d expects a 5D input'),
    (lambda: C.pool2d(torch.zeros(1, 4, 4, 1), (2, 2, 2)), 'pool_size must be an integer or'),
    (lambda: C.resize_images(torch.zeros(1, 2, 2, 1), 2, 2, LAST, 'bicubic'),
     "Invalid interpolation 'bicubic' for resize_images; expected 'nearest' or 'bilinear'"),
    (lambda: C.resize_images(torch.zeros(1, 2, 2, 1), 0, 2, LAST), 'must be positive'),
    (lambda: C.resize_volumes(torch.zeros(1, 2, 2, 1), 2, 2, 2, LAST),
     'resize_volumes expects a 5D x'),
    (lambda: C.depthwise_conv2d(torch.zeros(1, 5, 5, 6), torch.zeros(3, 3, 4, 2)),
     r"input channels \(6\) must equal the depthwise kernel's input channels \(4\)"),
    (lambda: C.separable_conv2d(torch.zeros(1, 5, 5, 3), torch.zeros(3, 3, 3, 2),
                                torch.zeros(1, 1, 5, 4)),
     r"pointwise kernel's input channels \(5\) must equal input channels \* "
     r'depth_multiplier \(6\)'),
    (lambda: C.separable_conv1d(torch.zeros(1, 5, 3), torch.zeros(3, 3, 1),
                                torch.zeros(2, 3, 4)),
     'the pointwise kernel must have spatial size'),
    (lambda: C.conv2d_transpose(torch.zeros(1, 3, 3, 2), torch.zeros(3, 3, 4, 2),
                                (1, 9, 6, 4), (2, 2), 'same'),
     r"output_shape .* does not match the input: a 'same' convolution of spatial axis 0 "
     r'with size 9 gives 5 cells, not 3'),
    (lambda: C.conv2d_transpose(torch.zeros(1, 3, 3, 2), torch.zeros(3, 3, 4, 2),
                                (1, 6, 6, 5), (2, 2), 'same'),
     r"output_shape channels \(5\) must equal the kernel's output channels \(4\)"),
    (lambda: C.conv2d_transpose(torch.zeros(1, 3, 3, 2), torch.zeros(3, 3, 4, 2),
                                (1, 6, 6), (2, 2), 'same'),
     'conv2d_transpose expects an output_shape of 4 entries'),
    (lambda: C.conv2d_transpose(torch.zeros(1, 3, 3, 2), torch.zeros(3, 3, 4, 2),
                                (1, None, 6, 4), (2, 2), 'same'),
     'needs integer spatial sizes'),
    (lambda: C.local_conv1d(torch.zeros(1, 8, 3), torch.zeros(5, 9, 2), (3,), (1,)),
     r'kernel.shape\[0\] \(5\) must equal the output positions \(6\)'),
    (lambda: C.local_conv1d(torch.zeros(1, 8, 3), torch.zeros(6, 8, 2), (3,), (1,)),
     r'kernel.shape\[1\] \(8\) must equal the patch features \(9\)'),
    (lambda: C.local_conv2d(torch.zeros(1, 4, 4, 1), torch.zeros(4, 9, 2), (3, 3), (1, 1),
                            (3, 3)),
     r'output_shape \(3, 3\) does not match the \(2, 2\) output positions'),
    (lambda: C.bias_add(torch.zeros(2, 3, 4), torch.zeros(2, 2, 2, 2)),
     'unexpected bias dimensions 4; expected 1 or 2'),
    (lambda: C.bias_add(torch.zeros(2, 3, 4), torch.zeros(3)),
     r'bias size \(3\) must equal the channels of the input \(4\)'),
    (lambda: C.bias_add(torch.zeros(2, 3, 4), torch.zeros(3, 4), 'channels_first'),
     r'bias shape \(3, 4\) does not match input shape \(2, 3, 4\); expected \(4, 3\)'),
    (lambda: C.bias_add(torch.zeros(3), torch.zeros(3)), 'rank 2 or more'),
    (lambda: C.temporal_padding(torch.zeros(1, 3, 2), (1, 2, 3)),
     'Invalid padding .* for temporal_padding'),
    (lambda: C.spatial_2d_padding(torch.zeros(1, 3, 3, 1), ((1, -1), (0, 0))),
     'non-negative integers'),
    (lambda: C.spatial_3d_padding(torch.zeros(1, 3, 3, 1), ((1, 1),) * 3),
     'spatial_3d_padding expects a 5D x'),
    (lambda: C.spatial_2d_padding(torch.zeros(1, 3, 3, 1), data_format='NHWC'),
     "Unknown data_format: 'nhwc'"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# Shape inference on meta tensors (what the lazy graph does)

def _meta_cases():
    yield 'conv1d', lambda t: C.conv1d(t(2, 9, 3), t(3, 3, 4), 2, 'causal', dilation_rate=2)
    yield 'conv2d', lambda t: C.conv2d(t(2, 3, 7, 6), t(2, 3, 3, 4), (2, 2), 'same', FIRST)
    yield 'conv3d', lambda t: C.conv3d(t(1, 5, 4, 5, 2), t(2, 2, 2, 2, 3), padding='same')
    yield 'conv2d_transpose', lambda t: C.conv2d_transpose(
        t(2, 3, 4, 3), t(3, 3, 5, 3),
        (torch.tensor(2), torch.tensor(5), torch.tensor(7), 5), (2, 2), 'same')
    yield 'conv3d_transpose', lambda t: C.conv3d_transpose(
        t(1, 2, 2, 2, 2), t(2, 2, 2, 3, 2), (None, 3, 4, 4, 4), (2, 2, 2), 'valid', FIRST)
    yield 'separable_conv1d', lambda t: C.separable_conv1d(t(2, 7, 3), t(3, 3, 2),
                                                           t(1, 6, 4), 2, 'same')
    yield 'separable_conv2d', lambda t: C.separable_conv2d(t(2, 7, 6, 3), t(3, 3, 3, 2),
                                                           t(1, 1, 6, 4), padding='same')
    yield 'depthwise_conv2d', lambda t: C.depthwise_conv2d(t(2, 7, 6, 3), t(3, 3, 3, 2),
                                                           (2, 2), 'same')
    yield 'local_conv1d', lambda t: C.local_conv1d(t(2, 8, 3), t(6, 9, 4), (3,), (1,))
    yield 'local_conv2d', lambda t: C.local_conv2d(t(2, 3, 5, 5), t(4, 27, 2), (3, 3), (2, 2),
                                                   (2, 2), FIRST)
    yield 'pool2d', lambda t: C.pool2d(t(2, 7, 6, 3), (2, 2), (2, 2), 'same', LAST, 'avg')
    yield 'pool3d', lambda t: C.pool3d(t(2, 5, 4, 5, 3), (2, 2, 2), (2, 2, 2), 'same',
                                       LAST, 'max')
    yield 'bias_add', lambda t: C.bias_add(t(2, 3, 4, 5), t(4, 5, 3), FIRST)
    yield 'temporal_padding', lambda t: C.temporal_padding(t(2, 4, 3), (1, 2))
    yield 'spatial_2d_padding', lambda t: C.spatial_2d_padding(t(2, 4, 3, 1), ((1, 2), (0, 1)))
    yield 'spatial_3d_padding', lambda t: C.spatial_3d_padding(t(1, 2, 2, 2, 2))
    yield 'resize_images', lambda t: C.resize_images(t(2, 3, 4, 2), 2, 3, LAST, 'bilinear')
    yield 'resize_volumes', lambda t: C.resize_volumes(t(1, 2, 2, 2, 2), 2, 1, 3, FIRST)


@pytest.mark.parametrize('name, call', list(_meta_cases()), ids=[n for n, _ in _meta_cases()])
def test_runs_on_meta_tensors(name, call):
    real = call(lambda *shape: torch.randn(*shape))
    meta = call(lambda *shape: torch.empty(*shape, device='meta'))
    assert meta.device.type == 'meta'
    assert meta.shape == real.shape and meta.dtype == real.dtype


# ---------------------------------------------------------------------------------------------
# Gradients (float64, finite differences)

def _grad_cases():
    yield 'conv2d same stride 2', C.conv2d, [(1, 5, 4, 2), (2, 3, 2, 2)], \
        dict(strides=(2, 2), padding='same')
    yield 'conv1d causal dilated', C.conv1d, [(1, 6, 2), (2, 2, 1)], \
        dict(padding='causal', dilation_rate=2)
    yield 'conv2d_transpose odd output', C.conv2d_transpose, [(1, 2, 3, 2), (3, 3, 2, 2)], \
        dict(output_shape=(1, 3, 5, 2), strides=(2, 2), padding='same')
    yield 'depthwise_conv2d', C.depthwise_conv2d, [(1, 2, 5, 4), (2, 2, 2, 2)], \
        dict(padding='same', data_format=FIRST)
    yield 'separable_conv1d', C.separable_conv1d, [(1, 5, 2), (3, 2, 2), (1, 4, 2)], \
        dict(padding='same')
    yield 'avg pool same asymmetric', C.pool2d, [(1, 4, 5, 2)], \
        dict(pool_size=(2, 2), strides=(1, 2), padding='same', pool_mode='avg')
    yield 'max pool same', C.pool2d, [(1, 4, 5, 2)], \
        dict(pool_size=(3, 3), strides=(2, 2), padding='same', pool_mode='max')
    yield 'local_conv2d', C.local_conv2d, [(1, 4, 4, 2), (4, 18, 2)], \
        dict(kernel_size=(3, 3), strides=(1, 1), output_shape=(2, 2))
    yield 'resize bilinear', C.resize_images, [(1, 2, 3, 2)], \
        dict(height_factor=2, width_factor=3, data_format=LAST, interpolation='bilinear')
    yield 'bias_add full', C.bias_add, [(2, 2, 3, 3), (3, 3, 2)], dict(data_format=FIRST)


@pytest.mark.parametrize('name, fn, shapes, kwargs', list(_grad_cases()),
                         ids=[c[0] for c in _grad_cases()])
def test_gradients(name, fn, shapes, kwargs):
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(*s, dtype=torch.float64, generator=generator, requires_grad=True)
              for s in shapes]
    assert torch.autograd.gradcheck(lambda *a: fn(*a, **kwargs), inputs)


def _kernel_layout_cases():
    yield 'conv2d channels_last', C.conv2d, (2, 6, 5, 3), [(3, 3, 3, 4)], LAST
    yield 'conv2d channels_first', C.conv2d, (2, 3, 6, 5), [(3, 3, 3, 4)], FIRST
    yield 'conv3d channels_last', C.conv3d, (2, 4, 5, 6, 3), [(2, 3, 2, 3, 4)], LAST
    yield 'conv1d', C.conv1d, (2, 7, 3), [(3, 3, 4)], LAST
    yield 'depthwise_conv2d', C.depthwise_conv2d, (2, 6, 5, 3), [(3, 3, 3, 1)], LAST
    yield 'depthwise_conv2d multiplier 2', C.depthwise_conv2d, (2, 6, 5, 3), [(3, 3, 3, 2)],\
        LAST
    yield 'separable_conv2d', C.separable_conv2d, (2, 6, 5, 3), [(3, 3, 3, 2), (1, 1, 6, 4)],\
        LAST


@pytest.mark.parametrize('name, conv, input_shape, kernel_shapes, data_format',
                         list(_kernel_layout_cases()), ids=[c[0] for c in _kernel_layout_cases()])
def test_a_kernel_variable_is_laid_out_as_its_gradient_comes(name, conv, input_shape,
                                                              kernel_shapes, data_format):
    """Recorded into a convolution, a kernel variable takes the memory order of the torch
    weight whose gradient the backend computes: the gradient of the Keras-shaped kernel then
    has the variable's strides (no copy before the optimizer's update), values unchanged."""
    rng = np.random.RandomState(0)
    values = [rng.randn(*s).astype('float32') for s in kernel_shapes]
    kernels = [K.variable(v) for v in values]
    x = rng.randn(*input_shape).astype('float32')
    symbol = conv(K.placeholder(shape=(None,) + input_shape[1:]), *kernels,
                  data_format=data_format)
    got = K.function([symbol.node.args[0]], [symbol])([x])[0]
    expected = conv(torch.from_numpy(x), *map(torch.from_numpy, values), data_format=data_format)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-5)
    plain = [k.as_subclass(torch.Tensor) for k in kernels]
    y = conv(torch.from_numpy(x), *plain, data_format=data_format)
    for kernel, value, gradient in zip(kernels, values, torch.autograd.grad(y.sum(), plain)):
        np.testing.assert_array_equal(K.get_value(kernel), value)
        assert [s for s, n in zip(gradient.stride(), gradient.shape) if n > 1] == \
            [s for s, n in zip(kernel.stride(), kernel.shape) if n > 1]
    assert not kernels[0].is_contiguous()


@pytest.mark.parametrize('strides, depthwise, slow', [
    ((2, 2), True, True), ((1, 2), True, True), ((1, 1), True, False), ((2, 2), False, False)])
def test_bfloat16_convolutions_with_a_slow_backward_compute_in_float32(strides, depthwise, slow):
    """oneDNN's bfloat16 backward of a strided grouped convolution is several times slower
    than float32's: such a convolution computes in float32 when a gradient may follow, and
    gives the float32 values rounded to bfloat16 (forward and gradients alike)."""
    rng = np.random.RandomState(7)
    x32 = torch.tensor(rng.randn(2, 9, 9, 4).astype('float32'))
    kernel32 = torch.tensor(rng.randn(3, 3, 4, 1 if depthwise else 4).astype('float32'))
    x, kernel = (t.bfloat16().requires_grad_() for t in (x32, kernel32))
    conv = C.depthwise_conv2d if depthwise else C.conv2d
    y = conv(x, kernel, strides=strides, padding='same', data_format='channels_last')
    groups = 4 if depthwise else 1
    weight = torch.zeros(4, 4 // groups, 3, 3, dtype=torch.bfloat16, requires_grad=True)
    x_cf = x.permute(0, 3, 1, 2)
    assert convolution._slow_in_bfloat16(x_cf, weight, strides, groups) is slow
    with torch.no_grad():
        assert not convolution._slow_in_bfloat16(x_cf, weight, strides, groups)
    assert y.dtype == torch.bfloat16
    x64, kernel64 = (t.detach().double().requires_grad_() for t in (x, kernel))
    expected = conv(x64, kernel64, strides=strides, padding='same', data_format='channels_last')
    np.testing.assert_allclose(y.float().detach().numpy(), expected.detach().numpy(),
                               rtol=1e-2, atol=1e-2)
    grad = torch.tensor(rng.randn(*y.shape).astype('float32'))
    dx, dk = torch.autograd.grad(y, [x, kernel], grad.bfloat16())
    dx64, dk64 = torch.autograd.grad(expected, [x64, kernel64], grad.double())
    for got, want in ((dx, dx64), (dk, dk64)):
        scale = float(want.abs().max())
        np.testing.assert_allclose(got.float().numpy(), want.numpy(), rtol=0, atol=2e-2 * scale)
