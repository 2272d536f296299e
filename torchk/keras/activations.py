"""`tf.keras.activations`: Keras 2.3.1's, with torchk's `gelu`, `swish`/`silu` and `mish`."""
from keras import activations as _keras_activations

from ..activations import gelu, mish, silu, swish  # noqa: F401
from ._facade import reexport

reexport(globals(), _keras_activations)
