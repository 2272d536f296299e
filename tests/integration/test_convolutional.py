"""Convolutional Keras 2.3.1 models on torchk, in both image data formats.

- Small CNNs train to a stated accuracy on synthetic images, with `channels_first` set per layer,
  set globally through `keras.backend.set_image_data_format`, and read from `keras.json`.
- Every conv / pool / padding / cropping / upsampling / locally-connected layer of Keras 2.3.1
  predicts the shape its own `compute_output_shape` announces (and the symbolic shape agrees),
  and survives a `train_on_batch` step that moves its weights.
- `Conv2D` 'same' with stride 2 equals a numpy convolution with TF's padding rule (asymmetric
  when the total padding is odd) in both formats: the kernel is read in Keras' layout. So do
  dilated, causal, depthwise, separable, transposed (output_padding), locally-connected,
  'same'-padded pooling (averages exclude the padding) and bilinear upsampling layers, against
  numpy references written here from TF's definitions.
- Weights saved with `save_weights` load back to identical predictions, and a channels_last
  kernel drives a channels_first model to the same (transposed) outputs, as in TF.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import keras
from keras import backend as K
from keras import layers as L
from keras.models import Model, Sequential

from .conftest import assert_one_step_moves_weights, one_hot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORMATS = ('channels_last', 'channels_first')


# ------------------------------------------------------------------------------------------
# Synthetic images: one bright bar on a noisy background; the class is its orientation.

def bars(samples=512, size=12, seed=0, noise=0.25):
    """Images holding one bright bar, horizontal (label 0) or vertical (label 1), of random
    length and position, plus Gaussian noise. Returns (x float32 (samples, size, size, 1)
    channels_last, labels int64)."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, size=samples)
    x = rng.normal(0., noise, size=(samples, size, size)).astype('float32')
    for i, label in enumerate(labels):
        length = rng.randint(5, 9)
        along = rng.randint(0, size - length + 1)
        across = rng.randint(0, size)
        if label == 0:
            x[i, across, along:along + length] += 1.
        else:
            x[i, along:along + length, across] += 1.
    return x[..., None], labels.astype('int64')


def to_format(x, data_format):
    """Moves the channels axis of a channels_last batch to where `data_format` wants it."""
    if data_format == 'channels_last':
        return x
    return np.moveaxis(x, -1, 1)


def cnn(data_format=None, input_shape=(12, 12, 1)):
    """Conv-pool-BN-conv-pool-flatten-dense. `data_format=None` leaves every layer on the
    global image data format, as user code written for a keras.json setting does."""
    fmt = {} if data_format is None else {'data_format': data_format}
    channels_axis = 1 if (data_format or K.image_data_format()) == 'channels_first' else -1
    return Sequential([
        L.Conv2D(8, 3, activation='relu', input_shape=input_shape, **fmt),
        L.MaxPooling2D(**fmt),
        L.BatchNormalization(axis=channels_axis),
        L.Conv2D(16, 3, activation='relu', padding='same', **fmt),
        L.MaxPooling2D(**fmt),
        L.Flatten(**fmt),
        L.Dense(2, activation='softmax'),
    ])


def train_and_score(model, data_format):
    """Fits on 512 bar images and returns the accuracy on 256 unseen ones."""
    x, labels = bars(512, seed=0)
    x_test, labels_test = bars(256, seed=1)
    model.compile(optimizer=keras.optimizers.Adam(lr=0.01), loss='categorical_crossentropy',
                  metrics=['accuracy'])
    history = model.fit(to_format(x, data_format), one_hot(labels, 2), batch_size=32, epochs=10,
                        verbose=0)
    assert np.all(np.isfinite(history.history['loss']))
    assert history.history['loss'][-1] < history.history['loss'][0]
    loss, accuracy = model.evaluate(to_format(x_test, data_format), one_hot(labels_test, 2),
                                    verbose=0)
    return accuracy


MIN_ACCURACY = 0.9  # chance is 0.5


@pytest.mark.parametrize('data_format', FORMATS)
def test_cnn_learns_bar_orientation_with_the_format_set_per_layer(data_format):
    shape = (12, 12, 1) if data_format == 'channels_last' else (1, 12, 12)
    model = cnn(data_format, input_shape=shape)
    assert model.layers[0].data_format == data_format
    assert model.output_shape == (None, 2)
    assert train_and_score(model, data_format) >= MIN_ACCURACY


@pytest.fixture
def global_channels_first():
    previous = K.image_data_format()
    K.set_image_data_format('channels_first')
    try:
        yield
    finally:
        K.set_image_data_format(previous)
    assert K.image_data_format() == previous


def test_cnn_learns_bar_orientation_with_the_format_set_globally(global_channels_first):
    from torchk import config
    assert keras.backend.common.image_data_format() == 'channels_first'
    assert config.image_data_format() == 'channels_first'  # torchk reads Keras' setting
    model = cnn(None, input_shape=(1, 12, 12))
    assert all(layer.data_format == 'channels_first'
               for layer in model.layers if hasattr(layer, 'data_format'))
    assert K.int_shape(model.layers[0].output) == (None, 8, 10, 10)
    assert train_and_score(model, 'channels_first') >= MIN_ACCURACY


def test_backend_ops_default_to_the_global_format(global_channels_first):
    """A `K.*` conv/pool called with data_format=None follows keras.backend's setting."""
    x = np.random.RandomState(0).normal(size=(2, 3, 6, 5)).astype('float32')  # NCHW
    kernel = np.random.RandomState(1).normal(size=(3, 3, 3, 4)).astype('float32')
    x_in = K.placeholder(shape=(None, 3, 6, 5))
    conv = K.conv2d(x_in, K.variable(kernel))
    pool = K.pool2d(x_in, (2, 2), strides=(2, 2))
    assert K.int_shape(conv) == (None, 4, 4, 3)
    assert K.int_shape(pool) == (None, 3, 3, 2)
    got_conv, got_pool = K.function([x_in], [conv, pool])([x])
    assert got_conv.shape == (2, 4, 4, 3) and got_pool.shape == (2, 3, 3, 2)
    expected = np.moveaxis(np_conv2d(np.moveaxis(x, 1, -1), kernel, (1, 1), 'valid'), -1, 1)
    np.testing.assert_allclose(got_conv, expected, rtol=1e-5, atol=1e-5)


def test_cnn_trains_channels_first_from_keras_json(tmp_path):
    """image_data_format in keras.json, read by a fresh Keras process: the layers default to
    channels_first and a CNN trains on NCHW data."""
    home = tmp_path / 'keras_home'
    home.mkdir()
    (home / 'keras.json').write_text(json.dumps({
        'backend': 'torchk.core', 'floatx': 'float32', 'epsilon': 1e-7,
        'image_data_format': 'channels_first'}))
    script = textwrap.dedent('''
        import random, sys
        import numpy as np, torch
        torch.manual_seed(0); np.random.seed(0); random.seed(0); torch.set_num_threads(1)
        sys.path.insert(0, 'tests')
        import keras
        from keras import backend as K
        from integration.test_convolutional import bars, cnn, train_and_score
        from torchk import config
        assert K.backend() == 'torchk.core', K.backend()
        assert K.image_data_format() == 'channels_first', K.image_data_format()
        assert config.image_data_format() == 'channels_first'
        model = cnn(None, input_shape=(1, 12, 12))
        assert model.layers[0].data_format == 'channels_first'
        assert K.int_shape(model.layers[0].output) == (None, 8, 10, 10)
        print('accuracy', train_and_score(model, 'channels_first'))
    ''')
    env = dict(os.environ, KERAS_HOME=str(home), KERAS_BACKEND='torchk.core',
               TORCHK_DEVICE='cpu',
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-c', script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    accuracy = float(done.stdout.split('accuracy')[-1])
    assert accuracy >= MIN_ACCURACY


# ------------------------------------------------------------------------------------------
# Every conv / pool / padding / cropping / upsampling / locally-connected layer.
#
# A case is (id, make_layer(data_format), spatial shape, channels, formats): the layer is
# built on an input of that many channels in each listed format.

BOTH = FORMATS
LAST = ('channels_last',)

LAYER_CASES = [
    # 1D convolutions (Keras 2.3.1 only allows 'causal' with channels_last).
    ('Conv1D-valid', lambda f: L.Conv1D(3, 3, data_format=f), (10,), 2, BOTH),
    ('Conv1D-same-stride2', lambda f: L.Conv1D(3, 4, strides=2, padding='same', data_format=f),
     (11,), 2, BOTH),
    ('Conv1D-same-dilation2', lambda f: L.Conv1D(3, 3, padding='same', dilation_rate=2,
                                                 data_format=f), (10,), 2, BOTH),
    ('Conv1D-causal-dilation2', lambda f: L.Conv1D(3, 3, padding='causal', dilation_rate=2,
                                                   data_format=f), (10,), 2, LAST),
    ('Conv1D-causal-stride2', lambda f: L.Conv1D(3, 2, strides=2, padding='causal',
                                                 data_format=f), (9,), 2, LAST),
    # 2D / 3D convolutions.
    ('Conv2D-valid-stride', lambda f: L.Conv2D(4, (3, 2), strides=(2, 1), data_format=f),
     (9, 8), 3, BOTH),
    ('Conv2D-same-stride2', lambda f: L.Conv2D(4, 3, strides=2, padding='same', data_format=f),
     (8, 9), 3, BOTH),
    ('Conv2D-same-dilation2', lambda f: L.Conv2D(4, 3, padding='same', dilation_rate=2,
                                                 data_format=f), (9, 8), 3, BOTH),
    ('Conv3D-same-stride', lambda f: L.Conv3D(2, (2, 3, 2), strides=(1, 2, 1), padding='same',
                                              data_format=f), (5, 6, 4), 2, BOTH),
    ('Conv3D-valid-dilation', lambda f: L.Conv3D(2, 2, dilation_rate=(2, 1, 1), data_format=f),
     (5, 4, 3), 2, BOTH),
    # Separable and depthwise.
    ('SeparableConv1D-same-stride2', lambda f: L.SeparableConv1D(
        4, 3, strides=2, padding='same', depth_multiplier=2, data_format=f), (11,), 3, BOTH),
    ('SeparableConv1D-valid-dilation2', lambda f: L.SeparableConv1D(
        4, 3, dilation_rate=2, data_format=f), (11,), 3, BOTH),
    ('SeparableConv2D-same-stride2', lambda f: L.SeparableConv2D(
        4, 3, strides=2, padding='same', depth_multiplier=2, data_format=f), (9, 8), 3, BOTH),
    ('SeparableConv2D-valid-dilation2', lambda f: L.SeparableConv2D(
        4, (3, 2), dilation_rate=2, data_format=f), (9, 8), 3, BOTH),
    ('DepthwiseConv2D-same-stride2', lambda f: L.DepthwiseConv2D(
        3, strides=2, padding='same', depth_multiplier=2, data_format=f), (9, 8), 3, BOTH),
    ('DepthwiseConv2D-valid', lambda f: L.DepthwiseConv2D((2, 3), data_format=f),
     (7, 8), 3, BOTH),
    # Transposed convolutions.
    ('Conv2DTranspose-same-stride2', lambda f: L.Conv2DTranspose(
        3, 3, strides=2, padding='same', data_format=f), (5, 4), 2, BOTH),
    ('Conv2DTranspose-valid-output_padding', lambda f: L.Conv2DTranspose(
        3, (3, 2), strides=(2, 3), output_padding=(1, 2), data_format=f), (4, 5), 2, BOTH),
    ('Conv2DTranspose-same-output_padding', lambda f: L.Conv2DTranspose(
        3, 4, strides=3, padding='same', output_padding=1, data_format=f), (4, 3), 2, BOTH),
    ('Conv2DTranspose-valid-dilation2', lambda f: L.Conv2DTranspose(
        3, 3, dilation_rate=2, data_format=f), (4, 5), 2, BOTH),
    ('Conv3DTranspose-same-stride2', lambda f: L.Conv3DTranspose(
        2, 3, strides=2, padding='same', data_format=f), (3, 4, 2), 2, BOTH),
    ('Conv3DTranspose-valid-output_padding', lambda f: L.Conv3DTranspose(
        2, (2, 3, 2), strides=(2, 1, 2), output_padding=(1, 0, 1), data_format=f),
     (3, 4, 2), 2, BOTH),
    # Locally connected (Keras 2.3.1's LocallyConnected1D ignores data_format in call).
    ('LocallyConnected1D', lambda f: L.LocallyConnected1D(3, 3, strides=2), (11,), 2, LAST),
    ('LocallyConnected2D', lambda f: L.LocallyConnected2D(3, (3, 2), strides=(2, 1),
                                                          data_format=f), (7, 6), 2, BOTH),
    # Pooling.
    ('MaxPooling1D-valid', lambda f: L.MaxPooling1D(2, data_format=f), (9,), 3, BOTH),
    ('MaxPooling1D-same-stride2', lambda f: L.MaxPooling1D(3, strides=2, padding='same',
                                                           data_format=f), (10,), 3, BOTH),
    ('AveragePooling1D-valid', lambda f: L.AveragePooling1D(3, strides=1, data_format=f),
     (9,), 3, BOTH),
    ('AveragePooling1D-same-stride2', lambda f: L.AveragePooling1D(
        3, strides=2, padding='same', data_format=f), (10,), 3, BOTH),
    ('MaxPooling2D-valid', lambda f: L.MaxPooling2D(data_format=f), (9, 8), 3, BOTH),
    ('MaxPooling2D-same', lambda f: L.MaxPooling2D((3, 2), strides=2, padding='same',
                                                   data_format=f), (9, 8), 3, BOTH),
    ('AveragePooling2D-valid', lambda f: L.AveragePooling2D((2, 3), data_format=f),
     (9, 8), 3, BOTH),
    ('AveragePooling2D-same', lambda f: L.AveragePooling2D(3, strides=2, padding='same',
                                                           data_format=f), (9, 8), 3, BOTH),
    ('MaxPooling3D-valid', lambda f: L.MaxPooling3D(data_format=f), (5, 4, 6), 2, BOTH),
    ('MaxPooling3D-same', lambda f: L.MaxPooling3D(3, strides=2, padding='same',
                                                   data_format=f), (5, 4, 6), 2, BOTH),
    ('AveragePooling3D-valid', lambda f: L.AveragePooling3D((2, 3, 2), strides=1,
                                                            data_format=f), (5, 4, 6), 2, BOTH),
    ('AveragePooling3D-same', lambda f: L.AveragePooling3D(2, padding='same', data_format=f),
     (5, 4, 6), 2, BOTH),
    ('GlobalMaxPooling1D', lambda f: L.GlobalMaxPooling1D(data_format=f), (7,), 3, BOTH),
    ('GlobalAveragePooling1D', lambda f: L.GlobalAveragePooling1D(data_format=f), (7,), 3,
     BOTH),
    ('GlobalMaxPooling2D', lambda f: L.GlobalMaxPooling2D(data_format=f), (5, 4), 3, BOTH),
    ('GlobalAveragePooling2D', lambda f: L.GlobalAveragePooling2D(data_format=f), (5, 4), 3,
     BOTH),
    ('GlobalMaxPooling3D', lambda f: L.GlobalMaxPooling3D(data_format=f), (3, 5, 4), 2, BOTH),
    ('GlobalAveragePooling3D', lambda f: L.GlobalAveragePooling3D(data_format=f), (3, 5, 4), 2,
     BOTH),
    # Padding and cropping (the 1D ones have no data_format in Keras 2.3.1).
    ('ZeroPadding1D', lambda f: L.ZeroPadding1D((1, 2)), (6,), 3, LAST),
    ('ZeroPadding2D', lambda f: L.ZeroPadding2D(((1, 2), (0, 3)), data_format=f), (5, 4), 3,
     BOTH),
    ('ZeroPadding3D', lambda f: L.ZeroPadding3D(((1, 0), (2, 1), (0, 2)), data_format=f),
     (3, 4, 2), 2, BOTH),
    ('Cropping1D', lambda f: L.Cropping1D((1, 2)), (8,), 3, LAST),
    ('Cropping2D', lambda f: L.Cropping2D(((1, 2), (0, 3)), data_format=f), (7, 8), 3, BOTH),
    ('Cropping3D', lambda f: L.Cropping3D(((1, 0), (2, 1), (0, 2)), data_format=f),
     (4, 6, 5), 2, BOTH),
    # Upsampling.
    ('UpSampling1D', lambda f: L.UpSampling1D(3), (5,), 3, LAST),
    ('UpSampling2D-nearest', lambda f: L.UpSampling2D((2, 3), data_format=f), (4, 3), 3, BOTH),
    ('UpSampling2D-bilinear', lambda f: L.UpSampling2D((2, 3), interpolation='bilinear',
                                                       data_format=f), (4, 3), 3, BOTH),
    ('UpSampling3D', lambda f: L.UpSampling3D((2, 1, 3), data_format=f), (3, 4, 2), 2, BOTH),
]

LAYER_PARAMS = [pytest.param(make, spatial, channels, fmt, id='%s-%s' % (name, fmt))
                for name, make, spatial, channels, formats in LAYER_CASES for fmt in formats]


def input_shape_for(spatial, channels, data_format):
    if data_format == 'channels_first':
        return (channels,) + tuple(spatial)
    return tuple(spatial) + (channels,)


def fill_batch(shape, batch):
    return (batch,) + tuple(shape[1:])


@pytest.mark.parametrize('make, spatial, channels, data_format', LAYER_PARAMS)
def test_layer_shapes_and_training_step(make, spatial, channels, data_format):
    batch = 3
    shape = input_shape_for(spatial, channels, data_format)
    layer = make(data_format)
    if hasattr(layer, 'data_format'):
        assert layer.data_format == data_format
    inp = L.Input(shape=shape)
    out = layer(inp)
    declared = layer.compute_output_shape((None,) + shape)
    assert declared[0] is None

    # Symbolic shapes: the backend's inferred static shape and Keras' bookkeeping agree.
    assert K.int_shape(out) == declared
    features = Model(inp, out)
    assert features.output_shape == declared
    assert K.int_shape(features.output) == declared

    # Run-time shape.
    x = np.random.RandomState(0).normal(size=(batch,) + shape).astype('float32')
    y = features.predict(x)
    assert y.shape == fill_batch(declared, batch)
    assert np.all(np.isfinite(y))

    # One training step through the layer moves every one of its trainable weights.
    pooled = L.Flatten()(out) if len(declared) > 2 else out
    assert_one_step_moves_weights(inp, pooled, layer, x, batch)
    # The trained model still predicts with the declared shape.
    assert features.predict(x).shape == fill_batch(declared, batch)


def test_every_keras_spatial_layer_is_covered():
    """The table above names every conv/pool/padding/cropping/upsampling/locally-connected
    layer class that Keras 2.3.1 exports (aliases such as Convolution2D are the same class)."""
    from keras.layers import convolutional, local, pooling
    covered = {name.split('-')[0] for name, _, _, _, _ in LAYER_CASES}
    exported = set()
    for module in (convolutional, pooling, local):
        for name, value in vars(module).items():
            if (isinstance(value, type) and issubclass(value, keras.layers.Layer)
                    and value.__module__ == module.__name__ and not name.startswith('_')):
                exported.add(value.__name__)
    assert exported - covered == set()


# ------------------------------------------------------------------------------------------
# Numerical equality with a numpy convolution using TF's 'same' padding rule.

def tf_same_pads(size, kernel, stride):
    """TF 'same': output ceil(size / stride); the odd pixel of padding goes after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def dilate(kernel, dilation):
    """Inserts dilation - 1 zeros between the taps of an HW.. kernel."""
    (kh, kw), (dh, dw) = kernel.shape[:2], dilation
    out = np.zeros(((kh - 1) * dh + 1, (kw - 1) * dw + 1) + kernel.shape[2:], kernel.dtype)
    out[::dh, ::dw] = kernel
    return out


def np_conv2d(x, kernel, strides, padding, bias=None, dilation=(1, 1)):
    """Cross-correlation of NHWC `x` with an HWIO `kernel` (Keras' layout), as TF computes."""
    kernel = dilate(kernel, dilation)
    (sh, sw), (kh, kw) = strides, kernel.shape[:2]
    if padding == 'same':
        (top, bottom), (left, right) = (tf_same_pads(x.shape[1], kh, sh),
                                        tf_same_pads(x.shape[2], kw, sw))
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, h, w, _ = x.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    out = np.zeros((n, oh, ow, kernel.shape[3]), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :].astype(np.float64)
            out[:, i, j, :] = np.tensordot(patch, kernel, axes=([1, 2, 3], [0, 1, 2]))
    if bias is not None:
        out += bias
    return out.astype('float32')


def np_depthwise_conv2d(x, kernel, strides, padding, dilation=(1, 1)):
    """TF depthwise: kernel (kh, kw, in, multiplier); output channel c * multiplier + m."""
    outs = [np_conv2d(x[..., c:c + 1], kernel[:, :, c:c + 1, :], strides, padding,
                      dilation=dilation) for c in range(x.shape[-1])]
    return np.concatenate(outs, axis=-1)


def np_conv2d_transpose(x, kernel, out_size, strides, padding, dilation=(1, 1)):
    """TF's conv2d_transpose (the gradient of conv2d from `out_size` to x's size) of NHWC `x`
    with Keras' transposed kernel (kh, kw, filters, in): every input pixel scatters its
    kernel at stride `strides`; TF's forward-'same' padding is cut off the front."""
    kernel = dilate(kernel, dilation)
    (kh, kw), (sh, sw) = kernel.shape[:2], strides
    n, h, w, _ = x.shape
    front = [0, 0]
    if padding == 'same':
        front = [max((size - 1) * s + k - out, 0) // 2 for size, s, k, out
                 in zip((h, w), strides, (kh, kw), out_size)]
    out = np.zeros((n, out_size[0] + kh + sh, out_size[1] + kw + sw, kernel.shape[2]))
    for i in range(h):
        for j in range(w):
            out[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :] += np.einsum(
                'nc,abfc->nabf', x[:, i, j, :].astype(np.float64), kernel)
    return out[:, front[0]:front[0] + out_size[0], front[1]:front[1] + out_size[1]]


def np_pool2d(x, pool, strides, padding, mode):
    """TF pooling of NHWC `x`; 'same' windows are clipped to the image, so averages count
    only real pixels."""
    n, h, w, c = x.shape
    if padding == 'same':
        (top, _), (left, _) = (tf_same_pads(h, pool[0], strides[0]),
                               tf_same_pads(w, pool[1], strides[1]))
        oh, ow = -(-h // strides[0]), -(-w // strides[1])
    else:
        top = left = 0
        oh, ow = (h - pool[0]) // strides[0] + 1, (w - pool[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - top, j * strides[1] - left
            window = x[:, max(r0, 0):r0 + pool[0], max(c0, 0):c0 + pool[1], :]
            out[:, i, j] = window.max(axis=(1, 2)) if mode == 'max' else window.mean(axis=(1, 2))
    return out


def np_local_conv2d(x_keras, kernel, bias, kernel_size, strides, data_format):
    """Keras 2.3.1's TF-backend local_conv2d + bias_add, step by step: the patch of output
    (i, j) is x[:, rows, cols, :] (channels_last) or x[:, :, rows, cols] (channels_first)
    flattened in that order; the (rows, cols, filters) bias is reshaped, not transposed, for
    channels_first."""
    rows, cols = kernel_size
    (sr, sc) = strides
    out_rows, out_cols, filters = bias.shape
    out = np.zeros((x_keras.shape[0], out_rows, out_cols, filters))
    for i in range(out_rows):
        for j in range(out_cols):
            if data_format == 'channels_first':
                patch = x_keras[:, :, i * sr:i * sr + rows, j * sc:j * sc + cols]
            else:
                patch = x_keras[:, i * sr:i * sr + rows, j * sc:j * sc + cols, :]
            out[:, i, j] = patch.reshape(len(patch), -1).dot(kernel[i * out_cols + j])
    if data_format == 'channels_first':
        return np.moveaxis(out, -1, 1) + bias.reshape((filters, out_rows, out_cols))
    return out + bias


@pytest.mark.parametrize('data_format', FORMATS)
@pytest.mark.parametrize('size', [(8, 9), (7, 7)], ids=['asymmetric-pad', 'symmetric-pad'])
def test_conv2d_same_stride2_equals_numpy(data_format, size):
    rng = np.random.RandomState(5)
    kernel = rng.normal(size=(3, 4, 3, 5)).astype('float32')  # non-square: (kh, kw, in, out)
    bias = rng.normal(size=(5,)).astype('float32')
    x = rng.normal(size=(2,) + size + (3,)).astype('float32')  # NHWC
    expected = np_conv2d(x, kernel, (2, 2), 'same', bias)

    layer = L.Conv2D(5, (3, 4), strides=2, padding='same', data_format=data_format,
                     input_shape=input_shape_for(size, 3, data_format))
    model = Sequential([layer])
    model.set_weights([kernel, bias])
    got = model.predict(to_format(x, data_format))
    if data_format == 'channels_first':
        got = np.moveaxis(got, 1, -1)
    assert got.shape == expected.shape == (2, 4, -(-size[1] // 2), 5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('data_format', FORMATS)
def test_conv2d_valid_stride_equals_numpy(data_format):
    rng = np.random.RandomState(6)
    kernel = rng.normal(size=(2, 3, 2, 4)).astype('float32')
    bias = rng.normal(size=(4,)).astype('float32')
    x = rng.normal(size=(3, 7, 9, 2)).astype('float32')
    expected = np_conv2d(x, kernel, (2, 3), 'valid', bias)
    model = Sequential([L.Conv2D(4, (2, 3), strides=(2, 3), data_format=data_format,
                                 input_shape=input_shape_for((7, 9), 2, data_format))])
    model.set_weights([kernel, bias])
    got = model.predict(to_format(x, data_format))
    if data_format == 'channels_first':
        got = np.moveaxis(got, 1, -1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def np_resize_bilinear(x, factors):
    """TF 1 `resize_bilinear` (align_corners=False, no half-pixel centers), which Keras 2.3.1's
    UpSampling2D(interpolation='bilinear') calls: output pixel i samples input i / factor."""
    for axis, factor in zip((1, 2), factors):
        size = x.shape[axis]
        src = np.arange(size * factor) / factor
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, size - 1)
        frac = (src - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
        x = np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac
    return x


def _weights(rng, *shapes):
    return [rng.normal(size=shape).astype('float32') for shape in shapes]


def case_conv2d_dilated(f, rng):
    x = rng.normal(size=(2, 9, 8, 2)).astype('float32')
    kernel, bias = _weights(rng, (3, 2, 2, 3), (3,))
    layer = L.Conv2D(3, (3, 2), padding='same', dilation_rate=(2, 3), data_format=f)
    return layer, x, [kernel, bias], np_conv2d(x, kernel, (1, 1), 'same', bias, (2, 3))


def case_conv1d_same_stride2(f, rng):
    x = rng.normal(size=(2, 11, 3)).astype('float32')
    kernel, bias = _weights(rng, (4, 3, 2), (2,))
    expected = np_conv2d(x[:, None], kernel[None], (1, 2), 'same', bias)[:, 0]
    return L.Conv1D(2, 4, strides=2, padding='same', data_format=f), x, [kernel, bias], expected


def case_conv1d_causal_dilated(f, rng):
    x = rng.normal(size=(2, 10, 3)).astype('float32')
    kernel, bias = _weights(rng, (3, 3, 2), (2,))
    padded = np.pad(x, ((0, 0), (4, 0), (0, 0)))  # (kernel - 1) * dilation zeros in front
    expected = np_conv2d(padded[:, None], kernel[None], (1, 1), 'valid', bias, (1, 2))[:, 0]
    layer = L.Conv1D(2, 3, padding='causal', dilation_rate=2, data_format=f)
    return layer, x, [kernel, bias], expected


def case_depthwise(f, rng):
    x = rng.normal(size=(2, 8, 9, 3)).astype('float32')
    kernel, bias = _weights(rng, (3, 3, 3, 2), (6,))
    layer = L.DepthwiseConv2D(3, strides=2, padding='same', depth_multiplier=2, data_format=f)
    return layer, x, [kernel, bias], np_depthwise_conv2d(x, kernel, (2, 2), 'same') + bias


def case_separable(f, rng):
    x = rng.normal(size=(2, 8, 9, 3)).astype('float32')
    depthwise, pointwise, bias = _weights(rng, (3, 2, 3, 2), (1, 1, 6, 4), (4,))
    layer = L.SeparableConv2D(4, (3, 2), strides=2, padding='same', depth_multiplier=2,
                              data_format=f)
    expected = np_conv2d(np_depthwise_conv2d(x, depthwise, (2, 2), 'same'), pointwise, (1, 1),
                         'valid', bias)
    return layer, x, [depthwise, pointwise, bias], expected


def _transpose_case(rng, in_size, kernel_size, out_size, strides, padding, dilation=(1, 1)):
    x = rng.normal(size=(2,) + in_size + (3,)).astype('float32')
    kernel, bias = _weights(rng, kernel_size + (2, 3), (2,))
    return x, [kernel, bias], np_conv2d_transpose(x, kernel, out_size, strides, padding,
                                                  dilation) + bias


def case_transpose_same_output_padding(f, rng):
    # out = (4 - 1) * 3 + 4 - 2 * 2 + 1 = 10: TF cuts (9 + 4 - 10) // 2 = 1 row in front.
    x, weights, expected = _transpose_case(rng, (4, 3), (4, 4), (10, 7), (3, 3), 'same')
    layer = L.Conv2DTranspose(2, 4, strides=3, padding='same', output_padding=1, data_format=f)
    return layer, x, weights, expected


def case_transpose_valid_output_padding(f, rng):
    x, weights, expected = _transpose_case(rng, (4, 5), (3, 2), (10, 16), (2, 3), 'valid')
    layer = L.Conv2DTranspose(2, (3, 2), strides=(2, 3), output_padding=(1, 2), data_format=f)
    return layer, x, weights, expected


def case_transpose_same_stride2(f, rng):
    x, weights, expected = _transpose_case(rng, (5, 4), (3, 3), (10, 8), (2, 2), 'same')
    return L.Conv2DTranspose(2, 3, strides=2, padding='same', data_format=f), x, weights, expected


def case_transpose_dilated(f, rng):
    x, weights, expected = _transpose_case(rng, (4, 5), (3, 3), (8, 9), (1, 1), 'valid', (2, 2))
    return L.Conv2DTranspose(2, 3, dilation_rate=2, data_format=f), x, weights, expected


def case_average_pool_same(f, rng):
    x = rng.normal(size=(2, 9, 8, 3)).astype('float32')
    layer = L.AveragePooling2D(3, strides=2, padding='same', data_format=f)
    return layer, x, [], np_pool2d(x, (3, 3), (2, 2), 'same', 'avg')


def case_max_pool_same(f, rng):
    x = rng.normal(size=(2, 9, 8, 3)).astype('float32')
    layer = L.MaxPooling2D((3, 2), strides=(2, 3), padding='same', data_format=f)
    return layer, x, [], np_pool2d(x, (3, 2), (2, 3), 'same', 'max')


def case_locally_connected_2d(f, rng):
    x = rng.normal(size=(2, 7, 6, 2)).astype('float32')
    kernel, bias = _weights(rng, (3 * 5, 3 * 2 * 2, 4), (3, 5, 4))
    layer = L.LocallyConnected2D(4, (3, 2), strides=(2, 1), data_format=f)
    expected = np_local_conv2d(to_format(x, f), kernel, bias, (3, 2), (2, 1), f)
    if f == 'channels_first':
        expected = np.moveaxis(expected, 1, -1)
    return layer, x, [kernel, bias], expected


def case_locally_connected_1d(f, rng):
    x = rng.normal(size=(2, 11, 2)).astype('float32')
    kernel, bias = _weights(rng, (5, 3 * 2, 4), (5, 4))
    expected = np.stack([x[:, 2 * i:2 * i + 3].reshape(2, -1).dot(kernel[i])
                         for i in range(5)], axis=1) + bias
    return L.LocallyConnected1D(4, 3, strides=2), x, [kernel, bias], expected


def case_upsampling_bilinear(f, rng):
    x = rng.normal(size=(2, 4, 3, 3)).astype('float32')
    layer = L.UpSampling2D((2, 3), interpolation='bilinear', data_format=f)
    return layer, x, [], np_resize_bilinear(x, (2, 3))


NUMERIC_CASES = [
    (case_conv2d_dilated, BOTH), (case_conv1d_same_stride2, BOTH),
    (case_conv1d_causal_dilated, LAST), (case_depthwise, BOTH), (case_separable, BOTH),
    (case_transpose_same_output_padding, BOTH), (case_transpose_valid_output_padding, BOTH),
    (case_transpose_same_stride2, BOTH), (case_transpose_dilated, BOTH),
    (case_average_pool_same, BOTH), (case_max_pool_same, BOTH),
    (case_locally_connected_2d, BOTH), (case_locally_connected_1d, LAST),
    (case_upsampling_bilinear, BOTH),
]


@pytest.mark.parametrize('case, data_format', [
    pytest.param(case, fmt, id='%s-%s' % (case.__name__[5:], fmt))
    for case, formats in NUMERIC_CASES for fmt in formats])
def test_layer_predictions_equal_numpy(case, data_format):
    """Keras-layout weights set on the layer give TF's numbers in either format."""
    layer, x, weights, expected = case(data_format, np.random.RandomState(11))
    model = Sequential([L.InputLayer(input_shape=to_format(x, data_format).shape[1:]), layer])
    if weights:
        assert [w.shape for w in layer.get_weights()] == [w.shape for w in weights]
        layer.set_weights(weights)
    got = model.predict(to_format(x, data_format))
    if data_format == 'channels_first':
        got = np.moveaxis(got, 1, -1)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Saving and loading weights.

def small_convnet(data_format):
    shape = input_shape_for((10, 9), 3, data_format)
    axis = 1 if data_format == 'channels_first' else -1
    inp = L.Input(shape=shape)
    x = L.Conv2D(6, 3, padding='same', activation='relu', data_format=data_format)(inp)
    x = L.BatchNormalization(axis=axis)(x)
    x = L.SeparableConv2D(5, 3, strides=2, data_format=data_format)(x)
    x = L.MaxPooling2D(data_format=data_format)(x)
    x = L.Conv2DTranspose(4, 2, strides=2, data_format=data_format)(x)
    x = L.GlobalAveragePooling2D(data_format=data_format)(x)
    out = L.Dense(3, activation='softmax')(x)
    return Model(inp, out)


def test_save_weights_then_load_gives_identical_predictions(tmp_path):
    x = np.random.RandomState(2).normal(size=(16, 10, 9, 3)).astype('float32')
    y = one_hot(np.random.RandomState(3).randint(0, 3, 16), 3)
    model = small_convnet('channels_last')
    model.compile(optimizer='adam', loss='categorical_crossentropy')
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)  # moves weights and BN statistics
    expected = model.predict(x)
    path = str(tmp_path / 'weights.h5')
    model.save_weights(path)

    fresh = small_convnet('channels_last')
    assert not np.allclose(fresh.predict(x), expected)
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(x), expected)
    for a, b in zip(model.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_channels_last_weights_drive_a_channels_first_model_identically(tmp_path):
    """Keras kernels have one layout whatever the data format, as in TF: weights saved from a
    channels_last model, loaded into the channels_first one, give the same outputs on the
    transposed input."""
    x = np.random.RandomState(4).normal(size=(8, 10, 9, 3)).astype('float32')
    model = small_convnet('channels_last')
    path = str(tmp_path / 'weights.h5')
    model.save_weights(path)
    first = small_convnet('channels_first')
    first.load_weights(path)
    np.testing.assert_allclose(first.predict(to_format(x, 'channels_first')), model.predict(x),
                               rtol=1e-5, atol=1e-6)
