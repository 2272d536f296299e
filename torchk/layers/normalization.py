"""`LayerNormalization`, `GroupNormalization`, `UnitNormalization` and
`SyncBatchNormalization` as tf.keras 2 defines them (configuration keys, weights `gamma` then
`beta`, and numbers)."""
from keras import backend as K
from keras import constraints
from keras import initializers
from keras import regularizers
from keras.engine.base_layer import InputSpec, Layer
from keras.layers import BatchNormalization

__all__ = ['LayerNormalization', 'GroupNormalization', 'UnitNormalization',
           'SyncBatchNormalization']


def _dims(x):
    """The dimensions of `x`: static ints where known, else scalar tensors of `K.shape`."""
    shape = K.shape(x)
    return [d if d is not None else shape[i] for i, d in enumerate(K.int_shape(x))]


def _normalize(x, axes, epsilon):
    """`x` minus its mean over `axes`, over the square root of the (biased) variance plus
    `epsilon`."""
    mean = K.mean(x, axis=axes, keepdims=True)
    variance = K.mean(K.square(x - mean), axis=axes, keepdims=True)
    return (x - mean) / K.sqrt(variance + epsilon)


class _AffineNormalization(Layer):
    """Base of the normalization layers: the `gamma`/`beta` options and configuration."""

    def __init__(self, axis, epsilon, center, scale, beta_initializer, gamma_initializer,
                 beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint,
                 **kwargs):
        super(_AffineNormalization, self).__init__(**kwargs)
        self.supports_masking = True
        self.axis = axis
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def _add_affine_weights(self, shape):
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(shape=shape, name='gamma',
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight(shape=shape, name='beta',
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)

    def _affine(self, normalized, broadcast_shape):
        if self.gamma is not None:
            normalized = normalized * K.reshape(self.gamma, broadcast_shape)
        if self.beta is not None:
            normalized = normalized + K.reshape(self.beta, broadcast_shape)
        return normalized

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        config = {
            'axis': self.axis,
            'epsilon': self.epsilon,
            'center': self.center,
            'scale': self.scale,
            'beta_initializer': initializers.serialize(self.beta_initializer),
            'gamma_initializer': initializers.serialize(self.gamma_initializer),
            'beta_regularizer': regularizers.serialize(self.beta_regularizer),
            'gamma_regularizer': regularizers.serialize(self.gamma_regularizer),
            'beta_constraint': constraints.serialize(self.beta_constraint),
            'gamma_constraint': constraints.serialize(self.gamma_constraint)}
        base_config = super(_AffineNormalization, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class LayerNormalization(_AffineNormalization):
    """Layer normalization (Ba et al., 2016): each sample normalized over `axis`.

    `(x - mean) / sqrt(variance + epsilon) * gamma + beta`, moments over `axis` per sample;
    `gamma` and `beta` have the shape of the input over `axis`.

    # Arguments
        axis: integer or list of integers, the axes to normalize over (default: last).
        epsilon: small float added to the variance.
        center: whether to add the offset `beta`.
        scale: whether to multiply by `gamma`.
        beta_initializer, gamma_initializer, beta_regularizer, gamma_regularizer,
        beta_constraint, gamma_constraint: for the weights.

    # Raises
        ValueError: for an axis outside the input or the batch axis.
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones',
                 beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, **kwargs):
        axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        super(LayerNormalization, self).__init__(
            axis, epsilon, center, scale, beta_initializer, gamma_initializer,
            beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint, **kwargs)

    def _axes(self, rank):
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        resolved = sorted(a + rank if a < 0 else a for a in axes)
        if any(a <= 0 or a >= rank for a in resolved):
            raise ValueError('LayerNormalization (%s): axis %s is out of range for inputs of '
                             'rank %d (axes 1 to %d, or negative).'
                             % (self.name, self.axis, rank, rank - 1))
        return resolved

    def build(self, input_shape):
        axes = self._axes(len(input_shape))
        self._add_affine_weights(tuple(input_shape[a] for a in axes))
        self.built = True

    def call(self, inputs, mask=None):
        rank = K.ndim(inputs)
        axes = self._axes(rank)
        dims = K.int_shape(inputs)
        broadcast_shape = [dims[a] if a in axes else 1 for a in range(rank)]
        return self._affine(_normalize(inputs, axes, self.epsilon), broadcast_shape)


class GroupNormalization(_AffineNormalization):
    """Group normalization (Wu & He, 2018): the channels of each sample split in `groups`,
    each normalized over its channels and all the other non-batch axes.

    `groups=-1` gives instance normalization, `groups=1` layer normalization over all axes.

    # Arguments
        groups: number of groups, a divisor of the number of channels (-1: one per channel).
        axis: the channel axis.
        epsilon, center, scale, beta_initializer, gamma_initializer, beta_regularizer,
        gamma_regularizer, beta_constraint, gamma_constraint: as in `LayerNormalization`;
            `gamma` and `beta` have one value per channel.

    # Raises
        ValueError: for an unknown channel dimension or a number of groups that does not
            divide it.
    """

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones',
                 beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, **kwargs):
        super(GroupNormalization, self).__init__(
            axis, epsilon, center, scale, beta_initializer, gamma_initializer,
            beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint, **kwargs)
        self.groups = groups

    def build(self, input_shape):
        rank = len(input_shape)
        axis = self.axis + rank if self.axis < 0 else self.axis
        channels = input_shape[axis] if 0 < axis < rank else None
        if channels is None:
            raise ValueError('GroupNormalization (%s): axis %d of inputs of shape %s must be '
                             'a known channel axis.' % (self.name, self.axis, input_shape))
        groups = channels if self.groups == -1 else self.groups
        if groups <= 0 or channels % groups:
            raise ValueError('GroupNormalization (%s): groups=%d must divide the %d channels '
                             '(or be -1).' % (self.name, self.groups, channels))
        self.groups = groups
        self.input_spec = InputSpec(ndim=rank, axes={axis: channels})
        self._add_affine_weights((channels,))
        self.built = True

    def call(self, inputs, mask=None):
        rank = K.ndim(inputs)
        axis = self.axis + rank if self.axis < 0 else self.axis
        dims = _dims(inputs)
        channels = dims[axis]
        grouped = K.reshape(inputs, tuple(dims[:axis]) + (self.groups, channels // self.groups) +
                            tuple(dims[axis + 1:]))
        axes = [a for a in range(1, rank + 1) if a != axis]
        normalized = K.reshape(_normalize(grouped, axes, self.epsilon), tuple(dims))
        broadcast_shape = [channels if a == axis else 1 for a in range(rank)]
        return self._affine(normalized, broadcast_shape)

    def get_config(self):
        config = super(GroupNormalization, self).get_config()
        config['groups'] = self.groups
        return config


class UnitNormalization(Layer):
    """Scales each sample to unit L2 norm over `axis`: `x / sqrt(max(sum(x ** 2), 1e-12))`.

    # Arguments
        axis: integer or list of integers, the axes the norm is taken over (default: last).
    """

    def __init__(self, axis=-1, **kwargs):
        super(UnitNormalization, self).__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.supports_masking = True

    def call(self, inputs):
        inputs = K.cast(inputs, K.floatx())
        squares = K.sum(K.square(inputs), axis=self.axis, keepdims=True)
        return inputs / K.sqrt(K.maximum(squares, 1e-12))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super(UnitNormalization, self).get_config()
        config['axis'] = self.axis
        return config


class SyncBatchNormalization(BatchNormalization):
    """`tf.keras.layers.experimental.SyncBatchNormalization`: batch normalization whose batch
    statistics TF computes over every replica's batch. torchk trains on one replica, where
    that is Keras' `BatchNormalization`; the class keeps its name in saved models."""
