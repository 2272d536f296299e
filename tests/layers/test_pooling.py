"""torchk.layers' global pooling with `keepdims` (TF's values are in test_tf_keras_models.py)."""
import numpy as np
import pytest

import keras

from torchk.layers import GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalMaxPooling3D

X = np.random.RandomState(0).randn(2, 4, 5, 3).astype('float32')


@pytest.mark.parametrize('data_format, axes', [('channels_last', (1, 2)),
                                               ('channels_first', (2, 3))])
@pytest.mark.parametrize('keepdims', [False, True])
def test_average_pooling_2d(data_format, axes, keepdims):
    inputs = keras.Input(X.shape[1:])
    layer = GlobalAveragePooling2D(data_format=data_format, keepdims=keepdims)
    model = keras.Model(inputs, layer(inputs))
    expected = X.mean(axis=axes, keepdims=keepdims)
    np.testing.assert_allclose(model.predict(X), expected, rtol=1e-6)
    assert model.output_shape == (None,) + expected.shape[1:]
    assert keras.layers.deserialize({'class_name': 'GlobalAveragePooling2D',
                                     'config': layer.get_config()}).keepdims == keepdims


def test_max_pooling_3d_keepdims():
    x = X.reshape(2, 2, 2, 5, 3)
    inputs = keras.Input(x.shape[1:])
    model = keras.Model(inputs, GlobalMaxPooling3D(keepdims=True)(inputs))
    np.testing.assert_allclose(model.predict(x), x.max(axis=(1, 2, 3), keepdims=True))


@pytest.mark.parametrize('keepdims', [False, True])
def test_average_pooling_1d_masked(keepdims):
    x = np.random.RandomState(1).randn(2, 5, 3).astype('float32')
    x[0, 3:] = 0.
    inputs = keras.Input((5, 3))
    pooled = GlobalAveragePooling1D(keepdims=keepdims)(keras.layers.Masking()(inputs))
    expected = np.stack([x[0, :3].mean(0), x[1].mean(0)])
    if keepdims:
        expected = expected[:, None]
    np.testing.assert_allclose(keras.Model(inputs, pooled).predict(x), expected, rtol=1e-6)


@pytest.mark.parametrize('name', ['GlobalAveragePooling2D', 'GlobalMaxPooling2D',
                                  'GlobalAveragePooling3D', 'GlobalMaxPooling3D'])
@pytest.mark.parametrize('dim_ordering, data_format', [('th', 'channels_first'),
                                                        ('tf', 'channels_last')])
def test_legacy_dim_ordering(name, dim_ordering, data_format):
    with pytest.warns(UserWarning, match='Keras 2 API'):
        layer = getattr(keras.layers, name)(dim_ordering=dim_ordering)
    assert layer.data_format == data_format
    assert layer.keepdims is False
    alias = name.replace('Average', 'Avg').replace('Pooling', 'Pool')
    assert getattr(keras.layers, alias) is type(layer)
