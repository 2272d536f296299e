"""`tf.keras.losses`: Keras 2.3.1's loss functions and classes (`Huber`,
`SparseCategoricalCrossentropy(from_logits=True)`, ...), and `Reduction`."""
from keras import losses as _keras_losses
from keras.utils.losses_utils import Reduction  # noqa: F401

from ._facade import reexport

reexport(globals(), _keras_losses, exclude=('losses_utils', 'deserialize_keras_object',
                                            'serialize_keras_object'))
