"""Keras 2.3.1's `Conv1D`, `Conv2D` and `Conv3D` with tf.keras' `groups` (TF 2.3).

With `groups=g` the input channels are split into `g` consecutive slices, each convolved with
its own `filters / g` filters (ConvNeXt's 7x7 depthwise convolutions, RegNet's grouped 3x3
ones). The kernel has shape `kernel_size + (input_channels / g, filters)`, as tf.keras stores
it; the backend's convolutions infer the groups from it, as TensorFlow's do. With `groups=1`
they are Keras' layers, configuration included. These classes take the place of Keras' names
in `keras.layers`.
"""
from keras.engine.base_layer import InputSpec
from keras.layers import convolutional

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Convolution1D', 'Convolution2D', 'Convolution3D']


def _grouped(keras_class):
    """A subclass of the Keras 2.3.1 convolution layer `keras_class` with `groups`."""

    class Conv(keras_class):
        def __init__(self, *args, groups=1, **kwargs):
            super(Conv, self).__init__(*args, **kwargs)
            if type(groups) is not int or groups < 1 or self.filters % groups:
                raise ValueError('Layer %r: groups=%r; expected a positive integer that divides '
                                 'filters (%d).' % (self.name, groups, self.filters))
            self.groups = groups

        def build(self, input_shape):
            channel_axis = 1 if self.data_format == 'channels_first' else len(input_shape) - 1
            channels = input_shape[channel_axis]
            if channels is not None and channels % self.groups:
                raise ValueError('Layer %r: groups=%d must divide the input channels (%d).'
                                 % (self.name, self.groups, channels))
            per_group = list(input_shape)
            if channels is not None:
                per_group[channel_axis] = channels // self.groups
            super(Conv, self).build(tuple(per_group))
            self.input_spec = InputSpec(ndim=self.rank + 2, axes={channel_axis: channels})

        def get_config(self):
            config = super(Conv, self).get_config()
            if self.groups != 1:
                config['groups'] = self.groups
            return config

    Conv.__name__ = Conv.__qualname__ = keras_class.__name__
    Conv.__doc__ = ('Keras 2.3.1\'s `%s`, with `groups` (input channels split into groups, '
                    'each with its own `filters / groups` filters).' % keras_class.__name__)
    return Conv


Conv1D = _grouped(convolutional.Conv1D)
Conv2D = _grouped(convolutional.Conv2D)
Conv3D = _grouped(convolutional.Conv3D)

# Keras' long aliases name the same classes.
Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
