"""`tf.keras.optimizers.experimental` (tf.keras 2.9-2.15: the optimizers that became
`tf.keras.optimizers` in 2.11): the same classes as `torchk.keras.optimizers`."""
from . import SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, Nadam, Optimizer, RMSprop  # noqa: F401

__all__ = ['Optimizer', 'SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'Adam', 'AdamW', 'Adamax',
           'Nadam']
