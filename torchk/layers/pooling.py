"""Keras 2.3.1's global pooling layers with tf.keras' `keepdims` (TF 2.6).

With `keepdims=True` the pooled spatial dimensions stay, with size 1
(`(batch, 1, 1, channels)` for 2-D channels-last), as MobileNetV3's squeeze-and-excite
blocks use them. These classes take the place of Keras' names in `keras.layers`; with
`keepdims=False` they are Keras' layers.
"""
import inspect

from keras import backend as K
from keras.layers import pooling
from keras.legacy import interfaces

__all__ = ['GlobalAveragePooling1D', 'GlobalAveragePooling2D', 'GlobalAveragePooling3D',
           'GlobalMaxPooling1D', 'GlobalMaxPooling2D', 'GlobalMaxPooling3D',
           'GlobalAvgPool1D', 'GlobalAvgPool2D', 'GlobalAvgPool3D',
           'GlobalMaxPool1D', 'GlobalMaxPool2D', 'GlobalMaxPool3D']


def _keeping_dims(keras_class, reduce, rank):
    """A subclass of the Keras 2.3.1 global pooling layer `keras_class` with `keepdims`."""

    takes_mask = 'mask' in inspect.signature(keras_class.call).parameters

    class Pooling(keras_class):
        def __init__(self, data_format=None, keepdims=False, **kwargs):
            if rank == 1 and data_format is None:
                data_format = 'channels_last'
            super(Pooling, self).__init__(data_format=data_format, **kwargs)
            self.keepdims = keepdims

        if rank > 1:
            # Keras 1's `dim_ordering` keyword, as Keras' own 2-D and 3-D global pooling take it.
            __init__ = interfaces.legacy_global_pooling_support(__init__)

        def _spatial_axes(self):
            first = 1 if self.data_format == 'channels_last' else 2
            return list(range(first, first + rank))

        def call(self, inputs, mask=None):
            if not self.keepdims:
                if takes_mask:
                    return super(Pooling, self).call(inputs, mask=mask)
                return super(Pooling, self).call(inputs)
            if mask is not None and reduce is K.mean:
                weights = K.expand_dims(K.cast(mask, K.dtype(inputs)), -1
                                        if self.data_format == 'channels_last' else 1)
                return (K.sum(inputs * weights, axis=self._spatial_axes(), keepdims=True)
                        / K.sum(weights, axis=self._spatial_axes(), keepdims=True))
            return reduce(inputs, axis=self._spatial_axes(), keepdims=True)

        def compute_output_shape(self, input_shape):
            if not self.keepdims:
                return super(Pooling, self).compute_output_shape(input_shape)
            shape = list(input_shape)
            for axis in self._spatial_axes():
                shape[axis] = 1
            return tuple(shape)

        def get_config(self):
            config = super(Pooling, self).get_config()
            config['keepdims'] = self.keepdims
            return config

    Pooling.__name__ = Pooling.__qualname__ = keras_class.__name__
    Pooling.__doc__ = ('Keras 2.3.1\'s `%s`, with `keepdims` (keep the pooled dimensions, '
                       'of size 1).' % keras_class.__name__)
    return Pooling


GlobalAveragePooling1D = _keeping_dims(pooling.GlobalAveragePooling1D, K.mean, 1)
GlobalAveragePooling2D = _keeping_dims(pooling.GlobalAveragePooling2D, K.mean, 2)
GlobalAveragePooling3D = _keeping_dims(pooling.GlobalAveragePooling3D, K.mean, 3)
GlobalMaxPooling1D = _keeping_dims(pooling.GlobalMaxPooling1D, K.max, 1)
GlobalMaxPooling2D = _keeping_dims(pooling.GlobalMaxPooling2D, K.max, 2)
GlobalMaxPooling3D = _keeping_dims(pooling.GlobalMaxPooling3D, K.max, 3)

# Keras' short aliases name the same classes.
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalMaxPool2D = GlobalMaxPooling2D
GlobalMaxPool3D = GlobalMaxPooling3D
