"""tf.keras 2's convolution layers where they differ from Keras 2.3.1's: `convolution_op` and
the `call` through it, which overrides (`torchk.overrides`) give Keras 2.3.1's `_Conv`, the
base of `Conv1D`, `Conv2D` and `Conv3D` (its `call` runs in the layer's mixed precision
policy, as every layer's)."""
from keras import backend as K

_CONVOLUTIONS = {1: 'conv1d', 2: 'conv2d', 3: 'conv3d'}


def convolution_op(self, inputs, kernel):
    """The layer's convolution of `inputs` by `kernel` with its strides, padding, data format
    and dilation, without bias or activation (tf.keras 2.7's `Conv.convolution_op`).

    # Arguments
        inputs: the layer's input tensor.
        kernel: a kernel of the layer's kernel shape.

    # Returns
        The convolution's output tensor.
    """
    if self.rank == 1:
        return K.conv1d(inputs, kernel, strides=self.strides[0], padding=self.padding,
                        data_format=self.data_format, dilation_rate=self.dilation_rate[0])
    return getattr(K, _CONVOLUTIONS[self.rank])(
        inputs, kernel, strides=self.strides, padding=self.padding,
        data_format=self.data_format, dilation_rate=self.dilation_rate)


def call(self, inputs):
    """Keras 2.3.1's convolution call, its convolution through `convolution_op` (which a
    subclass may override, as in tf.keras)."""
    outputs = self.convolution_op(inputs, self.kernel)
    if self.use_bias:
        outputs = K.bias_add(outputs, self.bias, data_format=self.data_format)
    if self.activation is not None:
        return self.activation(outputs)
    return outputs
