"""Keras' own `Adam` (keras/optimizers.py) trains through the fused update of
torchk/passes/adam_fusion.py: the same weights and optimizer state as without the pass, and
`amsgrad` keeps the unfused chain."""
import numpy as np
import pytest

import keras
from keras.layers import LSTM, Dense, Embedding
from keras.models import Sequential

from torchk.passes import adam_fusion


def train(enabled, amsgrad, steps=5):
    adam_fusion.set_enabled(enabled)
    try:
        rng = np.random.RandomState(0)
        model = Sequential([Embedding(50, 8, input_length=6), LSTM(8),
                            Dense(1, activation='sigmoid')])
        model.compile(keras.optimizers.Adam(.01, amsgrad=amsgrad),
                      'binary_crossentropy')
        model.set_weights([rng.uniform(-.3, .3, w.shape) for w in model.get_weights()])
        x, y = rng.randint(0, 50, (16, 6)), rng.randint(0, 2, (16, 1)).astype('float32')
        losses = [model.train_on_batch(x, y) for _ in range(steps)]
    finally:
        adam_fusion.set_enabled(None)
    fused = any(isinstance(c, adam_fusion.Update)
                for c in model.train_function._program.__globals__.values())
    return fused, losses, model.get_weights() + model.optimizer.get_weights()


@pytest.mark.parametrize('amsgrad', [False, True])
def test_keras_adam_fused_equals_unfused(amsgrad):
    fused, losses, values = train(True, amsgrad)
    plain, plain_losses, plain_values = train(False, amsgrad)
    assert fused is not amsgrad and not plain
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    for a, b in zip(values, plain_values):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]
