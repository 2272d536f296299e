"""The image and numeric preprocessing layers of tf.keras 2.x (`tf.keras.layers.Rescaling`, ...).

Written with the backend, with tf.keras' configuration keys and TensorFlow's numbers. Like
tf.keras' own, the image layers take channels-last images, batched `(batch, height, width,
channels)` or single `(height, width, channels)`.

Resizing follows `tf.image.resize` (`torchk.image_ops.resize`): image heights and widths
must be known when the layer is built.

The random augmentation layers pass their input through unchanged at inference, as
tf.keras does. In training, `RandomFlip`, `RandomContrast`, `RandomBrightness` and
`RandomCrop` augment as tf.keras does (other random draws); `RandomRotation`, `RandomZoom`,
`RandomTranslation`, `RandomHeight` and `RandomWidth` pass their input through in training
too: torchk does not apply those geometric augmentations (a loaded model fine-tunes without
them).
"""
import numpy as np
import torch

from keras import backend as K
from keras.engine.base_layer import Layer

from ..image_ops import (at_image_size, check_interpolation, crop, image_size, resize,
                         smart_resize)

__all__ = ['Rescaling', 'Normalization', 'Resizing', 'CenterCrop', 'RandomFlip',
           'RandomRotation', 'RandomZoom', 'RandomTranslation', 'RandomContrast', 'RandomCrop',
           'RandomHeight', 'RandomWidth', 'RandomBrightness']

def _take_window(images, axis, size, window):
    """`window` consecutive indices of `axis`, from a random start drawn when run."""
    start = K.cast(K.random_uniform((), 0., size - window + 1.), 'int64')
    start = K.minimum(start, size - window)
    indices = K.constant(np.arange(window), dtype='int64') + start
    return torch.index_select(images, axis % K.ndim(images), indices)


def _as_floatx(inputs):
    return inputs if K.dtype(inputs) == K.floatx() else K.cast(inputs, K.floatx())


def _floatx_constant(value):
    """A float as it is, a list of floats as a floatx constant."""
    return value if np.ndim(value) == 0 else K.constant(np.asarray(value, K.floatx()))


class _Preprocessing(Layer):
    """Base of the layers here: masks pass through, configs add `_config_keys`."""

    _config_keys = ()

    def __init__(self, **kwargs):
        super(_Preprocessing, self).__init__(**kwargs)
        self.supports_masking = True

    def get_config(self):
        config = {key: getattr(self, key) for key in self._config_keys}
        base_config = super(_Preprocessing, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class Rescaling(_Preprocessing):
    """Multiplies its input by `scale` and adds `offset` (`x * scale + offset`).

    # Arguments
        scale: float, or a (nested) list of floats broadcast against the input's last axes
            (one per channel: EfficientNet's ImageNet input scaling).
        offset: float, or a (nested) list as `scale`.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('scale', 'offset')

    def __init__(self, scale, offset=0.0, **kwargs):
        super(Rescaling, self).__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs):
        return _as_floatx(inputs) * _floatx_constant(self.scale) + _floatx_constant(self.offset)

    def compute_output_shape(self, input_shape):
        return input_shape


class Normalization(_Preprocessing):
    """Standardizes its input: `(x - mean) / max(sqrt(variance), epsilon)`.

    The mean and variance are per index of the `axis` dimensions, broadcast over the others.
    Given in the configuration (`mean`, `variance`) they are constants; otherwise they are
    the layer's weights `mean`, `variance` and `count`, as tf.keras saves an adapted layer,
    computed from data by `adapt` (or read from a file, or `set_weights`).

    # Arguments
        axis: int, tuple of ints or None: the dimensions that keep their own statistics
            (None: one mean and variance for everything).
        mean: float or array, or None.
        variance: float or array, or None (given with `mean`).
        invert: whether to undo the normalization instead (`mean + x * sqrt(variance)`).
        **kwargs: the base layer's arguments.

    # Raises
        ValueError: if only one of `mean` and `variance` is given, or a kept axis has an
            unknown size.
    """

    _config_keys = ('axis', 'invert')

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super(Normalization, self).__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        self.axis = tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError('Layer %r: give both `mean` and `variance`, or neither; got '
                             'mean=%r, variance=%r.' % (self.name, mean, variance))
        self.input_mean = mean
        self.input_variance = variance
        self.invert = invert

    def build(self, input_shape):
        ndim = len(input_shape)
        keep = sorted(a % ndim for a in self.axis)
        if any(input_shape[a] is None for a in keep):
            raise ValueError('Layer %r: the kept axes %s need known sizes; got input shape %s.'
                             % (self.name, self.axis, input_shape))
        self._broadcast_shape = tuple(input_shape[d] if d in keep else 1 for d in range(ndim))
        self._kept_axes = tuple(keep)
        shape = tuple(input_shape[d] for d in keep)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(name='mean', shape=shape, initializer='zeros',
                                              trainable=False)
            self.adapt_variance = self.add_weight(name='variance', shape=shape,
                                                  initializer='ones', trainable=False)
            self.count = self.add_weight(name='count', shape=(), dtype='int64',
                                         initializer='zeros', trainable=False)
            self.mean, self.variance = self.adapt_mean, self.adapt_variance
        else:
            self.mean = K.constant(np.asarray(self.input_mean) * np.ones(shape))
            self.variance = K.constant(np.asarray(self.input_variance) * np.ones(shape))
        super(Normalization, self).build(input_shape)

    @property
    def is_adapted(self):
        """Whether `adapt` has computed the statistics."""
        return getattr(self, '_is_adapted', False)

    def adapt(self, data, batch_size=None, steps=None):
        """Computes the mean and variance of `data` per index of the kept axes, batch by
        batch (tf.keras' running moments).

        # Arguments
            data: an array, a tensor, or a `tf.data.Dataset` (or other iterable) of batches.
            batch_size: the batch size for arrays (default 32).
            steps: the number of batches to read (default: all).

        # Raises
            ValueError: if the layer was given `mean` and `variance`, or `data` does not
                match the shape it was built for.
        """
        if self.input_mean is not None:
            raise ValueError('Layer %r: its mean and variance were given as arguments; adapt '
                             'computes them only for a layer created without them.' % self.name)
        from .categorical import adapt_batches
        count, mean, variance = 0, 0., 0.
        for batch in adapt_batches(data, batch_size, steps):
            batch = np.asarray(batch.detach().cpu() if isinstance(batch, torch.Tensor)
                               else batch, dtype='float64')
            if not self.built:
                self.build((None,) + batch.shape[1:])
            if batch.ndim != len(self._broadcast_shape) or any(
                    batch.shape[d] != self._broadcast_shape[d] for d in self._kept_axes):
                raise ValueError('Layer %r: adapt got a batch of shape %s; the layer keeps '
                                 'statistics for shape %s.' % (self.name, batch.shape,
                                                                self._broadcast_shape))
            reduced = tuple(d for d in range(batch.ndim) if d not in self._kept_axes)
            batch_count = int(np.prod([batch.shape[d] for d in reduced]))
            if batch_count == 0:
                continue
            batch_mean = batch.mean(axis=reduced)
            batch_variance = batch.var(axis=reduced)
            total = count + batch_count
            weight = batch_count / total
            new_mean = mean * (1. - weight) + batch_mean * weight
            variance = ((variance + (mean - new_mean) ** 2) * (1. - weight)
                        + (batch_variance + (batch_mean - new_mean) ** 2) * weight)
            mean, count = new_mean, total
        if not count:
            raise ValueError('Layer %r: adapt got no data.' % self.name)
        K.batch_set_value([(self.adapt_mean, np.reshape(mean, K.int_shape(self.adapt_mean))),
                           (self.adapt_variance,
                            np.reshape(variance, K.int_shape(self.adapt_variance))),
                           (self.count, count)])
        self._is_adapted = True

    def call(self, inputs):
        mean = K.reshape(self.mean, self._broadcast_shape)
        deviation = K.maximum(K.sqrt(K.reshape(self.variance, self._broadcast_shape)),
                              K.epsilon())
        inputs = _as_floatx(inputs)
        if self.invert:
            return mean + inputs * deviation
        return (inputs - mean) / deviation

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super(Normalization, self).get_config()
        config.update(mean=_listed(self.input_mean), variance=_listed(self.input_variance))
        return config


def _listed(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


class Resizing(_Preprocessing):
    """Resizes images to `(height, width)` as `tf.image.resize`.

    # Arguments
        height: int, output height.
        width: int, output width.
        interpolation: `'bilinear'`, `'nearest'`, `'bicubic'` or `'area'`.
        crop_to_aspect_ratio: if True, first takes the largest centered crop with the
            output's aspect ratio.
        **kwargs: the base layer's arguments.

    # Raises
        ValueError: for another interpolation.
    """

    _config_keys = ('height', 'width', 'interpolation', 'crop_to_aspect_ratio')

    def __init__(self, height, width, interpolation='bilinear', crop_to_aspect_ratio=False,
                 **kwargs):
        super(Resizing, self).__init__(**kwargs)
        check_interpolation(interpolation, self.name)
        self.height = height
        self.width = width
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio

    def call(self, inputs):
        return at_image_size(self._resize, _as_floatx(inputs))

    def _resize(self, inputs):
        image_size(inputs, self.name)
        if self.crop_to_aspect_ratio:
            return smart_resize(inputs, self.height, self.width, self.interpolation,
                                 self.name)
        return resize(inputs, self.height, self.width, self.interpolation)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-3]) + (self.height, self.width, input_shape[-1])


class CenterCrop(_Preprocessing):
    """Crops the center `(height, width)` of images; smaller images are resized as
    tf.keras does (largest centered crop of the target aspect ratio, bilinear).

    # Arguments
        height: int, output height.
        width: int, output width.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('height', 'width')

    def __init__(self, height, width, **kwargs):
        super(CenterCrop, self).__init__(**kwargs)
        self.height = height
        self.width = width

    def call(self, inputs):
        return at_image_size(self._crop_center, _as_floatx(inputs))

    def _crop_center(self, inputs):
        in_height, in_width = image_size(inputs, self.name)
        if in_height >= self.height and in_width >= self.width:
            return crop(inputs, (in_height - self.height) // 2, (in_width - self.width) // 2,
                         self.height, self.width)
        return smart_resize(inputs, self.height, self.width, 'bilinear', self.name)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-3]) + (self.height, self.width, input_shape[-1])


class _RandomAugmentation(_Preprocessing):
    """An augmentation: `_augment(inputs)` in training, the input unchanged at inference.

    `seed` and tf_keras' `rng_type` are kept in the configuration; torchk's layers draw from
    torchk's global random stream.
    """

    def __init__(self, seed=None, rng_type=None, **kwargs):
        super(_RandomAugmentation, self).__init__(**kwargs)
        self.seed = seed
        self.rng_type = rng_type

    def get_config(self):
        config = super(_RandomAugmentation, self).get_config()
        config.update(seed=self.seed, rng_type=self.rng_type)
        return config

    def call(self, inputs, training=None):
        inputs = _as_floatx(inputs)
        return K.in_train_phase(lambda: self._augment(inputs), inputs, training=training)

    def _augment(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


class RandomFlip(_RandomAugmentation):
    """Flips each image horizontally and/or vertically with probability 1/2 in training.

    # Arguments
        mode: `'horizontal'`, `'vertical'` or `'horizontal_and_vertical'`.
        seed: int or None (kept in the configuration; torchk's random stream is global).
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('mode',)
    _MODES = ('horizontal', 'vertical', 'horizontal_and_vertical')

    def __init__(self, mode='horizontal_and_vertical', seed=None, **kwargs):
        super(RandomFlip, self).__init__(seed=seed, **kwargs)
        if mode not in self._MODES:
            raise ValueError('Layer %r: mode=%r; expected one of %s.'
                             % (self.name, mode, ', '.join(self._MODES)))
        self.mode = mode

    def _augment(self, inputs):
        batched = K.ndim(inputs) == 4
        images = inputs if batched else K.expand_dims(inputs, 0)
        for axis, name in ((2, 'horizontal'), (1, 'vertical')):
            if name in self.mode:
                flip = K.random_uniform(K.stack([K.shape(images)[0], 1, 1, 1])) < 0.5
                images = K.switch(flip, K.reverse(images, axis), images)
        return images if batched else K.squeeze(images, 0)


class RandomContrast(_RandomAugmentation):
    """Scales each image's deviation from its per-channel mean by a random factor in
    `[1 - lower, 1 + upper]` (one factor per call) and clips to [0, 255], in training.

    # Arguments
        factor: float, or `(lower, upper)`, in [0, 1].
        seed: int or None.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('factor',)

    def __init__(self, factor, seed=None, **kwargs):
        super(RandomContrast, self).__init__(seed=seed, **kwargs)
        lower, upper = factor if isinstance(factor, (list, tuple)) else (factor, factor)
        if lower < 0. or upper < 0. or lower > 1.:
            raise ValueError('Layer %r: factor=%r; expected values in [0, 1].'
                             % (self.name, factor))
        self.factor = factor
        self._range = (1. - lower, 1. + upper)

    def _augment(self, inputs):
        contrast = K.random_uniform((), self._range[0], self._range[1])
        mean = K.mean(inputs, axis=(-3, -2), keepdims=True)
        return K.clip((inputs - mean) * contrast + mean, 0., 255.)


class RandomBrightness(_RandomAugmentation):
    """Adds a random delta, `factor` times the width of `value_range`, to each image and
    clips to `value_range`, in training.

    # Arguments
        factor: float, or `(lower, upper)`, in [-1, 1].
        value_range: `(low, high)` of the images' values.
        seed: int or None.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('factor', 'value_range')

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super(RandomBrightness, self).__init__(seed=seed, **kwargs)
        lower, upper = factor if isinstance(factor, (list, tuple)) else (-factor, factor)
        self.factor = factor
        self.value_range = list(value_range)
        self._range = (min(lower, upper), max(lower, upper))

    def _augment(self, inputs):
        low, high = self.value_range
        batched = K.ndim(inputs) == 4
        shape = K.stack([K.shape(inputs)[0], 1, 1, 1]) if batched else (1, 1, 1)
        delta = K.random_uniform(shape, self._range[0], self._range[1]) * (high - low)
        return K.clip(inputs + delta, low, high)


class RandomCrop(_RandomAugmentation):
    """Crops a random `(height, width)` window in training; at inference (and for smaller
    images) resizes as tf.keras does: the largest centered crop of the target aspect
    ratio, resized bilinearly. In training one window is drawn per batch.

    # Arguments
        height: int, output height.
        width: int, output width.
        seed: int or None.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('height', 'width')

    def __init__(self, height, width, seed=None, **kwargs):
        super(RandomCrop, self).__init__(seed=seed, **kwargs)
        self.height = height
        self.width = width

    def call(self, inputs, training=None):
        inputs = _as_floatx(inputs)
        in_height, in_width = image_size(inputs, self.name)
        resized = smart_resize(inputs, self.height, self.width, 'bilinear', self.name)
        if in_height < self.height or in_width < self.width:
            return resized
        cropped = _take_window(_take_window(inputs, -3, in_height, self.height), -2, in_width,
                               self.width)
        return K.in_train_phase(cropped, resized, training=training)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-3]) + (self.height, self.width, input_shape[-1])


class _GeometricAugmentation(_RandomAugmentation):
    """A geometric augmentation torchk does not apply: its input passes through, in
    training too (see the module's docstring)."""

    def __init__(self, seed=None, **kwargs):
        super(_GeometricAugmentation, self).__init__(seed=seed, **kwargs)


class RandomRotation(_GeometricAugmentation):
    """tf.keras' random rotation; passes its input through (in training too).

    # Arguments
        factor: float or `(lower, upper)`: rotation range as a fraction of 2 pi.
        fill_mode, interpolation, seed, fill_value: as tf.keras, kept in the configuration.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('factor', 'fill_mode', 'fill_value', 'interpolation')

    def __init__(self, factor, fill_mode='reflect', interpolation='bilinear', seed=None,
                 fill_value=0.0, **kwargs):
        super(RandomRotation, self).__init__(seed=seed, **kwargs)
        self.factor = factor
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value


class RandomZoom(_GeometricAugmentation):
    """tf.keras' random zoom; passes its input through (in training too).

    # Arguments
        height_factor, width_factor: zoom ranges, as tf.keras.
        fill_mode, interpolation, seed, fill_value: as tf.keras, kept in the configuration.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('height_factor', 'width_factor', 'fill_mode', 'fill_value',
                    'interpolation')

    def __init__(self, height_factor, width_factor=None, fill_mode='reflect',
                 interpolation='bilinear', seed=None, fill_value=0.0, **kwargs):
        super(RandomZoom, self).__init__(seed=seed, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value


class RandomTranslation(_GeometricAugmentation):
    """tf.keras' random translation; passes its input through (in training too).

    # Arguments
        height_factor, width_factor: translation ranges, as tf.keras.
        fill_mode, interpolation, seed, fill_value: as tf.keras, kept in the configuration.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('height_factor', 'width_factor', 'fill_mode', 'fill_value',
                    'interpolation')

    def __init__(self, height_factor, width_factor, fill_mode='reflect',
                 interpolation='bilinear', seed=None, fill_value=0.0, **kwargs):
        super(RandomTranslation, self).__init__(seed=seed, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value


class _RandomSideResize(_GeometricAugmentation):
    """A random resize of one spatial side (tf.keras' RandomHeight, RandomWidth); passes
    its input through (in training too).

    # Arguments
        factor: float or `(lower, upper)`, as tf.keras.
        interpolation, seed: as tf.keras, kept in the configuration.
        **kwargs: the base layer's arguments.
    """

    _config_keys = ('factor', 'interpolation')

    def __init__(self, factor, interpolation='bilinear', seed=None, **kwargs):
        super(_RandomSideResize, self).__init__(seed=seed, **kwargs)
        self.factor = factor
        self.interpolation = interpolation


class RandomHeight(_RandomSideResize):
    """tf.keras' random height resize; passes its input through (in training too).
    Arguments as `_RandomSideResize`."""


class RandomWidth(_RandomSideResize):
    """tf.keras' random width resize; passes its input through (in training too).
    Arguments as `_RandomSideResize`."""
