"""torch's fused LSTM/GRU and the hand-written kernels of rnn_kernels.py replace the generic loop
only where they compute the same thing, and compute it: outputs and weights after training."""
import contextlib
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import keras
from keras import backend as K
from keras.layers import GRU, LSTM, Bidirectional, Dense, SimpleRNN
from keras.models import Sequential

from devices import tolerance
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
    (GRU, {'reset_after': True}, torchk_rnn._cell_recurrence),
    (GRU, {'reset_after': True, 'use_bias': False}, torchk_rnn._cell_recurrence),
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
    np.testing.assert_allclose(fused.predict(x), looped.predict(x), rtol=tolerance(1e-5, 1e-4),
                               atol=tolerance(1e-6, 1e-5))  # cuDNN's summation order on CUDA
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


def test_masked_inputs_take_the_cell_kernel():
    model = Sequential([keras.layers.Embedding(10, 3, mask_zero=True, input_length=7),
                        LSTM(6)])
    assert model.layers[1].output.node.fn.__name__ == '_cell_recurrence'


# ------------------------------------------------------------------------------------------
# The hand-written kernels of torchk/rnn_kernels.py against the generic loop
# (`rnn.fast_paths = False`), on the same weights, data and dropout masks.

@contextlib.contextmanager
def path_with_seeded_dropout(fast):
    """Builds on the fast path or the generic loop, with `K.dropout` seeded per call in call
    order: the cells of two builds draw the same masks in whatever order the programs run."""
    original, seeds = K.dropout, itertools.count()
    K.dropout = lambda x, level, noise_shape=None, seed=None: original(x, level, noise_shape,
                                                                       next(seeds))
    torchk_rnn.fast_paths = fast
    try:
        yield
    finally:
        torchk_rnn.fast_paths = True
        K.dropout = original


def model_pair(make_layer, timesteps=7, features=3, masked=False, **model_options):
    """The same model built twice: on the fast path and on the generic loop."""
    models = []
    for fast in (True, False):
        with path_with_seeded_dropout(fast):
            inputs = keras.layers.Input(shape=(timesteps, features), **model_options)
            x = keras.layers.Masking(0.)(inputs) if masked else inputs
            x = make_layer()(x)
            outputs = Dense(2)(x)
            model = keras.models.Model(inputs, outputs)
            model.compile(optimizer='sgd', loss='mse')
        models.append(model)
    models[1].set_weights(models[0].get_weights())
    return models


def recurrence_names(model):
    return {getattr(getattr(layer.output, 'node', None), 'fn', None).__name__
            for layer in model.layers if hasattr(getattr(layer.output, 'node', None), 'fn')}


def sequences(samples=6, timesteps=7, features=3, masked=False, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(samples, timesteps, features).astype('float32')
    if masked:
        lengths = rng.randint(1, timesteps + 1, size=samples)
        x[np.arange(timesteps)[None] >= lengths[:, None]] = 0.
        x[0, :2] = 0.  # leading masked steps: outputs are zeros until the first kept step
    return x


def assert_same_training(fast, looped, x, steps=3):
    """Predictions, then weights after `steps` SGD steps."""
    np.testing.assert_allclose(fast.predict(x), looped.predict(x), rtol=1e-5, atol=1e-6)
    shape = (len(x),) + fast.output_shape[1:]
    y = np.random.RandomState(1).randn(*shape).astype('float32')
    for _ in range(steps):
        for model in (fast, looped):
            model.train_on_batch(x, y)
    for after_fast, after_looped in zip(fast.get_weights(), looped.get_weights()):
        np.testing.assert_allclose(after_fast, after_looped, rtol=1e-4, atol=1e-5)


# Recurrent dropout takes the kernel with implementation=2 only (implementation=1 draws a mask
# per gate); it is named because Keras 2.2's default is 1 (2.3.0 made it 2).
KERNEL_CASES = [
    (LSTM, dict(recurrent_activation='hard_sigmoid')),
    (LSTM, dict(activation='relu', implementation=1)),
    (LSTM, dict(dropout=0.3, recurrent_dropout=0.3, implementation=2)),
    (LSTM, dict(dropout=0.3, implementation=1, use_bias=False)),
    (GRU, {}),
    (GRU, dict(recurrent_activation='hard_sigmoid', implementation=1)),
    (GRU, dict(reset_after=True, activation='linear')),
    (GRU, dict(dropout=0.3, recurrent_dropout=0.3, implementation=2)),
    (GRU, dict(reset_after=True, dropout=0.3, recurrent_dropout=0.3, use_bias=False,
               implementation=2)),
    (GRU, dict(dropout=0.3, implementation=1)),
    (SimpleRNN, {}),
    (SimpleRNN, dict(dropout=0.3, recurrent_dropout=0.3, activation='relu')),
]


@pytest.mark.parametrize('layer_class, options', KERNEL_CASES)
@pytest.mark.parametrize('masked', [False, True])
@pytest.mark.parametrize('go_backwards', [False, True])
def test_cell_kernel_equals_the_generic_loop(layer_class, options, masked, go_backwards):
    fast, looped = model_pair(lambda: layer_class(5, return_sequences=True,
                                                  go_backwards=go_backwards, **options),
                              masked=masked)
    assert '_cell_recurrence' in recurrence_names(fast)
    assert '_run_rnn' in recurrence_names(looped)
    assert_same_training(fast, looped, sequences(masked=masked))


# A layer returning its last output only: the gradient reaches the kernels through the last
# state alone, and the recurrent-dropout mask is folded into the step factors.
@pytest.mark.parametrize('layer_class, options', [
    (LSTM, dict(dropout=0.3, recurrent_dropout=0.3, implementation=2)),
    (GRU, dict(dropout=0.3, recurrent_dropout=0.3, implementation=2)),
    (GRU, dict(reset_after=True, recurrent_dropout=0.3, implementation=2)),
    (SimpleRNN, dict(recurrent_dropout=0.3)),
])
@pytest.mark.parametrize('masked', [False, True])
def test_cell_kernel_on_the_last_output_equals_the_generic_loop(layer_class, options, masked):
    fast, looped = model_pair(lambda: layer_class(5, **options), masked=masked)
    assert '_cell_recurrence' in recurrence_names(fast)
    assert_same_training(fast, looped, sequences(masked=masked))


@pytest.mark.parametrize('layer_class', [LSTM, GRU, SimpleRNN])
def test_masked_kernel_is_invariant_to_padding_length(layer_class):
    model = Sequential([keras.layers.Masking(0., input_shape=(None, 3)), layer_class(4)])
    x = sequences(masked=True)
    longer = np.concatenate([x, np.zeros((len(x), 5, 3), 'float32')], axis=1)
    np.testing.assert_allclose(model.predict(x), model.predict(longer), rtol=1e-5, atol=1e-6)


def test_stateful_kernel_carries_states_like_the_loop():
    fast, looped = model_pair(lambda: GRU(4, stateful=True, return_state=False),
                              batch_shape=(6, 7, 3))
    x = sequences()
    for _ in range(2):
        np.testing.assert_allclose(fast.predict(x, batch_size=6),
                                   looped.predict(x, batch_size=6), rtol=1e-5, atol=1e-6)
    fast.reset_states()
    looped.reset_states()
    assert_same_training(fast, looped, x, steps=2)


def test_bidirectional_kernel_with_initial_state_and_return_state():
    def bidirectional_lstm():
        return Bidirectional(LSTM(4, return_sequences=True, dropout=0.2,
                                  recurrent_dropout=0.2))
    fast, looped = model_pair(bidirectional_lstm, masked=True)
    assert_same_training(fast, looped, sequences(masked=True))

    def with_states(fast):
        with path_with_seeded_dropout(fast):
            inputs = keras.layers.Input(shape=(7, 3))
            h0 = keras.layers.Input(shape=(4,))
            outputs, h = SimpleRNN(4, return_state=True)(inputs, initial_state=[h0])
            return keras.models.Model([inputs, h0], [outputs, h])
    fast, looped = with_states(True), with_states(False)
    looped.set_weights(fast.get_weights())
    feed = [sequences(), np.random.RandomState(2).randn(6, 4).astype('float32')]
    for got, expected in zip(fast.predict(feed), looped.predict(feed)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('layer, reason', [
    (LSTM(5, dropout=0.2, recurrent_dropout=0.2, implementation=1),
     'a recurrent mask per gate'),
    (LSTM(5, activation=sigmoid_copy), 'an activation the kernels do not know'),
    (GRU(5, unroll=True), 'unroll'),
])
def test_generic_loop_is_kept(layer, reason):
    model = Sequential([keras.layers.InputLayer(input_shape=(7, 3)), layer])
    assert model.layers[0].output.node.fn.__name__ not in (
        '_cell_recurrence', '_fused_lstm'), reason


class LSTMCellWithInitializers(keras.layers.LSTMCell):
    """A subclass keeping Keras' `call`: it computes what LSTMCell computes."""

    def __init__(self, units):
        super(LSTMCellWithInitializers, self).__init__(units, kernel_initializer='ones')


class LSTMCellWithOwnCall(keras.layers.LSTMCell):
    """A subclass with its own `call`: only the loop computes it."""

    def call(self, inputs, states, training=None):
        output, new_states = super(LSTMCellWithOwnCall, self).call(inputs, states, training)
        return output * 2., new_states


@pytest.mark.parametrize('cell_class, fused', [(LSTMCellWithInitializers, True),
                                               (LSTMCellWithOwnCall, False)])
def test_subclassed_cells_are_fused_only_with_keras_call(cell_class, fused):
    model = Sequential([keras.layers.InputLayer(input_shape=(7, 3)),
                        keras.layers.RNN(cell_class(5))])
    name = model.layers[0].output.node.fn.__name__
    assert (name in ('_cell_recurrence', '_fused_lstm')) == fused


BATCH_2_STATES_ON_UNKNOWN_BATCH = '''
import numpy as np
from keras import backend as K
from keras.layers import GRU, LSTM, SimpleRNN, Input
for layer in [LSTM(4), GRU(4), GRU(4, reset_after=True), SimpleRNN(4)]:
    states = [K.variable(np.zeros((2, 4))) for _ in range(len(layer.states))]
    try:
        output = layer(Input(shape=(5, 3)), initial_state=states)
        print('built', K.int_shape(output))
    except ValueError as error:
        print('ValueError', error)
'''


def test_states_of_another_batch_size_raise_instead_of_crashing():
    """torch.lstm read out of bounds (and killed the process) on an initial state of batch 2
    while shape inference ran the inputs with batch 83; now the shapes are checked first."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ, PYTHONPATH=root, KERAS_BACKEND='torchk.core')
    done = subprocess.run([sys.executable, '-c', BATCH_2_STATES_ON_UNKNOWN_BATCH],
                          env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 4, done.stdout
    for line in lines:
        assert line.startswith('built') or ('must have shape' in line and '(2, 4)' in line), line
