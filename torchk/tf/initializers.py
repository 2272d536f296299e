"""TF 2's initializer classes at the top of `tf` (`tf.random_normal_initializer`, ...):
objects called with a shape (and dtype) that return a new tensor, as layers written against
`tf` use them (`w_init = tf.random_normal_initializer(); tf.Variable(w_init(shape))`)."""
import numpy as np

from .. import tf_dtypes as dtypes
from .creation import fill, random_normal, random_uniform, shape_tuple
from .tensors import convert_to_tensor

__all__ = ['constant_initializer', 'ones_initializer', 'random_normal_initializer',
           'random_uniform_initializer', 'zeros_initializer']


class _Initializer(object):
    """The configuration (`get_config`/`from_config`) of an initializer."""

    _arguments = ()

    def get_config(self):
        return {name: getattr(self, name) for name in self._arguments}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class zeros_initializer(_Initializer):  # noqa: N801  (TF's class name)
    """`tf.zeros_initializer()(shape, dtype=tf.float32)`: zeros."""

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return fill(shape_tuple(shape), convert_to_tensor(0, dtype=dtype))


class ones_initializer(_Initializer):  # noqa: N801
    """`tf.ones_initializer()(shape, dtype=tf.float32)`: ones."""

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return fill(shape_tuple(shape), convert_to_tensor(1, dtype=dtype))


class constant_initializer(_Initializer):  # noqa: N801
    """`tf.constant_initializer(value)`: `value` (a number, broadcast, or an array of the
    shape asked for).

    # Raises
        ValueError: when `value` has another number of elements than the shape.
    """

    _arguments = ('value',)

    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        shape = shape_tuple(shape)
        value = np.asarray(self.value)
        if value.size == 1:
            return fill(shape, convert_to_tensor(value.reshape(()), dtype=dtype))
        if value.size != int(np.prod(shape)):
            raise ValueError('constant_initializer: %d values cannot fill the shape %s.'
                             % (value.size, shape))
        return convert_to_tensor(value.reshape(shape), dtype=dtype)


class random_normal_initializer(_Initializer):  # noqa: N801
    """`tf.random_normal_initializer(mean=0.0, stddev=0.05, seed=None)`: normal values."""

    _arguments = ('mean', 'stddev', 'seed')

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return random_normal(shape, self.mean, self.stddev, dtype=dtype)


class random_uniform_initializer(_Initializer):  # noqa: N801
    """`tf.random_uniform_initializer(minval=-0.05, maxval=0.05, seed=None)`: uniform values
    in `[minval, maxval)`."""

    _arguments = ('minval', 'maxval', 'seed')

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=dtypes.float32, **kwargs):
        return random_uniform(shape, self.minval, self.maxval, dtype=dtype)
