"""`RandomFourierFeatures` (`tf.keras.layers.experimental`): random features approximating
a shift-invariant kernel (Rahimi & Recht, 2007)."""
import numpy as np

from keras import backend as K
from keras import constraints
from keras import initializers
from keras.engine.base_layer import InputSpec, Layer

__all__ = ['RandomFourierFeatures']

_KERNELS = ('gaussian', 'laplacian')


def _unscaled_kernel_initializer(kernel_initializer, shape):
    """The initializer of the random projection: standard normal for the Gaussian kernel,
    standard Cauchy samples (drawn now, with numpy's generator) for the Laplacian one."""
    if not isinstance(kernel_initializer, str):
        return initializers.get(kernel_initializer)
    if kernel_initializer.lower() == 'gaussian':
        return initializers.RandomNormal(stddev=1.0)
    uniform = np.random.uniform(low=0.0, high=1.0, size=shape)
    return initializers.Constant(np.tan(np.pi * (uniform - 0.5)))


class RandomFourierFeatures(Layer):
    """`cos(x @ W / kernel_scale + b)` with a fixed random `W` (`unscaled_kernel`) and phase
    `b` uniform in [0, 2 pi): `output_dim` features whose dot products approximate a
    Gaussian or Laplacian kernel of the inputs.

    # Arguments
        output_dim: the number of features (> 0).
        kernel_initializer: `'gaussian'`, `'laplacian'` or an initializer of `W`.
        scale: the initial `kernel_scale` (> 0; trainable, kept non-negative); default
            `sqrt(input_dim / 2)` for the Gaussian kernel, else 1.
        trainable: whether `kernel_scale` trains (`W` and `b` never do).

    # Raises
        ValueError: for `output_dim <= 0`, an unknown kernel name, `scale <= 0`, or inputs
            not of rank 2 with a known last dimension.
    """

    def __init__(self, output_dim, kernel_initializer='gaussian', scale=None, trainable=False,
                 name=None, **kwargs):
        if output_dim <= 0:
            raise ValueError('`output_dim` should be a positive integer. Received: %s'
                             % output_dim)
        if isinstance(kernel_initializer, str) and kernel_initializer.lower() not in _KERNELS:
            raise ValueError('Unsupported `kernel_initializer`: %s Expected one of: %s'
                             % (kernel_initializer, list(_KERNELS)))
        if scale is not None and scale <= 0.0:
            raise ValueError('When provided, `scale` should be a positive float. Received: %s'
                             % scale)
        super(RandomFourierFeatures, self).__init__(trainable=trainable, name=name, **kwargs)
        self.output_dim = output_dim
        self.kernel_initializer = kernel_initializer
        self.scale = scale

    def build(self, input_shape):
        if len(input_shape) != 2 or input_shape[1] is None:
            raise ValueError('RandomFourierFeatures takes inputs of rank 2 with a known last '
                             'dimension; got shape %s.' % (input_shape,))
        input_dim = input_shape[1]
        self.input_spec = InputSpec(ndim=2, axes={1: input_dim})
        self.unscaled_kernel = self.add_weight(
            name='unscaled_kernel', shape=(input_dim, self.output_dim),
            initializer=_unscaled_kernel_initializer(self.kernel_initializer,
                                                     (input_dim, self.output_dim)),
            trainable=False)
        self.bias = self.add_weight(
            name='bias', shape=(self.output_dim,),
            initializer=initializers.RandomUniform(minval=0.0, maxval=2 * np.pi),
            trainable=False)
        if self.scale is None:
            gaussian = (isinstance(self.kernel_initializer, str)
                        and self.kernel_initializer.lower() == 'gaussian')
            self.scale = float(np.sqrt(input_dim / 2.0)) if gaussian else 1.0
        self.kernel_scale = self.add_weight(
            name='kernel_scale', shape=(1,), initializer=initializers.Constant(self.scale),
            trainable=True, constraint=constraints.get('NonNeg'))
        super(RandomFourierFeatures, self).build(input_shape)

    def call(self, inputs):
        inputs = K.cast(inputs, 'float32')
        kernel = (1.0 / self.kernel_scale) * self.unscaled_kernel
        return K.cos(K.bias_add(K.dot(inputs, kernel), self.bias))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.output_dim)

    def get_config(self):
        kernel_initializer = self.kernel_initializer
        if not isinstance(kernel_initializer, str):
            kernel_initializer = initializers.serialize(kernel_initializer)
        config = {'output_dim': self.output_dim, 'kernel_initializer': kernel_initializer,
                  'scale': self.scale}
        base_config = super(RandomFourierFeatures, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))
