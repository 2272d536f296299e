"""Losses, metrics, batch normalization, convolutions, pooling and locally connected layers
against TF's Keras 2 backend (and Keras 2.3.1's losses and metrics run on it)."""
import types

import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow as tf  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

import keras  # noqa: E402
from oracle import TK, TK231, compare, covers, reference  # noqa: E402
from strategies import FLOATS, arrays, conv_case, shapes  # noqa: E402
from torchk import core as K  # noqa: E402


def _on_tf_backend(module):
    """`module`'s functions with `K` bound to tf_keras.backend: Keras 2.3.1's own loss and
    metric code run on TF, which is the reference for what it computes on torchk."""
    namespace = dict(vars(module), K=TK231)
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            namespace[name] = types.FunctionType(value.__code__, namespace, name,
                                                 value.__defaults__, value.__closure__)
    return types.SimpleNamespace(**namespace)


TF_LOSSES = _on_tf_backend(keras.losses)
TF_METRICS = _on_tf_backend(keras.metrics)


@st.composite
def probabilities(draw, shape, dtype='float32'):
    logits = draw(arrays(dtype, shape, -5, 5))
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(dtype)


@covers('categorical_crossentropy', 'sparse_categorical_crossentropy', 'binary_crossentropy')
@given(data=st.data(), from_logits=st.booleans())
def test_crossentropies(data, from_logits):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    output = (data.draw(arrays(dtype, shape, -5, 5)) if from_logits
              else data.draw(probabilities(shape, dtype)))
    target = data.draw(probabilities(shape, dtype))
    axis = data.draw(st.sampled_from([-1, 0]))
    compare(lambda t, o: K.categorical_crossentropy(t, o, from_logits, axis),
            lambda t, o: TK.categorical_crossentropy(t, o, from_logits, axis),
            target, output, rtol=1e-4 if dtype == 'float32' else None)
    # Labels out of range too: TF's CPU kernel refuses them, as must torchk.
    labels = data.draw(arrays('int64', shape[:-1], -1 if data.draw(st.booleans()) else 0,
                              shape[-1] - 1))
    compare(lambda t, o: K.sparse_categorical_crossentropy(t, o, from_logits),
            lambda t, o: TK.sparse_categorical_crossentropy(t, o, from_logits), labels, output,
            rtol=1e-4 if dtype == 'float32' else None)
    binary = (data.draw(arrays(dtype, shape, -5, 5)) if from_logits
              else data.draw(arrays(dtype, shape, 0, 1)))
    compare(lambda t, o: K.binary_crossentropy(t, o, from_logits),
            lambda t, o: reference('binary_crossentropy')(t, o, from_logits),
            data.draw(arrays(dtype, shape, 0, 1)), binary,
            rtol=1e-4 if dtype == 'float32' else None)


LOSSES = ['mean_squared_error', 'mean_absolute_error', 'mean_absolute_percentage_error',
          'mean_squared_logarithmic_error', 'squared_hinge', 'hinge', 'categorical_hinge',
          'logcosh', 'huber_loss', 'categorical_crossentropy', 'binary_crossentropy',
          'kullback_leibler_divergence', 'poisson', 'cosine_proximity']
METRICS = ['accuracy', 'binary_accuracy', 'categorical_accuracy', 'top_k_categorical_accuracy',
           'cosine_proximity']


@pytest.mark.parametrize('module, name', [('losses', n) for n in LOSSES]
                         + [('metrics', n) for n in METRICS])
@given(data=st.data())
def test_keras_losses_and_metrics(module, name, data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    y_true = data.draw(st.one_of(probabilities(shape), arrays('float32', shape, 0, 1),
                                 arrays('float32', shape, -1, 1).map(np.round)))
    y_pred = data.draw(st.one_of(probabilities(shape), arrays('float32', shape, 0, 1)))
    torchk_fn = getattr(getattr(keras, module), name)
    tf_fn = getattr(TF_LOSSES if module == 'losses' else TF_METRICS, name)
    compare(torchk_fn, tf_fn, y_true, y_pred, rtol=1e-4)


@given(data=st.data())
def test_sparse_metrics(data):
    samples, classes = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6))
    y_pred = data.draw(probabilities((samples, classes)))
    y_true = data.draw(arrays('float32', (samples, 1), 0, classes - 1))
    k = data.draw(st.integers(1, 3))
    compare(keras.metrics.sparse_categorical_accuracy, TF_METRICS.sparse_categorical_accuracy,
            y_true, y_pred)
    compare(lambda t, p: keras.metrics.sparse_top_k_categorical_accuracy(t, p, k),
            lambda t, p: TF_METRICS.sparse_top_k_categorical_accuracy(t, p, k), y_true, y_pred)


def _batch_norm_atol(x, mean, var, gamma, epsilon):
    """torch's batch-norm kernel computes `x * a + (beta - mean * a)`, `a = gamma /
    sqrt(var + epsilon)`, where TF computes `(x - mean) * a`: the two differ by the rounding
    of the products, a few float32 ulps of `|x * a|` (large where the variance is about 0;
    docs/oracle_differences.md)."""
    a = np.abs(gamma) / np.sqrt(var + epsilon)
    scale = np.max(np.abs(x) * a + np.abs(mean) * a)
    return max(2e-5, 4 * float(scale) * np.finfo(np.float32).eps)


@covers('normalize_batch_in_training', 'batch_normalization')
@given(data=st.data())
def test_batch_normalization(data):
    dtype = 'float32'
    x = data.draw(arrays(dtype, shapes(min_dims=2, max_dims=4, min_side=1, max_side=4), -5, 5))
    axis = data.draw(st.integers(1, x.ndim - 1) if x.ndim > 1 else st.just(0))
    reduction_axes = [a for a in range(x.ndim) if a != axis]
    channels = (x.shape[axis],)
    gamma, beta = (data.draw(arrays(dtype, channels, -2, 2)) for _ in range(2))
    epsilon = data.draw(st.sampled_from([1e-3, 1e-5]))
    laid = tuple(n if a == axis else 1 for a, n in enumerate(x.shape))
    compare(lambda t, g, b: K.normalize_batch_in_training(t, g, b, reduction_axes, epsilon),
            lambda t, g, b: TK.normalize_batch_in_training(t, g, b, reduction_axes, epsilon),
            x, gamma, beta, rtol=1e-4,
            atol=_batch_norm_atol(x, x.mean(axis=tuple(reduction_axes), keepdims=True),
                                  x.var(axis=tuple(reduction_axes), keepdims=True),
                                  gamma.reshape(laid), epsilon))
    # 1-D statistics broadcast against the last axis in 2.3.1 on CPUs (its fused kernel
    # lays them along axis 1 on GPUs only): torchk lays them along `axis`, documented.
    bn_shape = (channels if axis == x.ndim - 1
                else tuple(n if a == axis else 1 for a, n in enumerate(x.shape)))
    mean, beta, gamma = (data.draw(arrays(dtype, bn_shape, -2, 2)) for _ in range(3))
    var = data.draw(arrays(dtype, bn_shape, 0, 3))
    bn_axis = axis - x.ndim if data.draw(st.booleans()) else axis
    compare(lambda t, m, v, b, g: K.batch_normalization(t, m, v, b, g, bn_axis, epsilon),
            lambda t, m, v, b, g: reference('batch_normalization')(t, m, v, b, g, bn_axis,
                                                                   epsilon),
            x, mean, var, beta, gamma, rtol=1e-4,
            atol=_batch_norm_atol(x, mean, var, gamma, epsilon))


def _kernel(data, shape):
    return data.draw(arrays('float32', shape, -1, 1))


def _image(data, shape):
    return data.draw(arrays('float32', shape, -2, 2))


def _channels(shape, data_format):
    return shape[-1] if data_format == 'channels_last' else shape[1]


@covers('conv1d', 'conv2d', 'conv3d')
@pytest.mark.parametrize('rank', [1, 2, 3])
@given(data=st.data())
def test_conv(rank, data):
    paddings = ('valid', 'same', 'causal') if rank == 1 else ('valid', 'same')
    shape, size, strides, padding, data_format, dilation = data.draw(
        conv_case(rank, paddings=paddings, max_side=6 if rank < 3 else 4, max_kernel=3))
    if padding == 'causal':  # TF's causal conv1d is channels_last only
        data_format = 'channels_last'
        shape = (shape[0],) + tuple(sorted(shape[1:], reverse=True))
    x = _image(data, shape)
    filters = data.draw(st.integers(1, 3))
    kernel = _kernel(data, size + (_channels(shape, data_format), filters))
    name = 'conv%dd' % rank
    if rank == 1:
        strides, dilation = strides[0], dilation[0]
    compare(lambda t, k: getattr(K, name)(t, k, strides, padding, data_format, dilation),
            lambda t, k: getattr(TK, name)(t, k, strides, padding, data_format, dilation),
            x, kernel, rtol=1e-4, atol=1e-4, known_shapes=True)


@covers('depthwise_conv2d', 'separable_conv2d', 'separable_conv1d')
@pytest.mark.parametrize('rank', [1, 2])
@given(data=st.data())
def test_depthwise_and_separable(rank, data):
    shape, size, strides, padding, data_format, dilation = data.draw(
        conv_case(rank, paddings=('valid', 'same', 'causal') if rank == 1 else ('valid', 'same'),
                  max_side=6, max_kernel=3))
    if padding == 'causal':  # 2.3.1 pads the time axis of channels_last inputs
        data_format = 'channels_last'
        shape = (shape[0],) + tuple(sorted(shape[1:], reverse=True))
    if rank == 1:
        strides, dilation = strides[0], dilation[0]
    x = _image(data, shape)
    channels, multiplier = _channels(shape, data_format), data.draw(st.integers(1, 2))
    depthwise = _kernel(data, size + (channels, multiplier))
    pointwise = _kernel(data, (1,) * rank + (channels * multiplier, data.draw(st.integers(1, 3))))
    if rank == 2:
        compare(lambda t, k: K.depthwise_conv2d(t, k, strides, padding, data_format, dilation),
                lambda t, k: TK.depthwise_conv2d(t, k, strides, padding, data_format, dilation),
                x, depthwise, rtol=1e-4, atol=1e-4, known_shapes=True,
                extends='depthwise_conv2d')
    name = 'separable_conv%dd' % rank
    reference = TK.separable_conv2d if rank == 2 else _tf_231_separable_conv1d
    compare(lambda t, d, p: getattr(K, name)(t, d, p, strides, padding, data_format, dilation),
            lambda t, d, p: reference(t, d, p, strides, padding, data_format, dilation),
            x, depthwise, pointwise, rtol=1e-4, atol=1e-4, known_shapes=True,
            extends='depthwise_conv2d' if rank == 2 else None)


def _tf_231_separable_conv1d(x, depthwise, pointwise, strides, padding, data_format,
                             dilation_rate):
    """Keras 2.3.1's separable_conv1d (tf_keras has none): a separable_conv2d of height 1 with
    the stride on both axes, after padding the start of the time axis for 'causal'."""
    if padding == 'causal':
        x = TK.temporal_padding(x, (dilation_rate * (depthwise.shape[0] - 1), 0))
        padding = 'valid'
    spatial = 1 if data_format == 'channels_last' else 2
    result = TK.separable_conv2d(tf.expand_dims(x, spatial), depthwise[None], pointwise[None],
                                 (strides, strides), padding, data_format, (1, dilation_rate))
    return tf.squeeze(result, spatial)


def _transposed_sizes(data, spatial, size, strides, padding, dilation):
    """Output sizes a transposed convolution of these arguments accepts."""
    sizes = []
    for n, k, s, d in zip(spatial, size, strides, dilation):
        smallest = (n - 1) * s + 1 if padding == 'same' else (n - 1) * s + (k - 1) * d + 1
        sizes.append(smallest + data.draw(st.integers(0, s - 1)))
    return tuple(sizes)


@covers('conv2d_transpose', 'conv3d_transpose')
@pytest.mark.parametrize('rank', [2, 3])
@given(data=st.data())
def test_conv_transpose(rank, data):
    shape, size, strides, padding, data_format, dilation = data.draw(
        conv_case(rank, max_side=4, max_kernel=3, dilation=rank == 2))
    x = _image(data, shape)
    channels, filters = _channels(shape, data_format), data.draw(st.integers(1, 3))
    kernel = _kernel(data, size + (filters, channels))
    spatial = shape[1:-1] if data_format == 'channels_last' else shape[2:]
    out = _transposed_sizes(data, spatial, size, strides, padding, dilation)
    output_shape = ((shape[0],) + out + (filters,) if data_format == 'channels_last'
                    else (shape[0], filters) + out)
    if rank == 2:
        compare(lambda t, k: K.conv2d_transpose(t, k, output_shape, strides, padding,
                                                data_format, dilation),
                lambda t, k: TK.conv2d_transpose(t, k, output_shape, strides, padding,
                                                 data_format, dilation),
                x, kernel, rtol=1e-4, atol=1e-4, known_shapes=True, extends='conv2d_transpose')
    else:
        compare(lambda t, k: K.conv3d_transpose(t, k, output_shape, strides, padding,
                                                data_format),
                lambda t, k: _tf_231_conv3d_transpose(t, k, output_shape, strides, padding,
                                                      data_format),
                x, kernel, rtol=1e-4, atol=1e-4, known_shapes=True)


def _tf_231_conv3d_transpose(x, kernel, output_shape, strides, padding, data_format):
    """Keras 2.3.1's conv3d_transpose (tf_keras has none): tf.nn.conv3d_transpose in NDHWC."""
    if data_format == 'channels_first':
        x = tf.transpose(x, (0, 2, 3, 4, 1))
        output_shape = (output_shape[0],) + tuple(output_shape[2:]) + (output_shape[1],)
    result = tf.nn.conv3d_transpose(x, kernel, output_shape, (1,) + tuple(strides) + (1,),
                                    padding=padding.upper())
    return tf.transpose(result, (0, 4, 1, 2, 3)) if data_format == 'channels_first' else result


@covers('pool2d', 'pool3d')
@pytest.mark.parametrize('rank', [2, 3])
@given(data=st.data(), pool_mode=st.sampled_from(['max', 'avg']))
def test_pool(rank, data, pool_mode):
    shape, size, strides, padding, data_format, _ = data.draw(
        conv_case(rank, max_side=6 if rank == 2 else 4, max_kernel=3, dilation=False))
    name = 'pool%dd' % rank
    compare(lambda t: getattr(K, name)(t, size, strides, padding, data_format, pool_mode),
            lambda t: getattr(TK, name)(t, size, strides, padding, data_format, pool_mode),
            _image(data, shape), known_shapes=True)


@covers('local_conv1d', 'local_conv2d')
@pytest.mark.parametrize('rank', [1, 2])
@given(data=st.data())
def test_local_conv(rank, data):
    shape, size, strides, _, data_format, _ = data.draw(
        conv_case(rank, paddings=('valid',), max_side=5, max_kernel=3, dilation=False))
    x = _image(data, shape)
    if rank == 1:  # 2.3.1's local_conv1d reads channels_last whatever data_format says
        shape = shape[:1] + tuple(sorted(shape[1:], reverse=True))
        x = _image(data, shape)
    spatial = shape[1:-1] if data_format == 'channels_last' or rank == 1 else shape[2:]
    out = tuple((n - k) // s + 1 for n, k, s in zip(spatial, size, strides))
    filters = data.draw(st.integers(1, 2))
    channels = shape[-1] if rank == 1 else _channels(shape, data_format)
    kernel = _kernel(data, (int(np.prod(out)), int(np.prod(size)) * channels, filters))
    if rank == 1:
        compare(lambda t, k: K.local_conv1d(t, k, size, strides, data_format),
                lambda t, k: reference('local_conv1d')(t, k, size, strides, data_format),
                x, kernel, rtol=1e-4, atol=1e-4, known_shapes=True)
    else:
        compare(lambda t, k: K.local_conv2d(t, k, size, strides, out, data_format),
                lambda t, k: TK.local_conv2d(t, k, size, strides, out, data_format),
                x, kernel, rtol=1e-4, atol=1e-4, known_shapes=True)
