"""`tf.keras.optimizers.legacy` (tf.keras 2.11-2.15): the same classes as
`torchk.keras.optimizers`, whose update rules are Keras 2's."""
from . import SGD, Adadelta, Adagrad, Adam, Adamax, Nadam, Optimizer, RMSprop  # noqa: F401

__all__ = ['Optimizer', 'SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'Adam', 'Adamax', 'Nadam']
