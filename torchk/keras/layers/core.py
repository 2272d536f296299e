"""tf.keras 2's `Dense` semantics where they differ from Keras 2.3.1's."""
import functools

from keras import backend as K
from keras import layers as _keras_layers


def dense_casts_its_inputs():
    """Makes `Dense` cast inputs that are not floating (integers, bools: multi-hot arrays)
    to its dtype, as tf.keras' `Dense.call` does; Keras 2.3.1's multiplies them as they are,
    which torch refuses against a float kernel."""
    layer_class = _keras_layers.Dense
    keras_call = layer_class.call
    if getattr(keras_call, '_torchk_casts_inputs', False):
        return

    @functools.wraps(keras_call)
    def call(self, inputs, *args, **kwargs):
        if not K.dtype(inputs).startswith(('float', 'bfloat')):
            inputs = K.cast(inputs, self.dtype or K.floatx())
        return keras_call(self, inputs, *args, **kwargs)
    call._torchk_casts_inputs = True
    layer_class.call = call
