"""Keras' own `Adam` (keras/optimizers.py) trains through the fused update of
torchk/passes/adam_fusion.py: the same weights and optimizer state as without the pass, and
`amsgrad` keeps the unfused chain."""
import numpy as np
import pytest

import keras
from dispatched import DispatchedOps
from keras.layers import LSTM, Conv2D, Dense, DepthwiseConv2D, Embedding, Flatten
from keras.models import Sequential

from torchk.passes import adam_fusion


def _recurrent():
    model = Sequential([Embedding(50, 8, input_length=6), LSTM(8),
                        Dense(1, activation='sigmoid')])
    return model, lambda rng: rng.randint(0, 50, (16, 6))


def _convolutional():
    model = Sequential([Conv2D(4, 3, input_shape=(6, 6, 2)), DepthwiseConv2D(3),
                        Conv2D(3, 1), Flatten(), Dense(1, activation='sigmoid')])
    return model, lambda rng: rng.rand(16, 6, 6, 2).astype('float32')


MODELS = {'recurrent': _recurrent, 'convolutional': _convolutional}


def train(enabled, amsgrad, model='recurrent', steps=5):
    adam_fusion.set_enabled(enabled)
    try:
        rng = np.random.RandomState(0)
        model, data = MODELS[model]()
        model.compile(keras.optimizers.Adam(.01, amsgrad=amsgrad),
                      'binary_crossentropy')
        model.set_weights([rng.uniform(-.3, .3, w.shape) for w in model.get_weights()])
        x, y = data(rng), rng.randint(0, 2, (16, 1)).astype('float32')
        losses = [model.train_on_batch(x, y) for _ in range(steps - 1)]
        with DispatchedOps() as dispatched:
            losses.append(model.train_on_batch(x, y))
    finally:
        adam_fusion.set_enabled(None)
    fused = any(isinstance(c, adam_fusion.Update)
                for c in model.train_function._program.__globals__.values())
    return fused, losses, model.get_weights() + model.optimizer.get_weights(), dispatched.names


@pytest.mark.parametrize('model', sorted(MODELS))
@pytest.mark.parametrize('amsgrad', [False, True])
def test_keras_adam_fused_equals_unfused(amsgrad, model):
    fused, losses, values, _ = train(True, amsgrad, model)
    plain, plain_losses, plain_values, _ = train(False, amsgrad, model)
    assert fused is not amsgrad and not plain
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    for a, b in zip(values, plain_values):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]


def test_convolution_kernels_are_updated_without_copies():
    """The kernels, their gradients and Adam's moments share one memory order (the torch
    weight's, `variables.lay_out`): the fused step copies none of them."""
    fused, _, _, names = train(True, False, 'convolutional')
    assert fused and 'aten::clone' not in names
