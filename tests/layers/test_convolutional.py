"""torchk.layers.Conv1DTranspose: channels-first against a numpy transposed convolution, and
its errors (channels-last against TF is in test_tf_keras_models.py)."""
import numpy as np
import pytest

import keras

from torchk.layers import Conv1DTranspose


def _numpy_conv1d_transpose(x, kernel, stride, dilation, crop_start, length):
    """Scatters each input step through the kernel, then crops to `length` from `crop_start`."""
    batch, steps, _ = x.shape
    size = kernel.shape[0]
    full = np.zeros((batch, (steps - 1) * stride + (size - 1) * dilation + 1 + length,
                     kernel.shape[1]))
    for t in range(steps):
        for k in range(size):
            full[:, t * stride + k * dilation] += x[:, t] @ kernel[k].T
    return full[:, crop_start:crop_start + length]


@pytest.mark.parametrize('config, crop_start, length', [
    ({'kernel_size': 3, 'strides': 1, 'padding': 'valid'}, 0, 9),
    ({'kernel_size': 3, 'strides': 2, 'padding': 'same'}, 0, 14),
    ({'kernel_size': 4, 'strides': 3, 'padding': 'valid', 'output_padding': 2}, 0, 24),
    ({'kernel_size': 3, 'dilation_rate': 2, 'padding': 'valid'}, 0, 11),
], ids=['valid', 'same_strided', 'output_padding', 'dilated'])
@pytest.mark.parametrize('data_format', ['channels_last', 'channels_first'])
def test_matches_numpy_transposed_convolution(config, crop_start, length, data_format):
    rng = np.random.RandomState(0)
    x = rng.randn(2, 7, 3).astype('float32')
    layer = Conv1DTranspose(4, data_format=data_format, use_bias=False, **config)
    shape = (7, 3) if data_format == 'channels_last' else (3, 7)
    inputs = keras.Input(shape)
    model = keras.Model(inputs, layer(inputs))
    kernel = rng.randn(config['kernel_size'], 4, 3).astype('float32')
    layer.set_weights([kernel])
    feed = x if data_format == 'channels_last' else x.transpose(0, 2, 1)
    result = model.predict(feed)
    if data_format == 'channels_first':
        result = result.transpose(0, 2, 1)
    expected = _numpy_conv1d_transpose(x, kernel, config.get('strides', 1),
                                       config.get('dilation_rate', 1), crop_start, length)
    assert model.output_shape[1 if data_format == 'channels_last' else 2] == length
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('config, message', [
    ({'padding': 'causal'}, 'padding'),
    ({'groups': 2}, 'groups=2'),
    ({'strides': 2, 'output_padding': 2}, 'output_padding'),
])
def test_invalid_arguments_raise(config, message):
    with pytest.raises(ValueError, match=message):
        Conv1DTranspose(4, 3, **config)
