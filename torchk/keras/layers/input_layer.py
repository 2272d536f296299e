"""tf.keras 2's `Input`: Keras 2.3.1's, with tf.keras' arguments."""
from keras.engine import input_layer


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          ragged=None, type_spec=None, **kwargs):
    """A Keras tensor to start a functional model with (tf.keras 2's `keras.Input`).

    # Arguments
        shape: the shape of one sample (without the batch axis).
        batch_size: a fixed batch size, or None.
        name, dtype, sparse, tensor: as in Keras 2.3.1's `Input`.
        ragged, type_spec: refused (torchk has no ragged or spec-typed inputs).
        **kwargs: `batch_shape` / `batch_input_shape`, the whole shape instead of `shape`.

    # Returns
        The input's Keras tensor.

    # Raises
        ValueError: for `ragged=True`, a `type_spec`, `batch_size` with a whole shape, or
            an unknown keyword argument.
    """
    if ragged:
        raise ValueError('Input(ragged=True): torchk has no ragged tensors; pad the '
                         'sequences to one length (keras.utils.pad_sequences) and mask them.')
    if type_spec is not None:
        raise ValueError('Input(type_spec=%r): torchk takes shape and dtype, not a TypeSpec.'
                         % (type_spec,))
    batch_shape = kwargs.pop('batch_shape', kwargs.pop('batch_input_shape', None))
    if kwargs:
        raise ValueError('Input got unknown keyword arguments %s; it takes shape, '
                         'batch_size, name, dtype, sparse, tensor and batch_shape.'
                         % sorted(kwargs))
    if batch_size is not None:
        if batch_shape is not None:
            raise ValueError('Input takes batch_size with shape, not with batch_shape %r.'
                             % (tuple(batch_shape),))
        if shape is None:
            raise ValueError('Input(batch_size=%r) needs shape.' % (batch_size,))
        batch_shape, shape = (batch_size,) + tuple(shape), None
    return input_layer.Input(shape=shape, batch_shape=batch_shape, name=name, dtype=dtype,
                             sparse=bool(sparse), tensor=tensor)
