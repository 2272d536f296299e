"""tf.keras 2's `BatchNormalization` semantics where they differ from Keras 2.3.1's."""
import functools

from keras import layers as _keras_layers


def frozen_batch_normalization_infers():
    """Makes `BatchNormalization` with `trainable=False` normalise with its moving statistics
    and leave them as they are, in training too, as tf.keras 2 does (the fine-tuning rule:
    a frozen base model stays in inference mode); Keras 2.3.1 normalises by the batch."""
    layer_class = _keras_layers.BatchNormalization
    keras_call = layer_class.call
    if getattr(keras_call, '_torchk_frozen_infers', False):
        return

    @functools.wraps(keras_call)
    def call(self, inputs, training=None):
        return keras_call(self, inputs, training=False if not self.trainable else training)
    call._torchk_frozen_infers = True
    layer_class.call = call
