"""`tf.keras.optimizers.experimental` (tf.keras 2.9-2.15: the optimizers that became
`tf.keras.optimizers` in 2.11): the same classes as `torchk.keras.optimizers`."""
from .._facade import reexport
from . import (SGD, Adadelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Ftrl,  # noqa: F401
               Nadam, Optimizer, RMSprop)

reexport(globals(), None)
