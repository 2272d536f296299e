"""torch's fused LSTM/GRU replace the generic loop only where they compute the same thing."""
import numpy as np
import pytest

import keras
from keras import backend as K
from keras.layers import GRU, LSTM, Dense
from keras.models import Sequential

from torchk import rnn as torchk_rnn


def sigmoid_copy(x):
    """The same function as Keras' sigmoid, but not the same object: forces the loop."""
    return K.sigmoid(x)


def build(layer_class, fused, go_backwards, **options):
    # 'sigmoid' explicitly: it is the default only since Keras 2.3.0 (2.2.x: 'hard_sigmoid').
    options['recurrent_activation'] = 'sigmoid' if fused else sigmoid_copy
    model = Sequential([layer_class(6, input_shape=(7, 3), go_backwards=go_backwards,
                                    return_sequences=True, **options),
                        keras.layers.Flatten(), Dense(1)])
    model.compile(optimizer='sgd', loss='mse')
    return model


def recurrence_function(model):
    """The function running the recurrent layer's node."""
    output = model.layers[0].output
    return output.node.fn


@pytest.mark.parametrize('layer_class, options, fused_fn', [
    (LSTM, {}, torchk_rnn._fused_lstm),
    (LSTM, {'implementation': 1, 'unit_forget_bias': False}, torchk_rnn._fused_lstm),
    (GRU, {'reset_after': True}, torchk_rnn._fused_gru),
    (GRU, {'reset_after': True, 'use_bias': False}, torchk_rnn._fused_gru),
])
@pytest.mark.parametrize('go_backwards', [False, True])
def test_fused_recurrence_equals_the_generic_loop(layer_class, options, fused_fn, go_backwards):
    rng = np.random.RandomState(0)
    x = rng.randn(5, 7, 3).astype('float32')
    y = rng.randn(5, 1).astype('float32')
    fused = build(layer_class, True, go_backwards, **options)
    looped = build(layer_class, False, go_backwards, **options)
    looped.set_weights(fused.get_weights())
    assert recurrence_function(fused) is fused_fn.__wrapped__
    assert recurrence_function(looped).__name__ == '_run_rnn'
    np.testing.assert_allclose(fused.predict(x), looped.predict(x), rtol=1e-5, atol=1e-6)
    fused.train_on_batch(x, y)
    looped.train_on_batch(x, y)
    for after_fused, after_looped in zip(fused.get_weights(), looped.get_weights()):
        np.testing.assert_allclose(after_fused, after_looped, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('layer, reason', [
    (LSTM(6, input_shape=(7, 3), recurrent_activation='hard_sigmoid'), 'hard sigmoid gates'),
    (LSTM(6, input_shape=(7, 3), dropout=0.2), 'dropout'),
    (LSTM(6, input_shape=(7, 3), unroll=True), 'unroll'),
    (GRU(6, input_shape=(7, 3)), 'reset_after=False'),
    (GRU(6, input_shape=(7, 3), reset_after=True, activation='relu'), 'relu activation'),
])
def test_loop_is_kept_where_torch_computes_something_else(layer, reason):
    model = Sequential([layer])
    assert model.layers[0].output.node.fn.__name__ != '_fused_lstm', reason
    assert model.layers[0].output.node.fn.__name__ != '_fused_gru', reason


def test_masked_inputs_take_the_cell_kernel():
    model = Sequential([keras.layers.Embedding(10, 3, mask_zero=True, input_length=7),
                        LSTM(6)])
    assert model.layers[1].output.node.fn.__name__ == '_cell_recurrence'
