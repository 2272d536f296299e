"""`Conv1DTranspose` (tf.keras 2.3+) and `DepthwiseConv1D` (2.9+), which Keras 2.3.1 lacks."""
from keras import backend as K
from keras import constraints
from keras import initializers
from keras import regularizers
from keras.engine.base_layer import InputSpec
from keras.layers.convolutional import _Conv
from keras.utils import conv_utils

__all__ = ['Conv1DTranspose', 'DepthwiseConv1D']


class Conv1DTranspose(_Conv):
    """Transposed 1-D convolution, as `tf.keras.layers.Conv1DTranspose`.

    Computed as the 2-D transposed convolution of the sequence seen as an image of height 1.
    The kernel has shape `(kernel_size, filters, input_channels)`, as tf.keras stores it.

    # Arguments
        filters: int, the number of output channels.
        kernel_size: int or tuple of one int.
        strides: int or tuple of one int.
        padding: `'valid'` or `'same'`.
        output_padding: int, tuple of one int, or None: extra length at the end of the
            output (less than the stride).
        data_format: `'channels_last'` (`(batch, steps, channels)`) or `'channels_first'`.
        dilation_rate: int or tuple of one int.
        groups: 1 (tf.keras' configuration key; grouped transposed convolutions do not
            exist in tf.keras either).
        activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
        bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint:
            as Keras' convolution layers.

    # Raises
        ValueError: for `padding='causal'`, `groups` other than 1, or `output_padding` not
            less than the stride.
    """

    def __init__(self, filters, kernel_size, strides=1, padding='valid', output_padding=None,
                 data_format=None, dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer='glorot_uniform', bias_initializer='zeros',
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super(Conv1DTranspose, self).__init__(
            rank=1, filters=filters, kernel_size=kernel_size, strides=strides,
            padding=padding, data_format=data_format, dilation_rate=dilation_rate,
            activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, **kwargs)
        if self.padding not in ('valid', 'same'):
            raise ValueError('Layer %r: padding=%r; expected "valid" or "same".'
                             % (self.name, padding))
        if groups != 1:
            raise ValueError('Layer %r: groups=%r; Conv1DTranspose supports groups=1 only.'
                             % (self.name, groups))
        self.output_padding = output_padding
        if output_padding is not None:
            self.output_padding = conv_utils.normalize_tuple(output_padding, 1,
                                                             'output_padding')
            if self.output_padding[0] >= self.strides[0]:
                raise ValueError('Layer %r: output_padding %s must be less than the stride '
                                 '%s.' % (self.name, self.output_padding, self.strides))
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        channel_axis = 1 if self.data_format == 'channels_first' else -1
        if input_shape[channel_axis] is None:
            raise ValueError('Layer %r: the channel dimension of the inputs must be known; '
                             'got shape %s.' % (self.name, input_shape))
        input_dim = input_shape[channel_axis]
        self.kernel = self.add_weight(shape=self.kernel_size + (self.filters, input_dim),
                                      initializer=self.kernel_initializer, name='kernel',
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer,
                                        name='bias', regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None
        self.input_spec = InputSpec(ndim=3, axes={channel_axis: input_dim})
        self.built = True

    def _output_length(self, length):
        return conv_utils.deconv_length(
            length, self.strides[0], self.kernel_size[0], self.padding,
            None if self.output_padding is None else self.output_padding[0],
            self.dilation_rate[0])

    def call(self, inputs):
        channels_first = self.data_format == 'channels_first'
        steps_axis = 2 if channels_first else 1
        batch_size = K.shape(inputs)[0]
        length = self._output_length(K.shape(inputs)[steps_axis])
        if channels_first:
            images = K.expand_dims(inputs, 2)
            output_shape = (batch_size, self.filters, 1, length)
        else:
            images = K.expand_dims(inputs, 1)
            output_shape = (batch_size, 1, length, self.filters)
        outputs = K.conv2d_transpose(
            images, K.expand_dims(self.kernel, 0), output_shape, (1,) + self.strides,
            padding=self.padding, data_format=self.data_format,
            dilation_rate=(1,) + self.dilation_rate)
        outputs = K.squeeze(outputs, 2 if channels_first else 1)
        if self.use_bias:
            outputs = K.bias_add(outputs, self.bias, data_format=self.data_format)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        if self.data_format == 'channels_first':
            return (input_shape[0], self.filters, self._output_length(input_shape[2]))
        return (input_shape[0], self._output_length(input_shape[1]), self.filters)

    def get_config(self):
        config = super(Conv1DTranspose, self).get_config()
        config.pop('rank')
        config['output_padding'] = self.output_padding
        config['groups'] = 1
        return config


class DepthwiseConv1D(_Conv):
    """Depthwise 1-D convolution, as `tf.keras.layers.DepthwiseConv1D`: each input channel
    convolved with its own `depth_multiplier` filters.

    Computed as the 2-D depthwise convolution of the sequence seen as an image of height 1.
    The kernel `depthwise_kernel` has shape `(kernel_size, input_channels,
    depth_multiplier)`, as tf.keras stores it.

    # Arguments
        kernel_size: int or tuple of one int.
        strides: int or tuple of one int.
        padding: `'valid'` or `'same'`.
        depth_multiplier: filters per input channel.
        data_format: `'channels_last'` (`(batch, steps, channels)`) or `'channels_first'`.
        dilation_rate: int or tuple of one int.
        groups: 1 (tf.keras' configuration key).
        activation, use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
        bias_regularizer, activity_regularizer, depthwise_constraint, bias_constraint:
            as tf.keras' depthwise convolutions.

    # Raises
        ValueError: for `padding='causal'` or `groups` other than 1.
    """

    def __init__(self, kernel_size, strides=1, padding='valid', depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer='glorot_uniform', bias_initializer='zeros',
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, groups=1, **kwargs):
        super(DepthwiseConv1D, self).__init__(
            rank=1, filters=None, kernel_size=kernel_size, strides=strides, padding=padding,
            data_format=data_format, dilation_rate=dilation_rate, activation=activation,
            use_bias=use_bias, bias_initializer=bias_initializer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            bias_constraint=bias_constraint, **kwargs)
        if self.padding not in ('valid', 'same'):
            raise ValueError('Layer %r: padding=%r; DepthwiseConv1D takes "valid" or "same".'
                             % (self.name, padding))
        if groups != 1:
            raise ValueError('Layer %r: groups=%r; a depthwise convolution has groups=1 (its '
                             'saved configuration key).' % (self.name, groups))
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        channel_axis = 1 if self.data_format == 'channels_first' else -1
        if input_shape[channel_axis] is None:
            raise ValueError('Layer %r: the channel dimension of the inputs must be known; '
                             'got shape %s.' % (self.name, input_shape))
        input_dim = input_shape[channel_axis]
        self.depthwise_kernel = self.add_weight(
            shape=self.kernel_size + (input_dim, self.depth_multiplier),
            initializer=self.depthwise_initializer, name='depthwise_kernel',
            regularizer=self.depthwise_regularizer, constraint=self.depthwise_constraint)
        if self.use_bias:
            self.bias = self.add_weight(shape=(input_dim * self.depth_multiplier,),
                                        initializer=self.bias_initializer, name='bias',
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None
        self.input_spec = InputSpec(ndim=3, axes={channel_axis: input_dim})
        self.built = True

    def call(self, inputs):
        height_axis = 2 if self.data_format == 'channels_first' else 1
        outputs = K.depthwise_conv2d(
            K.expand_dims(inputs, height_axis), K.expand_dims(self.depthwise_kernel, 0),
            strides=(1,) + self.strides, padding=self.padding, data_format=self.data_format,
            dilation_rate=(1,) + self.dilation_rate)
        outputs = K.squeeze(outputs, height_axis)
        if self.use_bias:
            outputs = K.bias_add(outputs, self.bias, data_format=self.data_format)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        channels_first = self.data_format == 'channels_first'
        steps, channels = (input_shape[2], input_shape[1]) if channels_first else (
            input_shape[1], input_shape[2])
        length = conv_utils.conv_output_length(steps, self.kernel_size[0], self.padding,
                                               self.strides[0], self.dilation_rate[0])
        filters = None if channels is None else channels * self.depth_multiplier
        if channels_first:
            return (input_shape[0], filters, length)
        return (input_shape[0], length, filters)

    def get_config(self):
        config = super(DepthwiseConv1D, self).get_config()
        for key in ('rank', 'filters', 'kernel_initializer', 'kernel_regularizer',
                    'kernel_constraint'):
            config.pop(key, None)
        config.update(
            groups=1, depth_multiplier=self.depth_multiplier,
            depthwise_initializer=initializers.serialize(self.depthwise_initializer),
            depthwise_regularizer=regularizers.serialize(self.depthwise_regularizer),
            depthwise_constraint=constraints.serialize(self.depthwise_constraint))
        return config
