"""`tf.keras.regularizers`: Keras 2.3.1's, with tf.keras 2's `L1` and `L2` classes
(Keras' `L1L2`, defaults 0.01) and `OrthogonalRegularizer`."""
from keras import backend as K
from keras import regularizers as _keras_regularizers
from keras.regularizers import L1L2, Regularizer
from keras.utils import generic_utils

from ._facade import reexport


def L1(l1=0.01):
    """`L1L2(l1=l1)`, as tf.keras' `L1`."""
    return L1L2(l1=l1)


def L2(l2=0.01):
    """`L1L2(l2=l2)`, as tf.keras' `L2`."""
    return L1L2(l2=l2)


class OrthogonalRegularizer(Regularizer):
    """Penalizes the cosine similarity of the rows (or columns) of a 2-D weight with each
    other (tf.keras 2.15's): `factor` times the mean absolute similarity of the pairs.

    # Arguments
        factor: the penalty's weight.
        mode: `'rows'` or `'columns'`, the vectors made orthogonal.
    """

    def __init__(self, factor=0.01, mode='rows'):
        if mode not in ('rows', 'columns'):
            raise ValueError('OrthogonalRegularizer: mode must be "rows" or "columns"; got %r.'
                             % (mode,))
        self.factor = factor
        self.mode = mode

    def __call__(self, x):
        if K.ndim(x) != 2:
            raise ValueError('OrthogonalRegularizer takes a 2-D weight (as a Dense kernel); '
                             'got shape %s.' % (K.int_shape(x),))
        rows = self.mode == 'rows'
        x = K.l2_normalize(x, axis=1 if rows else 0)
        product = K.dot(x, K.transpose(x)) if rows else K.dot(K.transpose(x), x)
        size = K.int_shape(x)[0 if rows else 1]
        off_diagonal = product * (1. - K.eye(size, dtype=K.dtype(x)))
        pairs = size * (size - 1.) / 2.
        return self.factor * 0.5 * K.sum(K.abs(off_diagonal)) / pairs

    def get_config(self):
        return {'factor': float(self.factor), 'mode': self.mode}


orthogonal_regularizer = OrthogonalRegularizer
generic_utils.get_custom_objects().setdefault('OrthogonalRegularizer', OrthogonalRegularizer)

reexport(globals(), _keras_regularizers)
