"""tf.keras 2's recurrent layers where their defaults differ from Keras 2.3.1's: `GRU` and
`GRUCell` apply the reset gate after the recurrent matmul (`reset_after=True`, the form
tf.keras 2 and cuDNN use; Keras 2.3.1's default is False), so a tf.keras script's `GRU(n)`
has tf.keras' weights and shapes (a bias of shape `(2, 3 * n)`)."""
from keras import layers as _keras_layers


class GRU(_keras_layers.GRU):
    __doc__ = _keras_layers.GRU.__doc__

    def __init__(self, units, *args, reset_after=True, **kwargs):
        super(GRU, self).__init__(units, *args, reset_after=reset_after, **kwargs)


class GRUCell(_keras_layers.GRUCell):
    __doc__ = _keras_layers.GRUCell.__doc__

    def __init__(self, units, *args, reset_after=True, **kwargs):
        super(GRUCell, self).__init__(units, *args, reset_after=reset_after, **kwargs)
