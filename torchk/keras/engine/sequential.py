"""tf.keras 2's `Sequential`."""
import keras
from keras.engine.input_layer import InputLayer

from .. import eager
from .training import Model


class Sequential(Model, keras.Sequential):
    """tf.keras 2's `Sequential`: Keras 2.3.1's, with `training.Model`'s additions, and
    `keras.Input(...)` as its first entry (`input_layer_of`)."""

    def add(self, layer):
        """Adds a layer on top of the stack; the tensor of `keras.Input(...)` starts it."""
        layer = input_layer_of(layer)
        if isinstance(layer, InputLayer) and not self._layers:
            self._torchk_given_input = True
        super(Sequential, self).add(layer)

    def __call__(self, *args, **kwargs):
        if not self.built and args:
            self._note_data_dtype(args[0])
        return super(Sequential, self).__call__(*args, **kwargs)

    def _set_inputs(self, inputs, outputs=None, training=None):
        self._note_data_dtype(inputs)
        return super(Sequential, self)._set_inputs(inputs, outputs, training)

    def _note_data_dtype(self, inputs):
        """Keras 2.3.1 builds a model without an input shape from its first data (a call, a
        `fit`) with an `Input` of `floatx`; tf.keras' has the dtype of data of text or
        integers (`build` reads it)."""
        value = inputs[0] if isinstance(inputs, list) and len(inputs) == 1 else inputs
        if isinstance(value, (list, tuple, dict)) or not eager.is_eager(value):
            return
        dtype = eager.dtype_name(value)
        if not dtype.startswith(('float', 'bfloat')):
            self.__dict__['_torchk_data_dtype'] = dtype

    def build(self, input_shape=None):
        """Keras 2.3.1's; built from data of text or integers (`_set_inputs`), its `Input`
        has their dtype."""
        dtype = self.__dict__.pop('_torchk_data_dtype', None)
        if dtype is not None and input_shape and not self.inputs:
            x = keras.layers.Input(batch_shape=tuple(input_shape), dtype=dtype,
                                   name=self.name + '_input')
            self.inputs = [x]
            for layer in self._layers:
                x = layer(x)
            self.outputs = [x]
            self._build_input_shape = input_shape
        return super(Sequential, self).build(input_shape)

    def get_config(self):
        """Keras 2.3.1's configuration, starting with the `InputLayer` the model was given
        (`keras.Input`), as tf.keras writes it: its shape and dtype, which the first layer's
        configuration may not hold (`Embedding`'s has no length). Keras 2.3.1's
        `from_config` adds it back first."""
        config = super(Sequential, self).get_config()
        if getattr(self, '_torchk_given_input', False) and isinstance(self._layers[0],
                                                                      InputLayer):
            config['layers'].insert(0, {'class_name': 'InputLayer',
                                        'config': self._layers[0].get_config()})
        return config


def input_layer_of(layer):
    """tf.keras' `Sequential` takes the tensor of `keras.Input(...)` where Keras 2.3.1's
    takes layers only: that tensor stands for its `InputLayer`.

    # Returns
        The `InputLayer` that made `layer` if `layer` is such a tensor, else `layer`.
    """
    history = getattr(layer, '_keras_history', None)
    if history is not None and isinstance(history[0], InputLayer):
        return history[0]
    return layer
