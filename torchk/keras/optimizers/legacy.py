"""`tf.keras.optimizers.legacy` (tf.keras 2.11-2.15): the same classes as
`torchk.keras.optimizers`, whose update rules are Keras 2's."""
from .._facade import reexport
from . import SGD, Adadelta, Adagrad, Adam, Adamax, Ftrl, Nadam, Optimizer, RMSprop  # noqa: F401

reexport(globals(), None)
