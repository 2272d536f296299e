"""tf.keras 2's `Sequential`."""
import keras
from keras.engine.input_layer import InputLayer

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
