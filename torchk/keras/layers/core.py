"""tf.keras 2's `Dense` semantics where they differ from Keras 2.3.1's (an override of
`torchk.overrides`)."""
import functools

from keras import backend as K


def casting_integer_inputs(keras_call):
    """Override of Keras 2.3.1's `Dense.call`: inputs that are not floating (integers, bools:
    multi-hot arrays) are cast to the layer's dtype, as tf.keras' `Dense.call` casts them;
    Keras 2.3.1's multiplies them as they are, which torch refuses against a float kernel."""
    @functools.wraps(keras_call)
    def call(self, inputs, *args, **kwargs):
        if not K.dtype(inputs).startswith(('float', 'bfloat')):
            inputs = K.cast(inputs, self.dtype or K.floatx())
        return keras_call(self, inputs, *args, **kwargs)
    return call
