"""tf.keras 2's `Sequential`."""
import keras

from .training import Model


class Sequential(Model, keras.Sequential):
    """tf.keras 2's `Sequential`: Keras 2.3.1's, with `training.Model`'s additions."""
