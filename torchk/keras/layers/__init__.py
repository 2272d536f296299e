"""`tf.keras.layers`: Keras 2.3.1's layers, with torchk's (`torchk/layers/`: normalization,
attention, preprocessing, global pooling with `keepdims`, ...), `Input` and
`experimental.preprocessing`."""
from keras import layers as _keras_layers
from keras.layers import Input, InputLayer, Layer  # noqa: F401

from .._facade import reexport
from . import experimental  # noqa: F401

reexport(globals(), _keras_layers, exclude=('Model', 'Sequential', 'absolute_import'))
