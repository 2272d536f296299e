"""Activations of TensorFlow's Keras 2 (`tf.keras` 2.x, `tf_keras`) that Keras 2.3.1 lacks.

`gelu`, `swish` (and its other name `silu`) and `mish`, with TensorFlow's formulas, written
with the backend. `register` makes them names of `keras.activations`, so
`Activation('swish')`, `Dense(8, activation='gelu')` and saved models that name them
deserialize; its override (`torchk.overrides`) calls it when `keras.activations` is
imported.
"""
import math

import torch

from keras import backend as K

__all__ = ['gelu', 'swish', 'silu', 'mish']

_SQRT_2_OVER_PI = math.sqrt(2. / math.pi)


def gelu(x, approximate=False):
    """Gaussian error linear unit, as `tf.nn.gelu`.

    `0.5 * x * (1 + erf(x / sqrt(2)))`, or with `approximate=True`
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))`.

    # Arguments
        x: Input tensor.
        approximate: whether to use the tanh approximation.

    # Returns
        A tensor of the same shape and dtype as `x`.
    """
    if approximate:
        return 0.5 * x * (1. + K.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1. + torch.erf(x / math.sqrt(2.)))


def swish(x):
    """Swish (SiLU), as `tf.nn.silu`: `x * sigmoid(x)`.

    # Arguments
        x: Input tensor.

    # Returns
        A tensor of the same shape and dtype as `x`.
    """
    return x * K.sigmoid(x)


def silu(x):
    """`swish` by its other name, `x * sigmoid(x)`.

    # Arguments
        x: Input tensor.

    # Returns
        A tensor of the same shape and dtype as `x`.
    """
    return swish(x)


def mish(x):
    """Mish, as `tf_keras.activations.mish`: `x * tanh(softplus(x))`.

    # Arguments
        x: Input tensor.

    # Returns
        A tensor of the same shape and dtype as `x`.
    """
    return x * K.tanh(K.softplus(x))


def register(keras_activations):
    """Makes every activation of this module a name of `keras_activations` (`keras.activations`)."""
    for name in __all__:
        setattr(keras_activations, name, globals()[name])
