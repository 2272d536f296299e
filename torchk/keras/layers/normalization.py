"""tf.keras 2's `BatchNormalization` semantics where they differ from Keras 2.3.1's (an override,
`torchk.overrides`)."""
import functools


def frozen_batch_normalization_infers(keras_call):
    """Override of `BatchNormalization.call`: with `trainable=False` the layer normalises with
    its moving statistics and leaves them as they are, in training too, as tf.keras 2 does
    (the fine-tuning rule: a frozen base model stays in inference mode); Keras 2.3.1
    normalises by the batch."""
    @functools.wraps(keras_call)
    def call(self, inputs, training=None):
        return keras_call(self, inputs, training=False if not self.trainable else training)
    return call
