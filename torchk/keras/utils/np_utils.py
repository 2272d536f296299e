"""tf.keras' `to_ordinal` (Keras 2.3.1 has `to_categorical`)."""
import numpy as np


def to_ordinal(y, num_classes=None, dtype='float32'):
    """Ordinal encoding of class indices: class `c` of `n` becomes `n - 1` values, the
    first `c` of them 1, the rest 0.

    # Arguments
        y: array-like of class indices; a last axis of size 1 is dropped.
        num_classes: the number of classes (default: `max(y) + 1`).
        dtype: the result's dtype.

    # Returns
        An array of shape `y.shape + (num_classes - 1,)`.
    """
    y = np.array(y, dtype='int')
    shape = y.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    if not num_classes:
        num_classes = int(np.max(y)) + 1
    ordinal = (np.arange(num_classes - 1) < y[:, None]).astype(dtype)
    return ordinal.reshape(shape + (num_classes - 1,))
