"""Keras 2.3.1 recurrent layers on torchk: SimpleRNN, GRU, LSTM, Bidirectional, stateful RNNs,
masking, TimeDistributed, ConvLSTM2D, saving.

Every training test learns a small seeded synthetic sequence task and asserts a stated accuracy
on a held-out set drawn from the same distribution (different seed). The numerical tests compare
`model.predict` with numpy re-implementations of Keras' cell equations, computed from
`layer.get_weights()`.

Keras 2.3.1 facts these tests rely on (keras/layers/recurrent.py):
- gate order in the fused kernels: LSTM i, f, c, o; GRU z, r, h;
- defaults: `recurrent_activation='sigmoid'` (2.3.0 changed it from 'hard_sigmoid'),
  `implementation=2`, GRU `reset_after=False`; `hard_sigmoid(x) = clip(0.2 x + 0.5, 0, 1)`;
- GRU: `h = z * h_prev + (1 - z) * hh`; with `reset_after` the bias has shape (2, 3 units):
  row 0 is the input bias, row 1 the recurrent bias, and the reset gate multiplies
  `h_prev U_h + b_rec_h` (after the matmul) instead of `h_prev`;
- on masked steps the output repeats the previous output (zeros before the first unmasked one)
  and the states keep their values;
- dropout masks are drawn on the first step call and shared by all time steps.
"""
import numpy as np
import pytest

import keras
from keras import backend as K
from keras.layers import (GRU, LSTM, Bidirectional, ConvLSTM2D, Dense, Embedding, Flatten,
                          Input, Masking, SimpleRNN, TimeDistributed)
from keras.models import Model, Sequential, load_model

from devices import tolerance

from .conftest import RECURRENT_ACTIVATION


# ------------------------------------------------------------------------------------------
# Synthetic sequence tasks.

def sum_sign_data(samples=512, timesteps=8, features=1, seed=0):
    """Gaussian sequences; label 1 when the sum over time and features is positive."""
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(samples, timesteps, features)).astype('float32')
    y = (x.sum(axis=(1, 2)) > 0).astype('float32')
    return x, y


def first_sign_data(samples=512, timesteps=8, features=1, seed=0):
    """Gaussian sequences; label 1 when the first element is positive (the rest is noise).
    Read forward, the answer must survive the whole sequence; read backwards it is the last
    step seen."""
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(samples, timesteps, features)).astype('float32')
    y = (x[:, 0, 0] > 0).astype('float32')
    return x, y


def token_order_data(samples=512, min_len=4, max_len=8, vocab=12, seed=0, padding='pre'):
    """Token sequences of random length in [min_len, max_len] made of filler tokens
    3..vocab-1 plus exactly one token 1 and one token 2 at random positions; the label is 1
    when token 1 comes first. Sequences are zero-padded to max_len ('pre' or 'post').

    Returns (x int32 (samples, max_len), y float32 (samples,), lengths)."""
    rng = np.random.RandomState(seed)
    x = np.zeros((samples, max_len), 'int32')
    y = np.zeros(samples, 'float32')
    lengths = rng.randint(min_len, max_len + 1, size=samples)
    for i, n in enumerate(lengths):
        seq = rng.randint(3, vocab, size=n)
        a, b = rng.choice(n, size=2, replace=False)
        seq[a], seq[b] = 1, 2
        y[i] = float(a < b)
        if padding == 'pre':
            x[i, max_len - n:] = seq
        else:
            x[i, :n] = seq
    return x, y, lengths


def moving_dot_data(samples=256, timesteps=4, size=8, seed=0):
    """Videos (samples, timesteps, size, size, 1) of a bright dot on a noisy background
    moving one pixel per frame, left or right; label 1 when it moves right."""
    rng = np.random.RandomState(seed)
    x = 0.1 * rng.normal(size=(samples, timesteps, size, size, 1)).astype('float32')
    y = rng.randint(0, 2, size=samples).astype('float32')
    for i in range(samples):
        row = rng.randint(size)
        step = 1 if y[i] else -1
        col = rng.randint(0, size - timesteps + 1)
        if step < 0:
            col += timesteps - 1
        for t in range(timesteps):
            x[i, t, row, col + step * t, 0] += 1.
    return x, y


def binary_accuracy(model, x, y):
    pred = model.predict(x)
    return float(np.mean((pred.reshape(-1) > 0.5) == (y > 0.5)))


def compile_binary(model, lr=0.01):
    model.compile(keras.optimizers.Adam(lr), 'binary_crossentropy', metrics=['acc'])


def sequence_classifier(rnn_layer, timesteps, features, batch_size=None):
    """Input -> rnn_layer -> Dense(1, sigmoid)."""
    if batch_size is None:
        inp = Input(shape=(timesteps, features))
    else:
        inp = Input(batch_shape=(batch_size, timesteps, features))
    out = Dense(1, activation='sigmoid')(rnn_layer(inp))
    return Model(inp, out)


# ------------------------------------------------------------------------------------------
# numpy references of the Keras 2.3.1 cells.

def np_sigmoid(z):
    return 1. / (1. + np.exp(-z))


def np_hard_sigmoid(z):
    return np.clip(0.2 * z + 0.5, 0., 1.)


NP_ACTIVATIONS = {'sigmoid': np_sigmoid, 'hard_sigmoid': np_hard_sigmoid, 'tanh': np.tanh,
                  'linear': lambda z: z}


def np_run(step, x, states, mask=None, go_backwards=False):
    """Runs `step(x_t, states) -> (output, states)` over axis 1 with Keras' mask semantics.
    Returns outputs (samples, time, units) in the order the loop ran."""
    x = x.astype('float64')
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outputs, previous = [], np.zeros_like(states[0])
    for t in steps:
        out, new = step(x[:, t], states)
        if mask is not None:
            keep = mask[:, t][:, None]
            out = np.where(keep, out, previous)
            new = [np.where(keep, n, s) for n, s in zip(new, states)]
        previous, states = out, new
        outputs.append(out)
    return np.stack(outputs, axis=1)


def np_simple_rnn(x, weights, activation='tanh', **kwargs):
    kernel, recurrent, bias = weights
    act = NP_ACTIVATIONS[activation]

    def step(x_t, states):
        h = act(x_t.dot(kernel) + bias + states[0].dot(recurrent))
        return h, [h]
    return np_run(step, x, [np.zeros((len(x), kernel.shape[1]))], **kwargs)


def np_gru(x, weights, reset_after, activation='tanh', recurrent_activation=RECURRENT_ACTIVATION,
           **kwargs):
    kernel, recurrent, bias = weights
    u = kernel.shape[1] // 3
    act, rec = NP_ACTIVATIONS[activation], NP_ACTIVATIONS[recurrent_activation]
    in_bias, rec_bias = (bias[0], bias[1]) if reset_after else (bias, np.zeros_like(bias))

    def step(x_t, states):
        h_prev = states[0]
        xw = x_t.dot(kernel) + in_bias
        z = rec(xw[:, :u] + h_prev.dot(recurrent[:, :u]) + rec_bias[:u])
        r = rec(xw[:, u:2 * u] + h_prev.dot(recurrent[:, u:2 * u]) + rec_bias[u:2 * u])
        if reset_after:
            hh = act(xw[:, 2 * u:] + r * (h_prev.dot(recurrent[:, 2 * u:]) + rec_bias[2 * u:]))
        else:
            hh = act(xw[:, 2 * u:] + (r * h_prev).dot(recurrent[:, 2 * u:]))
        h = z * h_prev + (1. - z) * hh
        return h, [h]
    return np_run(step, x, [np.zeros((len(x), u))], **kwargs)


def np_lstm(x, weights, activation='tanh', recurrent_activation=RECURRENT_ACTIVATION,
            **kwargs):
    kernel, recurrent, bias = weights
    u = kernel.shape[1] // 4
    act, rec = NP_ACTIVATIONS[activation], NP_ACTIVATIONS[recurrent_activation]

    def step(x_t, states):
        h_prev, c_prev = states
        z = x_t.dot(kernel) + h_prev.dot(recurrent) + bias
        i, f = rec(z[:, :u]), rec(z[:, u:2 * u])
        c = f * c_prev + i * act(z[:, 2 * u:3 * u])
        o = rec(z[:, 3 * u:])
        h = o * act(c)
        return h, [h, c]
    zeros = np.zeros((len(x), u))
    return np_run(step, x, [zeros, zeros], **kwargs)


def randomize_weights(layer, seed, scale=0.5):
    """Sets every weight of `layer` to N(0, scale) values; returns them (float64 copies)."""
    rng = np.random.RandomState(seed)
    weights = [scale * rng.normal(size=w.shape) for w in layer.get_weights()]
    layer.set_weights([w.astype('float32') for w in weights])
    return [w.astype('float32').astype('float64') for w in layer.get_weights()]


# ------------------------------------------------------------------------------------------
# Training: every layer kind learns a synthetic task.

TRAINING_CASES = [
    # id, layer factory, data maker, epochs, held-out accuracy threshold (Adam, lr 0.02;
    # SimpleRNN ids: lr 0.005)
    ('simple_rnn', lambda: SimpleRNN(16), sum_sign_data, 16, 0.9),
    ('gru_reset_before', lambda: GRU(8, reset_after=False), sum_sign_data, 10, 0.9),
    ('gru_reset_after', lambda: GRU(8, reset_after=True), sum_sign_data, 10, 0.9),
    ('lstm_impl1', lambda: LSTM(8, implementation=1), sum_sign_data, 10, 0.9),
    ('lstm_impl2', lambda: LSTM(8, implementation=2), sum_sign_data, 10, 0.9),
    ('lstm_hard_sigmoid', lambda: LSTM(8, recurrent_activation='hard_sigmoid'),
     sum_sign_data, 10, 0.9),
    # Backwards, the first element is the last one read: easy. Forwards it is not (below).
    ('lstm_go_backwards', lambda: LSTM(8, go_backwards=True), first_sign_data, 8, 0.95),
    ('gru_go_backwards', lambda: GRU(8, go_backwards=True, reset_after=True),
     first_sign_data, 8, 0.95),
    ('simple_rnn_unroll', lambda: SimpleRNN(16, unroll=True), sum_sign_data, 16, 0.9),
    ('lstm_unroll', lambda: LSTM(8, unroll=True), sum_sign_data, 10, 0.9),
    ('gru_unroll_backwards', lambda: GRU(8, unroll=True, go_backwards=True),
     first_sign_data, 8, 0.95),
]


@pytest.mark.parametrize('make_layer, make_data, epochs, threshold',
                         [c[1:] for c in TRAINING_CASES], ids=[c[0] for c in TRAINING_CASES])
def test_recurrent_layer_learns_a_sequence_task(make_layer, make_data, epochs, threshold):
    x, y = make_data(samples=512, seed=0)
    x_test, y_test = make_data(samples=256, seed=1)
    layer = make_layer()
    model = sequence_classifier(layer, x.shape[1], x.shape[2])
    compile_binary(model, lr=0.005 if isinstance(layer, SimpleRNN) else 0.02)
    before = binary_accuracy(model, x_test, y_test)
    history = model.fit(x, y, batch_size=32, epochs=epochs, verbose=0)
    assert history.history['loss'][-1] < history.history['loss'][0]
    accuracy = binary_accuracy(model, x_test, y_test)
    assert accuracy >= threshold, (before, accuracy, history.history['loss'])


def test_go_backwards_reads_the_sequence_in_reverse():
    """A backwards LSTM on a sequence equals a forward LSTM (same weights) on the reversed
    sequence, outputs in loop order; and both match numpy."""
    x, _ = first_sign_data(samples=16, timesteps=6, features=3, seed=4)
    forward = Sequential([LSTM(5, return_sequences=True, input_shape=(6, 3))])
    backward = Sequential([LSTM(5, return_sequences=True, go_backwards=True,
                                input_shape=(6, 3))])
    weights = randomize_weights(forward.layers[0], seed=5)
    backward.set_weights(forward.get_weights())
    back = backward.predict(x)
    np.testing.assert_allclose(back, forward.predict(x[:, ::-1]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(back, np_lstm(x, weights, go_backwards=True),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Numerics: predict == numpy re-implementation of the cell equations.

NUMERIC_CASES = [
    ('simple_rnn', lambda **kw: SimpleRNN(4, **kw), np_simple_rnn),
    ('simple_rnn_linear_backwards', lambda **kw: SimpleRNN(4, activation='linear',
                                                         go_backwards=True, **kw),
     lambda x, w: np_simple_rnn(x, w, activation='linear', go_backwards=True)),
    ('gru_reset_after', lambda **kw: GRU(4, reset_after=True, **kw),
     lambda x, w: np_gru(x, w, reset_after=True)),
    ('gru_reset_before', lambda **kw: GRU(4, reset_after=False, **kw),
     lambda x, w: np_gru(x, w, reset_after=False)),
    ('gru_reset_after_hard_sigmoid_impl1',
     lambda **kw: GRU(4, reset_after=True, recurrent_activation='hard_sigmoid',
                      implementation=1, **kw),
     lambda x, w: np_gru(x, w, reset_after=True, recurrent_activation='hard_sigmoid')),
    ('gru_reset_before_impl1', lambda **kw: GRU(4, reset_after=False, implementation=1, **kw),
     lambda x, w: np_gru(x, w, reset_after=False)),
    ('lstm_impl1', lambda **kw: LSTM(4, implementation=1, **kw), np_lstm),
    ('lstm_impl2', lambda **kw: LSTM(4, implementation=2, **kw), np_lstm),
    ('lstm_hard_sigmoid', lambda **kw: LSTM(4, recurrent_activation='hard_sigmoid', **kw),
     lambda x, w: np_lstm(x, w, recurrent_activation='hard_sigmoid')),
    ('lstm_unroll', lambda **kw: LSTM(4, unroll=True, **kw), np_lstm),
]


@pytest.mark.parametrize('make_layer, reference',
                         [c[1:] for c in NUMERIC_CASES], ids=[c[0] for c in NUMERIC_CASES])
def test_predict_matches_numpy_cell_equations(make_layer, reference):
    rng = np.random.RandomState(7)
    x = rng.normal(size=(6, 5, 3)).astype('float32')
    layer = make_layer(return_sequences=True)
    model = Sequential([keras.layers.InputLayer(input_shape=(5, 3)), layer])
    weights = randomize_weights(layer, seed=8)
    expected = reference(x, weights)
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-5, atol=1e-5)
    # return_sequences=False gives the last step of the same computation.
    last = Sequential([keras.layers.InputLayer(input_shape=(5, 3)),
                       layer.__class__.from_config(dict(layer.get_config(),
                                                        return_sequences=False))])
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(last.predict(x), expected[:, -1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('kind', ['simple_rnn', 'gru', 'lstm'])
def test_masked_predict_matches_numpy(kind):
    """Masking(0) in front of the RNN: masked steps (anywhere, not only padding) repeat the
    previous output and hold the states, as in numpy_backend.rnn."""
    rng = np.random.RandomState(9)
    x = rng.normal(size=(6, 7, 3)).astype('float32')
    mask = rng.uniform(size=(6, 7)) > 0.35
    mask[0, :2] = False  # leading masked steps output zeros
    mask[1, -2:] = False  # trailing masked steps repeat the last output
    x[~mask] = 0.
    layer = {'simple_rnn': lambda: SimpleRNN(4, return_sequences=True),
             'gru': lambda: GRU(4, reset_after=True, return_sequences=True),
             'lstm': lambda: LSTM(4, return_sequences=True)}[kind]()
    model = Sequential([Masking(0., input_shape=(7, 3)), layer])
    weights = randomize_weights(layer, seed=10)
    reference = {'simple_rnn': np_simple_rnn,
                 'gru': lambda a, w, **kw: np_gru(a, w, reset_after=True, **kw),
                 'lstm': np_lstm}[kind]
    expected = reference(x, weights, mask=mask)
    got = model.predict(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[0, :2], 0.)


def test_sliced_kernels_follow_training_updates():
    """GRU/LSTM slice their kernels at build (`kernel[:, :units]`); with implementation=1 the
    cell uses the slices, so they must be views that follow the variable: after `fit` the
    predictions equal numpy on the *trained* weights."""
    x, y = sum_sign_data(samples=64, timesteps=5, features=3, seed=3)
    for layer, reference in [(LSTM(4, implementation=1), np_lstm),
                             (GRU(4, implementation=1, reset_after=True),
                              lambda a, w: np_gru(a, w, reset_after=True)),
                             (GRU(4, implementation=1, reset_after=False),
                              lambda a, w: np_gru(a, w, reset_after=False))]:
        model = Sequential([keras.layers.InputLayer(input_shape=(5, 3)), layer])
        model.compile(keras.optimizers.Adam(0.05), 'mse')
        before = [w.copy() for w in layer.get_weights()]
        model.fit(x, np.tile(y[:, None], (1, 4)), batch_size=16, epochs=2, verbose=0)
        after = [w.astype('float64') for w in layer.get_weights()]
        assert not np.allclose(before[0], after[0])
        np.testing.assert_allclose(model.predict(x), reference(x, after)[:, -1],
                                   rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Dropout and recurrent dropout.

@pytest.mark.parametrize('layer_cls', [LSTM, GRU, SimpleRNN])
def test_dropout_and_recurrent_dropout(layer_cls):
    x, y = sum_sign_data(samples=512, timesteps=8, features=2, seed=0)
    x_test, y_test = sum_sign_data(samples=256, timesteps=8, features=2, seed=1)
    layer = layer_cls(16, dropout=0.2, recurrent_dropout=0.2)
    model = sequence_classifier(layer, 8, 2)
    assert model.uses_learning_phase
    compile_binary(model, lr=0.02)
    model.fit(x, y, batch_size=32, epochs=16, verbose=0)
    accuracy = binary_accuracy(model, x_test, y_test)
    assert accuracy >= 0.85, accuracy

    f = K.function([model.input, K.learning_phase()], [model.output])
    train_a, = f([x_test, 1])
    train_b, = f([x_test, 1])
    assert not np.allclose(train_a, train_b)  # fresh dropout masks per call
    test_a, = f([x_test, 0])
    test_b, = f([x_test, 0])
    np.testing.assert_array_equal(test_a, test_b)
    predicted = model.predict(x_test)
    np.testing.assert_array_equal(predicted, model.predict(x_test))
    np.testing.assert_allclose(predicted, test_a, rtol=1e-6, atol=1e-7)
    assert not np.allclose(train_a, test_a)


def test_recurrent_dropout_alone_reaches_the_step():
    """recurrent_dropout without dropout: only the step (inside the loop) uses the learning
    phase, and it must still switch it."""
    x, _ = sum_sign_data(samples=32, timesteps=6, features=2, seed=2)
    model = sequence_classifier(LSTM(8, recurrent_dropout=0.5), 6, 2)
    assert model.uses_learning_phase
    f = K.function([model.input, K.learning_phase()], [model.output])
    assert not np.allclose(f([x, 1])[0], f([x, 1])[0])
    np.testing.assert_array_equal(f([x, 0])[0], f([x, 0])[0])


def test_dropout_masks_are_shared_across_time_steps():
    """TF semantics (docs/KERAS_BACKEND.md §6): one input mask and one recurrent mask per call,
    used at every step. Linear SimpleRNNs with identity kernels make the masks visible."""
    units, steps, rate = 6, 4, 0.5
    x = np.ones((32, steps, units), 'float32')
    eye, zero = np.eye(units, dtype='float32'), np.zeros((units, units), 'float32')
    bias = np.zeros(units, 'float32')

    # Input dropout: h_t = (x_t * m) I; x constant in time -> h constant in time.
    inp = Input(shape=(steps, units))
    out = SimpleRNN(units, activation='linear', dropout=rate, return_sequences=True)(inp)
    model = Model(inp, out)
    model.set_weights([eye, zero, bias])
    f = K.function([inp, K.learning_phase()], [out])
    h, = f([x, 1])
    np.testing.assert_allclose(h, np.repeat(h[:, :1], steps, axis=1), rtol=1e-6)
    assert set(np.unique(np.round(h, 5))) == {0., 1. / (1. - rate)}
    np.testing.assert_array_equal(f([x, 0])[0], x)

    # Recurrent dropout: h_t = x_t + (h_{t-1} * m) I, so with m in {0, 2} every unit follows
    # 1, 1, 1, 1 or 1, 3, 7, 15 -- never a mix.
    inp = Input(shape=(steps, units))
    out = SimpleRNN(units, activation='linear', recurrent_dropout=rate,
                    return_sequences=True)(inp)
    model = Model(inp, out)
    model.set_weights([eye, eye, bias])
    f = K.function([inp, K.learning_phase()], [out])
    h, = f([x, 1])
    kept = np.array([1., 3., 7., 15.], 'float32')
    dropped = np.ones(steps, 'float32')
    per_unit = h.transpose(0, 2, 1).reshape(-1, steps)
    is_kept = np.all(np.isclose(per_unit, kept), axis=1)
    is_dropped = np.all(np.isclose(per_unit, dropped), axis=1)
    assert np.all(is_kept | is_dropped), per_unit[~(is_kept | is_dropped)][:3]
    assert is_kept.any() and is_dropped.any()


# ------------------------------------------------------------------------------------------
# Bidirectional.

def _check_bidirectional_shapes(merge_mode, return_sequences, x):
    """Builds Bidirectional(LSTM(8)) on Input((8, 1)); checks the symbolic and the predicted
    shapes against compute_output_shape. Returns (input, merged output(s))."""
    bidi = Bidirectional(LSTM(8, return_sequences=return_sequences), merge_mode=merge_mode)
    inp = Input(shape=(8, 1))
    merged = bidi(inp)
    expected = bidi.compute_output_shape((None, 8, 1))
    units = 16 if merge_mode == 'concat' else 8
    single = (None, 8, units) if return_sequences else (None, units)
    if merge_mode is None:
        assert isinstance(merged, list) and len(merged) == 2
        assert [tuple(s) for s in expected] == [single, single]
        assert [K.int_shape(m) for m in merged] == [single, single]
        predicted = Model(inp, merged).predict(x)
        assert [p.shape for p in predicted] == [(len(x),) + single[1:]] * 2
    else:
        assert tuple(expected) == single and K.int_shape(merged) == single
        assert Model(inp, merged).predict(x).shape == (len(x),) + single[1:]
    return inp, merged


@pytest.mark.parametrize('merge_mode', ['sum', 'mul', 'concat', 'ave', None])
def test_bidirectional_merge_modes(merge_mode):
    x, y = sum_sign_data(samples=512, timesteps=8, features=1, seed=0)
    x_test, y_test = sum_sign_data(samples=256, timesteps=8, features=1, seed=1)
    _check_bidirectional_shapes(merge_mode, True, x_test[:5])
    inp, merged = _check_bidirectional_shapes(merge_mode, False, x_test[:5])
    if merge_mode is None:  # one classifier head per direction
        model = Model(inp, [Dense(1, activation='sigmoid')(m) for m in merged])
    else:
        model = Model(inp, Dense(1, activation='sigmoid')(merged))
    compile_binary(model, lr=0.02)
    targets = [y, y] if merge_mode is None else y
    model.fit(x, targets, batch_size=32, epochs=10, verbose=0)
    preds = model.predict(x_test)
    for pred in (preds if merge_mode is None else [preds]):
        accuracy = float(np.mean((pred.reshape(-1) > 0.5) == (y_test > 0.5)))
        assert accuracy >= 0.88, (merge_mode, accuracy)


def test_bidirectional_concat_is_forward_then_reversed_backward():
    """Bidirectional(return_sequences=True) aligns the backward outputs with the input time
    steps (wrappers.py reverses them): numpy forward LSTM ++ reversed numpy backward LSTM."""
    rng = np.random.RandomState(11)
    x = rng.normal(size=(5, 6, 3)).astype('float32')
    bidi = Bidirectional(GRU(4, return_sequences=True, reset_after=True),
                         merge_mode='concat', input_shape=(6, 3))
    model = Sequential([bidi])
    randomize_weights(bidi, seed=12)
    w = [v.astype('float64') for v in bidi.get_weights()]
    fwd = np_gru(x, w[:3], reset_after=True)
    bwd = np_gru(x, w[3:], reset_after=True, go_backwards=True)[:, ::-1]
    np.testing.assert_allclose(model.predict(x), np.concatenate([fwd, bwd], axis=-1),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Stateful RNNs.

def test_stateful_lstm_carries_states_and_reset_restores_them():
    batch, steps, features = 4, 5, 3
    rng = np.random.RandomState(13)
    x = rng.normal(size=(batch, steps, features)).astype('float32')

    def make():
        return Sequential([LSTM(6, stateful=True, batch_input_shape=(batch, steps, features)),
                           Dense(2)])
    model = make()
    first = model.predict_on_batch(x)
    second = model.predict_on_batch(x)
    assert not np.allclose(first, second)  # the states carried over
    fresh = make()
    fresh.set_weights(model.get_weights())
    np.testing.assert_array_equal(fresh.predict_on_batch(x), first)
    # The carried-over states are exactly the final states of the first call: feeding the
    # sequence twice in one call gives the second call's output.
    twice = Sequential([LSTM(6, batch_input_shape=(batch, 2 * steps, features)), Dense(2)])
    twice.set_weights(model.get_weights())
    np.testing.assert_allclose(twice.predict_on_batch(np.concatenate([x, x], axis=1)), second,
                               rtol=1e-5, atol=1e-6)
    model.reset_states()
    np.testing.assert_array_equal(model.predict_on_batch(x), first)
    for state in model.layers[0].states:
        assert np.any(K.get_value(state) != 0.)
    model.reset_states()
    for state in model.layers[0].states:
        np.testing.assert_array_equal(K.get_value(state), 0.)


def test_stateful_lstm_learns_across_batches():
    """The sum-sign task split into two chunks fed as consecutive batches: the label of the
    second chunk (sign of the sum over both chunks) needs the state left by the first.
    Reading the second chunk alone gets ~75%; the stateful LSTM must do much better."""
    batch, chunk = 32, 5
    model = Sequential([LSTM(16, stateful=True, batch_input_shape=(batch, chunk, 1)),
                        Dense(1, activation='sigmoid')])
    compile_binary(model, lr=0.01)

    def episodes(seed, count):
        rng = np.random.RandomState(seed)
        for _ in range(count):
            x = rng.normal(size=(batch, 2 * chunk, 1)).astype('float32')
            first, second = x[:, :chunk], x[:, chunk:]
            y1 = (first.sum(axis=(1, 2)) > 0).astype('float32')
            y2 = (x.sum(axis=(1, 2)) > 0).astype('float32')
            yield first, y1, second, y2

    for _ in range(4):
        for first, y1, second, y2 in episodes(0, 50):
            model.train_on_batch(first, y1)
            model.train_on_batch(second, y2)
            model.reset_states()
    hits, hits_alone = [], []
    for first, y1, second, y2 in episodes(1, 8):
        model.predict_on_batch(first)
        hits.append((model.predict_on_batch(second).reshape(-1) > 0.5) == (y2 > 0.5))
        model.reset_states()
        hits_alone.append((model.predict_on_batch(second).reshape(-1) > 0.5) == (y2 > 0.5))
        model.reset_states()
    accuracy, alone = float(np.mean(hits)), float(np.mean(hits_alone))
    assert accuracy >= 0.9 and accuracy > alone + 0.08, (accuracy, alone)


# ------------------------------------------------------------------------------------------
# Masking through Embedding -> LSTM -> TimeDistributed -> GRU.

def masked_token_model(vocab=12):
    return Sequential([
        Embedding(vocab, 8, mask_zero=True, input_shape=(None,)),
        LSTM(16, return_sequences=True),
        TimeDistributed(Dense(8, activation='tanh')),
        GRU(16, reset_after=True),
        Dense(1, activation='sigmoid'),
    ])


def test_masked_embedding_lstm_timedistributed_gru_learns_and_ignores_padding():
    x, y, _ = token_order_data(samples=1024, seed=0)
    x_test, y_test, lengths = token_order_data(samples=256, seed=1)
    model = masked_token_model()
    compile_binary(model, lr=0.01)
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    accuracy = binary_accuracy(model, x_test, y_test)
    assert accuracy >= 0.9, accuracy

    # Each length group unpadded vs. the same rows inside the pre-padded batch.
    padded = model.predict(x_test)
    for n in np.unique(lengths):
        rows = lengths == n
        unpadded = model.predict(x_test[rows][:, -n:])
        np.testing.assert_allclose(padded[rows], unpadded, rtol=1e-6, atol=1e-6)
    # More pre-padding changes nothing.
    more = np.concatenate([np.zeros((len(x_test), 5), 'int32'), x_test], axis=1)
    np.testing.assert_allclose(model.predict(more), padded, rtol=1e-6, atol=1e-6)
    # Post-padding too: masked steps hold the last output and states to the end.
    post = np.zeros_like(x_test)
    for i, n in enumerate(lengths):
        post[i, :n] = x_test[i, -n:]
    np.testing.assert_allclose(model.predict(post), padded, rtol=1e-6, atol=1e-6)
    # Sanity: the padding is masked, not just harmless -- unmasked zeros would change things.
    # (shares every layer but the Embedding, which gets the same weights without the mask).
    unmasked = Sequential([Embedding(12, 8, input_shape=(None,))] + model.layers[1:])
    unmasked.layers[0].set_weights(model.layers[0].get_weights())
    unpadded = x_test[:, -4:]  # every sequence has >= 4 tokens: no zeros here
    # (on CUDA the unmasked model runs cuDNN's fused LSTM, the masked one the loop)
    np.testing.assert_allclose(unmasked.predict(unpadded), model.predict(unpadded),
                               rtol=tolerance(1e-6, 1e-4), atol=tolerance(1e-6, 1e-5))
    assert not np.allclose(unmasked.predict(more), padded, atol=1e-4)


# ------------------------------------------------------------------------------------------
# ConvLSTM2D.

def test_conv_lstm_2d_learns_direction_of_motion():
    x, y = moving_dot_data(samples=512, seed=0)
    x_test, y_test = moving_dot_data(samples=128, seed=1)
    conv = ConvLSTM2D(4, (3, 3), padding='same', input_shape=(4, 8, 8, 1))
    model = Sequential([conv, Flatten(), Dense(1, activation='sigmoid')])
    expected = conv.compute_output_shape((None, 4, 8, 8, 1))
    assert expected == (None, 8, 8, 4)
    assert K.int_shape(conv.output) == expected
    assert Model(model.input, conv.output).predict(x_test[:3]).shape == (3,) + expected[1:]
    compile_binary(model, lr=0.01)
    loss_before = model.evaluate(x, y, verbose=0)[0]
    model.train_on_batch(x[:32], y[:32])
    model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    assert model.evaluate(x, y, verbose=0)[0] < loss_before
    assert model.compute_output_shape((None, 4, 8, 8, 1)) == (None, 1)
    assert model.predict(x_test).shape == (len(x_test), 1)
    accuracy = binary_accuracy(model, x_test, y_test)
    assert accuracy >= 0.9, accuracy


def np_conv2d(x, w, padding):
    """channels_last cross-correlation, stride 1: x (n, H, W, c), w (kh, kw, c, o)."""
    kh, kw = w.shape[:2]
    if padding == 'same':
        x = np.pad(x, [(0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2), (0, 0)])
    rows, cols = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    return sum(np.einsum('nhwc,co->nhwo', x[:, dy:dy + rows, dx:dx + cols], w[dy, dx])
               for dy in range(kh) for dx in range(kw))


def test_conv_lstm_2d_matches_numpy():
    """ConvLSTM2D (default hard_sigmoid, kernels sliced at build on the last axis as
    `kernel[:, :, :, a:b]`, 'valid' input convolution, 'same' recurrent convolution)."""
    rng = np.random.RandomState(15)
    x = rng.normal(size=(3, 4, 6, 6, 2)).astype('float32')
    conv = ConvLSTM2D(3, (3, 3), padding='valid', return_sequences=True,
                      input_shape=(4, 6, 6, 2))
    model = Sequential([conv])
    kernel, recurrent, bias = randomize_weights(conv, seed=16)
    assert conv.compute_output_shape((None, 4, 6, 6, 2)) == (None, 4, 4, 4, 3)
    u = 3
    h = c = np.zeros((3, 4, 4, u))
    act, rec = np.tanh, np_hard_sigmoid
    expected = []
    for t in range(4):
        z = np_conv2d(x[:, t].astype('float64'), kernel, 'valid') + bias \
            + np_conv2d(h, recurrent, 'same')
        i, f, o = rec(z[..., :u]), rec(z[..., u:2 * u]), rec(z[..., 3 * u:])
        c = f * c + i * act(z[..., 2 * u:3 * u])
        h = o * act(c)
        expected.append(h)
    np.testing.assert_allclose(model.predict(x), np.stack(expected, axis=1),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# TimeDistributed: K.rnn path (static batch size) vs reshape path.

def test_time_distributed_rnn_path_matches_reshape_path(monkeypatch):
    rng = np.random.RandomState(14)
    x = rng.normal(size=(4, 5, 3)).astype('float32')
    calls = []
    real_rnn = K.rnn

    def spy(*args, **kwargs):
        calls.append(kwargs.get('initial_states', args[2] if len(args) > 2 else None))
        return real_rnn(*args, **kwargs)
    monkeypatch.setattr(K, 'rnn', spy)

    fixed = Sequential([TimeDistributed(Dense(2, activation='tanh'),
                                        batch_input_shape=(4, 5, 3))])
    assert calls == [[]]  # the fixed batch size went through K.rnn with no states
    free = Sequential([TimeDistributed(Dense(2, activation='tanh'), input_shape=(5, 3))])
    assert len(calls) == 1  # the reshape path does not
    assert K.int_shape(fixed.output) == (4, 5, 2) and K.int_shape(free.output) == (None, 5, 2)
    free.set_weights(fixed.get_weights())
    kernel, bias = fixed.get_weights()
    expected = np.tanh(x.dot(kernel) + bias)
    np.testing.assert_allclose(fixed.predict(x, batch_size=4), expected, rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(free.predict(x), expected, rtol=1e-6, atol=1e-6)
    # Both train.
    for model in (fixed, free):
        model.compile('sgd', 'mse')
        model.fit(x, np.zeros((4, 5, 2), 'float32'), batch_size=4, epochs=2, verbose=0)
        assert not np.allclose(model.get_weights()[0], kernel)


# ------------------------------------------------------------------------------------------
# Saving.

@pytest.mark.parametrize('make_layer', [
    lambda: LSTM(8, implementation=1),
    lambda: LSTM(8, implementation=2),
    lambda: GRU(8, reset_after=True, implementation=1),
    lambda: GRU(8, reset_after=False),
], ids=['lstm_impl1', 'lstm_impl2', 'gru_reset_after_impl1', 'gru_reset_before'])
def test_save_and_load_round_trip(tmp_path, make_layer):
    x, y = sum_sign_data(samples=128, timesteps=6, features=2, seed=0)
    model = sequence_classifier(make_layer(), 6, 2)
    compile_binary(model)
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    expected = model.predict(x)

    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(x), expected)
    # The optimizer state came along: one more identical step on both stays identical.
    model.train_on_batch(x[:32], y[:32])
    loaded.train_on_batch(x[:32], y[:32])
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-5, atol=1e-6)

    # load_weights into a fresh (differently initialized, already used) model: the kernel
    # slices taken at build must follow the loaded values.
    weights_path = str(tmp_path / 'weights.h5')
    model.save_weights(weights_path)
    fresh = sequence_classifier(make_layer(), 6, 2)
    assert not np.allclose(fresh.predict(x), model.predict(x))
    fresh.load_weights(weights_path)
    np.testing.assert_array_equal(fresh.predict(x), model.predict(x))
