"""torchk.layers.preprocessing in training and its errors. Inference against TF is in
test_tf_keras_models.py (identity of every random layer included)."""
import numpy as np
import pytest

import keras
from keras import backend as K

from torchk.layers import (CenterCrop, Normalization, RandomBrightness, RandomContrast,
                           RandomCrop, RandomFlip, RandomHeight, RandomRotation,
                           RandomTranslation, RandomWidth, RandomZoom, Rescaling, Resizing)

IMAGES = np.random.RandomState(0).uniform(0., 255., (16, 5, 6, 3)).astype('float32')


def _in_training(layer, images=IMAGES):
    x = K.placeholder(shape=(None,) + images.shape[1:])
    return K.function([x, K.learning_phase()], [layer(x)])([images, 1])[0]


@pytest.mark.parametrize('mode, choices', [
    ('horizontal', lambda x: [x, x[:, ::-1]]),
    ('vertical', lambda x: [x, x[::-1]]),
    ('horizontal_and_vertical', lambda x: [x, x[:, ::-1], x[::-1], x[::-1, ::-1]]),
])
def test_random_flip_flips_each_image_in_training(mode, choices):
    flipped = _in_training(RandomFlip(mode))
    picks = [[np.array_equal(out, choice) for choice in choices(image)]
             for image, out in zip(IMAGES, flipped)]
    assert all(any(pick) for pick in picks)
    assert len({pick.index(True) for pick in picks}) > 1  # not the same choice for all 16


def test_random_contrast_scales_deviation_by_one_factor_in_range():
    contrasted = _in_training(RandomContrast((0.2, 0.5)))
    mean = IMAGES.mean(axis=(1, 2), keepdims=True)
    unclipped = (contrasted > 0.) & (contrasted < 255.) & (np.abs(IMAGES - mean) > 1.)
    factors = ((contrasted - mean) / (IMAGES - mean))[unclipped]
    assert 0.8 - 1e-4 <= factors.min() and factors.max() <= 1.5 + 1e-4
    np.testing.assert_allclose(factors, factors[0], rtol=1e-3)


def test_random_brightness_adds_one_delta_per_image_in_range():
    brightened = _in_training(RandomBrightness(0.1))
    for image, out in zip(IMAGES, brightened):
        unclipped = (out > 0.) & (out < 255.)
        delta = (out - image)[unclipped]
        np.testing.assert_allclose(delta, delta[0], atol=1e-3)
        assert abs(delta[0]) <= 0.1 * 255. + 1e-3


def test_random_crop_takes_a_window_in_training():
    cropped = _in_training(RandomCrop(3, 4))
    windows = [IMAGES[:, top:top + 3, left:left + 4]
               for top in range(3) for left in range(3)]
    assert any(np.array_equal(cropped, window) for window in windows)


@pytest.mark.parametrize('layer', [RandomRotation(0.2), RandomZoom(0.1), RandomHeight(0.2),
                                   RandomTranslation(0.1, 0.1), RandomWidth(0.2)],
                         ids=lambda layer: type(layer).__name__)
def test_geometric_augmentations_pass_through_in_training(layer):
    np.testing.assert_array_equal(_in_training(layer), IMAGES)


@pytest.mark.parametrize('make, message', [
    (lambda: Normalization(mean=0.5), 'both `mean` and `variance`'),
    (lambda: Resizing(3, 3, 'lanczos3'), "interpolation='lanczos3'"),
    (lambda: RandomFlip('diagonal'), "mode='diagonal'"),
    (lambda: RandomContrast(1.5), 'factor=1.5'),
])
def test_invalid_arguments_raise(make, message):
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace('`', '.')):
        make()


@pytest.mark.parametrize('make', [lambda: Resizing(3, 4), lambda: CenterCrop(3, 4),
                                  lambda: CenterCrop(8, 8),
                                  lambda: Resizing(3, 4, crop_to_aspect_ratio=True)])
def test_images_of_unknown_size_are_sized_when_run(make):
    """keras-io's engineers guide: `CenterCrop` on `Input((None, None, 3))`; the layer
    computes on the sizes of the images it is given, as on images of known size."""
    layer = make()
    inputs = keras.Input((None, None, 3))
    outputs = layer(inputs)
    assert K.int_shape(outputs) == (None, layer.height, layer.width, 3)
    actual = K.function([inputs], [outputs])([IMAGES])[0]
    reference = make()
    known = keras.Input(IMAGES.shape[1:])
    np.testing.assert_allclose(actual, K.function([known], [reference(known)])([IMAGES])[0],
                               rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize('axis, kept', [(-1, (3,)), ((1, 3), (1, 3)), (None, ())])
@pytest.mark.parametrize('batch_size', [None, 5])
def test_normalization_adapts_to_the_moments_of_its_data(axis, kept, batch_size):
    images = IMAGES * np.array([1., 2., 0.5], 'float32') - 30.
    layer = Normalization(axis=axis)
    layer.adapt(images, batch_size=batch_size)
    reduced = tuple(d for d in range(4) if d not in kept)
    np.testing.assert_allclose(K.get_value(layer.adapt_mean),
                               images.astype('float64').mean(reduced), rtol=1e-6)
    np.testing.assert_allclose(K.get_value(layer.adapt_variance),
                               images.astype('float64').var(reduced), rtol=1e-5)
    assert int(K.get_value(layer.count)) == images.size // max(
        1, int(np.prod([images.shape[d] for d in kept])))
    assert layer.is_adapted
    inputs = keras.Input((5, 6, 3))
    outputs = keras.Model(inputs, layer(inputs)).predict(images)
    np.testing.assert_allclose(outputs.mean(reduced), 0., atol=1e-4)
    np.testing.assert_allclose(outputs.std(reduced), 1., rtol=1e-4)


def test_normalization_adapt_errors():
    with pytest.raises(ValueError, match='given as arguments'):
        Normalization(mean=0., variance=1.).adapt(IMAGES)
    layer = Normalization()
    layer.adapt(IMAGES)
    with pytest.raises(ValueError, match=r'batch of shape \(16, 5, 6, 4\)'):
        layer.adapt(np.zeros((16, 5, 6, 4)))


def test_normalization_takes_adapted_statistics_from_weights():
    layer = Normalization(axis=-1)
    inputs = keras.Input((5, 6, 3))
    model = keras.Model(inputs, layer(inputs))
    mean, variance = np.array([1., 2., 3.]), np.array([4., 9., 16.])
    layer.set_weights([mean, variance, np.array(7)])
    np.testing.assert_allclose(model.predict(IMAGES[:2]),
                               (IMAGES[:2] - mean) / np.sqrt(variance), rtol=1e-6)


@pytest.mark.parametrize('scale, offset', [([0.5, 2., -1.], 1.), (0.25, [1., 2., 3.]),
                                           ([[[0.5]], [[2.]], [[-1.]]], 0.)],
                         ids=['per_channel_scale', 'per_channel_offset', 'channels_first'])
def test_rescaling_broadcasts_lists_against_the_last_axes(scale, offset, tmp_path):
    images = IMAGES[:2].transpose(0, 3, 1, 2) if np.ndim(scale) == 3 else IMAGES[:2]
    inputs = keras.Input(images.shape[1:])
    model = keras.Model(inputs, Rescaling(scale, offset=offset)(inputs))
    expected = images * np.asarray(scale, 'float32') + np.asarray(offset, 'float32')
    np.testing.assert_allclose(model.predict(images), expected, rtol=1e-6)
    model.save(str(tmp_path / 'rescaling.h5'))
    loaded = keras.models.load_model(str(tmp_path / 'rescaling.h5'))
    np.testing.assert_allclose(loaded.predict(images), expected, rtol=1e-6)
