"""`tf.keras.initializers`: Keras 2.3.1's, with tf.keras 2's class names.

`GlorotUniform()`, `HeNormal()`, ... are Keras' `VarianceScaling` with the same scale, mode
and distribution (Keras 2.3.1's 'normal' is tf.keras' 'truncated_normal'; saved as
`VarianceScaling`); `RandomNormal` and `RandomUniform` take tf.keras'
defaults (stddev 0.05, range +-0.05), as Keras 2.3.1's do; `variance_scaling` is
`VarianceScaling`, as in tf.keras. `get(None)` is None, as tf.keras' (`none_gets_none`, an
override of `torchk.overrides`).
"""
import functools

from keras import initializers as _keras_initializers
from keras.initializers import VarianceScaling

from ._facade import reexport


def _variance_scaling(name, scale, mode, distribution):
    def make(seed=None):
        return VarianceScaling(scale=scale, mode=mode, distribution=distribution, seed=seed)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = 'VarianceScaling(scale=%s, mode=%r, distribution=%r), as tf.keras\' %s.' % (
        scale, mode, distribution, name)
    return make


GlorotUniform = _variance_scaling('GlorotUniform', 1., 'fan_avg', 'uniform')
GlorotNormal = _variance_scaling('GlorotNormal', 1., 'fan_avg', 'normal')
HeUniform = _variance_scaling('HeUniform', 2., 'fan_in', 'uniform')
HeNormal = _variance_scaling('HeNormal', 2., 'fan_in', 'normal')
LecunUniform = _variance_scaling('LecunUniform', 1., 'fan_in', 'uniform')
LecunNormal = _variance_scaling('LecunNormal', 1., 'fan_in', 'normal')
variance_scaling = VarianceScaling


def none_gets_none(keras_get):
    """Override of Keras 2.3.1's `initializers.get`: `get(None)` is None, as tf.keras': a
    layer given `bias_initializer=None` (TF's imbalanced-data tutorial) then initialises that
    weight with `add_weight`'s default, where Keras 2.3.1 raises 'Could not interpret
    initializer identifier: None'."""
    @functools.wraps(keras_get)
    def get(identifier):
        return None if identifier is None else keras_get(identifier)
    return get


reexport(globals(), _keras_initializers, exclude=('VarianceScaling',))
globals()['__all__'].append('VarianceScaling')
