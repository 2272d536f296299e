"""torchk.layers' Conv1D/Conv2D/Conv3D with `groups`: each group against Keras' plain
convolution of its channels, configurations, saving and errors (TF's values of grouped
models: tests/applications, ConvNeXt and RegNet)."""
import numpy as np
import pytest

import keras
from keras import backend as K

from torchk.layers import Conv1D, Conv2D, Conv3D

RNG = np.random.RandomState(0)


def _channels(x, start, stop, data_format):
    return x[:, start:stop] if data_format == 'channels_first' else x[..., start:stop]


@pytest.mark.parametrize('layer_class, spatial', [(Conv1D, (9,)), (Conv2D, (7, 6)),
                                                  (Conv3D, (5, 4, 6))])
@pytest.mark.parametrize('data_format', ['channels_last', 'channels_first'])
@pytest.mark.parametrize('groups, filters', [(2, 4), (3, 6), (6, 6)])
def test_each_group_is_the_plain_convolution_of_its_channels(layer_class, spatial, data_format,
                                                             groups, filters):
    channels = 6
    shape = ((channels,) + spatial) if data_format == 'channels_first' else (spatial + (channels,))
    x = RNG.randn(2, *shape).astype('float32')
    layer = layer_class(filters, 3, padding='same', groups=groups, data_format=data_format,
                        bias_initializer='random_normal')
    inputs = keras.Input(shape)
    model = keras.Model(inputs, layer(inputs))
    kernel, bias = layer.get_weights()
    assert kernel.shape == (3,) * len(spatial) + (channels // groups, filters)

    step_in, step_out = channels // groups, filters // groups
    parts = []
    for group in range(groups):
        plain = getattr(keras.layers.convolutional, layer_class.__name__)(
            step_out, 3, padding='same', data_format=data_format)
        plain_inputs = keras.Input(_channels(x, 0, step_in, data_format).shape[1:])
        plain_model = keras.Model(plain_inputs, plain(plain_inputs))
        plain.set_weights([kernel[..., group * step_out:(group + 1) * step_out],
                           bias[group * step_out:(group + 1) * step_out]])
        parts.append(plain_model.predict(_channels(x, group * step_in, (group + 1) * step_in,
                                                   data_format)))
    expected = np.concatenate(parts, axis=1 if data_format == 'channels_first' else -1)
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-5, atol=1e-5)
    assert model.output_shape == (None,) + expected.shape[1:]


def test_trains_saves_and_loads(tmp_path):
    x = RNG.randn(8, 6, 6, 4).astype('float32')
    y = RNG.randn(8, 6, 6, 8).astype('float32')
    inputs = keras.Input((6, 6, 4))
    model = keras.Model(inputs, keras.layers.Conv2D(8, 3, padding='same', groups=4)(inputs))
    model.compile('sgd', 'mse')
    before = model.get_weights()[0].copy()
    model.fit(x, y, epochs=1, verbose=0)
    assert not np.allclose(model.get_weights()[0], before)
    model.save(str(tmp_path / 'grouped.h5'))
    loaded = keras.models.load_model(str(tmp_path / 'grouped.h5'))
    assert loaded.layers[-1].groups == 4
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)


def test_keras_names_are_the_grouped_layers_and_plain_configs_stay_keras():
    assert keras.layers.Conv2D is Conv2D and keras.layers.Convolution2D is Conv2D
    assert 'groups' not in Conv2D(4, 3).get_config()
    assert Conv2D(4, 3, groups=2).get_config()['groups'] == 2


def test_backend_convolution_infers_groups_from_the_kernel():
    x = K.constant(RNG.randn(1, 5, 5, 4))
    kernel = RNG.randn(3, 3, 2, 6).astype('float32')
    whole = K.eval(K.conv2d(x, K.constant(kernel)))
    halves = [K.eval(K.conv2d(x[..., 2 * g:2 * g + 2], K.constant(kernel[..., 3 * g:3 * g + 3])))
              for g in range(2)]
    np.testing.assert_allclose(whole, np.concatenate(halves, -1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('make, message', [
    (lambda: Conv2D(6, 3, groups=4), r'groups=4; expected a positive integer that divides '
                                     r'filters \(6\)'),
    (lambda: Conv2D(6, 3, groups=0), 'groups=0'),
    (lambda: Conv2D(6, 3, groups=3)(keras.Input((5, 5, 4))),
     r'groups=3 must divide the input channels \(4\)'),
    (lambda: K.conv2d(K.constant(np.zeros((1, 5, 5, 4))), K.constant(np.zeros((3, 3, 2, 5)))),
     r"input channels \(4\) must equal the kernel's input channels \(2\); or that times a "
     r"number of groups dividing the kernel's output channels"),
])
def test_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()
