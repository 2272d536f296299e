"""`tf.keras.losses`: Keras 2.3.1's loss functions and classes (`Huber`,
`SparseCategoricalCrossentropy(from_logits=True)`, ...), `Reduction` with tf.keras'
`AUTO`, and the loss classes' squeezing of predictions one axis longer than the targets."""
import functools

from keras import backend as K
from keras import losses as _keras_losses
from keras.utils import losses_utils as _losses_utils

from ._facade import reexport

reexport(globals(), _keras_losses, exclude=('losses_utils', 'deserialize_keras_object',
                                            'serialize_keras_object'))


class Reduction(_losses_utils.Reduction):
    """tf.keras' loss reductions: Keras 2.3.1's and `AUTO` (`'auto'`), which a loss reads as
    `SUM_OVER_BATCH_SIZE`, as tf.keras does outside a distribution strategy's custom loop."""

    AUTO = 'auto'

    @classmethod
    def all(cls):
        return (cls.AUTO,) + _losses_utils.Reduction.all()


def auto_reduction(keras_init):
    """Override of `Loss.__init__`: Keras 2.3.1's `Loss` takes `reduction='auto'` (tf.keras'
    default) as `'sum_over_batch_size'`."""
    @functools.wraps(keras_init)
    def __init__(self, reduction=Reduction.SUM_OVER_BATCH_SIZE, name=None):
        if reduction == Reduction.AUTO:
            reduction = Reduction.SUM_OVER_BATCH_SIZE
        keras_init(self, reduction=reduction, name=name)
    return __init__


def squeezed_predictions(keras_call):
    """Override of `LossFunctionWrapper.call`: tf.keras 2's loss functions wrapped as classes
    squeeze a last axis of 1 from the predictions (or the targets) whose rank is one more
    than the other's, as `LossFunctionWrapper.call` does there: an `Embedding` + `Dense(1)`
    model's `(batch, steps, 1)` output against `(batch, 1)` labels. Keras 2.3.1 passes them
    as they are."""
    @functools.wraps(keras_call)
    def call(self, y_true, y_pred):
        if K.is_tensor(y_pred) and K.is_tensor(y_true):
            y_pred, y_true = _losses_utils.squeeze_or_expand_dimensions(y_pred, y_true)
        return keras_call(self, y_true, y_pred)
    return call
