"""`tf.keras.losses`: Keras 2.3.1's loss functions and classes (`Huber`,
`SparseCategoricalCrossentropy(from_logits=True)`, ...), and `Reduction` with tf.keras'
`AUTO`."""
import functools

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


def _auto_reduction():
    """Keras 2.3.1's `Loss` takes `reduction='auto'` (tf.keras' default) as
    `'sum_over_batch_size'`."""
    keras_init = _keras_losses.Loss.__init__
    if getattr(keras_init, '_torchk_auto_reduction', False):
        return

    @functools.wraps(keras_init)
    def __init__(self, reduction=Reduction.SUM_OVER_BATCH_SIZE, name=None):
        if reduction == Reduction.AUTO:
            reduction = Reduction.SUM_OVER_BATCH_SIZE
        keras_init(self, reduction=reduction, name=name)
    __init__._torchk_auto_reduction = True
    _keras_losses.Loss.__init__ = __init__


_auto_reduction()
