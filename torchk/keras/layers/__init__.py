"""`tf.keras.layers`: Keras 2.3.1's layers, with torchk's (`torchk/layers/`: normalization,
attention, preprocessing, global pooling with `keepdims`, `EinsumDense`, ...), `Input` with
tf.keras' arguments (`input_layer.py`),
tf.keras' other names of the same classes (`Convolution2DTranspose`, ...), and
`experimental`; `GRU` and `GRUCell` with tf.keras' default `reset_after=True` and `RNN`
with nested inputs, states and outputs (`recurrent.py`), `BatchNormalization` in inference
mode when frozen (`normalization.py`), convolutions through `convolution_op`
(`convolutional.py`), and `Dense` casting integer inputs to its dtype (`core.py`)."""
from keras import layers as _keras_layers
from keras.layers import InputLayer, Layer  # noqa: F401
from keras.layers.wrappers import Wrapper  # noqa: F401

from .._facade import reexport
from . import experimental  # noqa: F401
from .input_layer import Input  # noqa: F401
from .recurrent import GRU, GRUCell  # noqa: F401

Convolution1DTranspose = _keras_layers.Conv1DTranspose
Convolution2DTranspose = _keras_layers.Conv2DTranspose
Convolution3DTranspose = _keras_layers.Conv3DTranspose
SeparableConvolution1D = _keras_layers.SeparableConv1D
SeparableConvolution2D = _keras_layers.SeparableConv2D

reexport(globals(), _keras_layers, exclude=('Model', 'Sequential', 'absolute_import'))
