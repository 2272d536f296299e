"""tf.keras' `Conv.convolution_op` on Keras 2.3.1's convolution layers
(torchk/keras/layers/convolutional.py)."""
import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf

RNG = np.random.RandomState(0)


def _reference(x, kernel, rank):
    """Channels-last valid convolution with torch (the reference)."""
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d,
            3: torch.nn.functional.conv3d}[rank]
    t = torch.as_tensor(np.moveaxis(x, -1, 1))
    k = torch.as_tensor(np.moveaxis(np.moveaxis(kernel, -1, 0), -1, 1))
    return np.moveaxis(conv(t, k).numpy(), 1, -1)


@pytest.mark.parametrize('rank', [1, 2, 3])
def test_convolution_op_is_the_layers_convolution(rank):
    x = RNG.randn(2, *(5,) * rank, 3).astype('float32')
    layer = getattr(keras.layers, 'Conv%dD' % rank)(4, 2, use_bias=False)
    y = np.asarray(layer(x))
    kernel = RNG.randn(*layer.kernel.shape).astype('float32')
    np.testing.assert_allclose(np.asarray(layer.convolution_op(x, kernel)),
                               _reference(x, kernel, rank), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y, _reference(x, layer.get_weights()[0], rank),
                               rtol=1e-4, atol=1e-5)


class StandardizedConv2D(keras.layers.Conv2D):
    """keras-io's weight-standardized convolution: overrides only `convolution_op`."""

    def convolution_op(self, inputs, kernel):
        mean, var = tf.nn.moments(kernel, axes=[0, 1, 2], keepdims=True)
        return super().convolution_op(inputs, (kernel - mean) / tf.sqrt(var + 1e-10))


def test_an_overridden_convolution_op_is_what_the_layer_computes():
    x = RNG.randn(2, 6, 6, 3).astype('float32')
    layer = StandardizedConv2D(4, 3, bias_initializer='ones', activation='relu')
    symbolic = keras.Model(*(lambda i: (i, layer(i)))(keras.Input((6, 6, 3))))
    kernel = layer.get_weights()[0]
    standardized = (kernel - kernel.mean((0, 1, 2))) / np.sqrt(kernel.var((0, 1, 2)) + 1e-10)
    expected = np.maximum(_reference(x, standardized, 2) + 1., 0.)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(symbolic.predict(x), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('policy', ['mixed_bfloat16', 'mixed_float16'])
def test_convolution_runs_in_the_mixed_precision_policy(policy):
    """Replacing the convolution's call keeps it in its layer's policy: inputs and the
    float32 kernel are read in the compute dtype."""
    x = RNG.rand(2, 5, 5, 3).astype('float32')
    keras.mixed_precision.set_global_policy(policy)
    try:
        layer = keras.layers.Conv2D(4, 3, padding='same')
        symbol = layer(keras.Input((5, 5, 3)))
    finally:
        keras.mixed_precision.set_global_policy('float32')
    compute = keras.mixed_precision.Policy(policy).compute_dtype
    assert symbol.dtype == compute
    assert layer.kernel.dtype == torch.float32
    low = getattr(torch, compute)
    kernel = torch.as_tensor(layer.get_weights()[0]).to(low).float().numpy()
    expected = torch.nn.functional.conv2d(
        torch.as_tensor(np.moveaxis(x, -1, 1)).to(low).float(),
        torch.as_tensor(np.transpose(kernel, (3, 2, 0, 1))), padding=1)
    actual = np.asarray(keras.Model(*(lambda i: (i, layer(i)))(keras.Input((5, 5, 3)))).predict(x))
    np.testing.assert_allclose(actual.astype('float32'), np.moveaxis(expected.numpy(), 1, -1),
                               atol=0.05, rtol=0.02)
