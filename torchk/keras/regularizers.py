"""`tf.keras.regularizers`: Keras 2.3.1's, with tf.keras 2's `L1` and `L2` classes
(Keras' `L1L2`, defaults 0.01)."""
from keras import regularizers as _keras_regularizers
from keras.regularizers import L1L2

from ._facade import reexport


def L1(l1=0.01):
    """`L1L2(l1=l1)`, as tf.keras' `L1`."""
    return L1L2(l1=l1)


def L2(l2=0.01):
    """`L1L2(l2=l2)`, as tf.keras' `L2`."""
    return L1L2(l2=l2)


reexport(globals(), _keras_regularizers)
