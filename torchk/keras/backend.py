"""`tf.keras.backend`: Keras 2.3.1's backend functions (torchk's ops), and tf.keras 2's
focal cross-entropies and `random_bernoulli`."""
from keras import backend as _keras_backend

from .. import losses as _losses
from ._facade import reexport

binary_focal_crossentropy = _losses.binary_focal_crossentropy_elements
categorical_focal_crossentropy = _losses.categorical_focal_crossentropy_elements


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    """A tensor of `shape` whose entries are 1 with probability `p` and 0 otherwise.

    # Arguments
        shape: the shape (a tuple of ints).
        p: the probability of a 1, a float in [0, 1].
        dtype: the result's dtype (default: floatx).
        seed: an int seed, or None.

    # Returns
        The tensor of 0s and 1s.
    """
    if not 0. <= p <= 1.:
        raise ValueError('random_bernoulli: p must be in [0, 1]; got %r.' % (p,))
    dtype = dtype or _keras_backend.floatx()
    uniform = _keras_backend.random_uniform(shape, dtype='float32', seed=seed)
    return _keras_backend.cast(_keras_backend.less(uniform, p), dtype)


reexport(globals(), _keras_backend)
