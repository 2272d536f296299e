"""CuDNNLSTM and CuDNNGRU against cuDNN's equations in numpy, Keras' own LSTM/GRU through
Keras' weight conversion, and the traced loop (gradients included)."""
import numpy as np
import pytest
import torch

import keras
from keras import backend as K

from devices import tolerance
from torchk import rnn
from torchk.layers import CuDNNGRU, CuDNNLSTM

UNITS, FEATURES, STEPS, BATCH = 5, 4, 6, 3


def _sigmoid(x):
    return 1. / (1. + np.exp(-x))


def _cudnn_matrices(kernel, recurrent_kernel, gates):
    """cuDNN's (units, inputs) matrix of each gate, read row-major from the stored blocks."""
    units = recurrent_kernel.shape[0]
    inputs = [kernel[:, g * units:(g + 1) * units].reshape(units, -1) for g in range(gates)]
    recurrent = [recurrent_kernel[:, g * units:(g + 1) * units] for g in range(gates)]
    return inputs, recurrent


def numpy_cudnn_lstm(x, weights, h, c):
    """cuDNN's LSTM: gates i, f, g, o, each `W x + b_W + R h + b_R`."""
    kernel, recurrent_kernel, bias = weights
    W, R = _cudnn_matrices(kernel, recurrent_kernel, 4)
    b_w, b_r = np.split(bias.reshape(2, 4, UNITS), 2)
    outputs = []
    for t in range(x.shape[1]):
        z = [x[:, t] @ W[g].T + b_w[0, g] + h @ R[g].T + b_r[0, g] for g in range(4)]
        c = _sigmoid(z[1]) * c + _sigmoid(z[0]) * np.tanh(z[2])
        h = _sigmoid(z[3]) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1), [h, c]


def numpy_cudnn_gru(x, weights, h):
    """cuDNN's GRU: gates stored update, reset, candidate; the reset gate multiplies
    `R_h h + b_Rh`."""
    kernel, recurrent_kernel, bias = weights
    W, R = _cudnn_matrices(kernel, recurrent_kernel, 3)
    b_w, b_r = bias.reshape(2, 3, UNITS)
    outputs = []
    for t in range(x.shape[1]):
        z = _sigmoid(x[:, t] @ W[0].T + b_w[0] + h @ R[0].T + b_r[0])
        r = _sigmoid(x[:, t] @ W[1].T + b_w[1] + h @ R[1].T + b_r[1])
        candidate = np.tanh(x[:, t] @ W[2].T + b_w[2] + r * (h @ R[2].T + b_r[2]))
        h = (1. - z) * candidate + z * h
        outputs.append(h)
    return np.stack(outputs, 1), [h]


LAYERS = [(CuDNNLSTM, numpy_cudnn_lstm, 2), (CuDNNGRU, numpy_cudnn_gru, 1)]


def _random_weights(layer, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.uniform(-0.6, 0.6, w.shape).astype('float32') for w in layer.get_weights()]


@pytest.fixture(params=[True, False], ids=['fast', 'loop'])
def fast_paths(request):
    rnn.fast_paths = request.param
    yield request.param
    rnn.fast_paths = True


@pytest.mark.parametrize('layer_class, reference, n_states', LAYERS)
@pytest.mark.parametrize('go_backwards', [False, True])
@pytest.mark.parametrize('with_initial_state', [False, True])
def test_matches_cudnn_equations(fast_paths, layer_class, reference, n_states, go_backwards,
                                 with_initial_state):
    rng = np.random.RandomState(1)
    x = rng.randn(BATCH, STEPS, FEATURES).astype('float32')
    states = [rng.randn(BATCH, UNITS).astype('float32') for _ in range(n_states)]
    inputs = keras.Input((STEPS, FEATURES))
    state_inputs = [keras.Input((UNITS,)) for _ in range(n_states)]
    layer = layer_class(UNITS, return_sequences=True, return_state=True,
                        go_backwards=go_backwards)
    outputs = layer(inputs, initial_state=state_inputs if with_initial_state else None)
    model = keras.Model([inputs] + (state_inputs if with_initial_state else []), outputs)
    weights = _random_weights(layer)
    layer.set_weights(weights)
    got = model.predict([x] + states if with_initial_state else x)
    initial = states if with_initial_state else [np.zeros((BATCH, UNITS), 'float32')] * n_states
    sequence, final = reference(x[:, ::-1] if go_backwards else x, weights, *initial)
    np.testing.assert_allclose(got[0], sequence, rtol=1e-5, atol=1e-5)
    for g, want in zip(got[1:], final):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('cudnn_class, keras_class, options', [
    (CuDNNLSTM, keras.layers.LSTM, {}),
    (CuDNNGRU, keras.layers.GRU, {'reset_after': True})])
def test_keras_converts_weights_both_ways(tmp_path, cudnn_class, keras_class, options):
    x = np.random.RandomState(2).randn(BATCH, STEPS, FEATURES).astype('float32')

    def model_of(layer):
        inputs = keras.Input((STEPS, FEATURES))
        return keras.Model(inputs, layer(inputs))

    cudnn = model_of(cudnn_class(UNITS, return_sequences=True))
    cudnn.layers[1].set_weights(_random_weights(cudnn.layers[1]))
    plain = model_of(keras_class(UNITS, recurrent_activation='sigmoid', return_sequences=True,
                                 **options))
    path = str(tmp_path / 'cudnn.h5')
    cudnn.save_weights(path)
    plain.load_weights(path)
    np.testing.assert_allclose(plain.predict(x), cudnn.predict(x), rtol=1e-5, atol=1e-6)
    plain.layers[1].set_weights(_random_weights(plain.layers[1], seed=3))
    back = model_of(cudnn_class(UNITS, return_sequences=True))
    plain.save_weights(path)
    back.load_weights(path)
    np.testing.assert_allclose(back.predict(x), plain.predict(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('layer_class', [CuDNNLSTM, CuDNNGRU])
def test_gradients_match_the_traced_loop(layer_class):
    x = np.random.RandomState(4).randn(BATCH, STEPS, FEATURES).astype('float32')
    gradients = []
    for fast in (True, False):
        rnn.fast_paths = fast
        try:
            inputs = keras.Input((STEPS, FEATURES))
            layer = layer_class(UNITS, return_sequences=True)
            output = layer(inputs)
            layer.set_weights(_random_weights(layer))
            loss = K.sum(K.square(output) * K.constant(np.arange(UNITS, dtype='float32')))
            grads = K.gradients(loss, layer.trainable_weights)
            gradients.append(K.function([inputs], grads)([x]))
        finally:
            rnn.fast_paths = True
    for fast, loop in zip(*gradients):
        assert np.abs(fast).max() > 0
        # on CUDA, cuDNN's backward through the recurrence sums in its own order
        np.testing.assert_allclose(fast, loop, rtol=tolerance(1e-4, 1e-3),
                                   atol=tolerance(1e-5, 1e-4))


def test_fused_kernels_run_the_cudnn_layers(monkeypatch):
    """`rnn._fast_cell` recognises the CuDNN layers' cells: the LSTM runs torch's fused
    `torch.lstm`, the GRU a kernel of rnn_kernels (torch.gru on CUDA)."""
    chosen = []
    fast_rnn = rnn._fast_rnn

    def recording(cell, *args):
        chosen.append((type(cell).__name__, rnn._torch_computes(cell, None)))
        return fast_rnn(cell, *args)

    monkeypatch.setattr(rnn, '_fast_rnn', recording)
    inputs = keras.Input((STEPS, FEATURES))
    CuDNNLSTM(UNITS)(inputs)
    CuDNNGRU(UNITS)(inputs)
    assert chosen == [('_CuDNNLSTMCell', True), ('_CuDNNGRUCell', False)]


@pytest.mark.parametrize('layer_class', [CuDNNLSTM, CuDNNGRU])
def test_model_trains(layer_class):
    rng = np.random.RandomState(5)
    x = rng.randn(32, STEPS, FEATURES).astype('float32')
    y = (x.sum(axis=(1, 2)) > 0).astype('float32')
    model = keras.models.Sequential([layer_class(8, input_shape=(STEPS, FEATURES)),
                                     keras.layers.Dense(1, activation='sigmoid')])
    model.compile(keras.optimizers.Adam(lr=0.02), 'binary_crossentropy')
    history = model.fit(x, y, epochs=20, batch_size=8, verbose=0)
    assert history.history['loss'][-1] < 0.7 * history.history['loss'][0]


@pytest.mark.parametrize('layer_class', [CuDNNLSTM, CuDNNGRU])
def test_stateful_batches_continue_the_sequence(layer_class):
    x = np.random.RandomState(6).randn(BATCH, STEPS, FEATURES).astype('float32')
    whole = keras.models.Sequential([layer_class(UNITS, input_shape=(None, FEATURES))])
    stateful = keras.models.Sequential([
        layer_class(UNITS, stateful=True, batch_input_shape=(BATCH, STEPS // 2, FEATURES))])
    stateful.set_weights(_random_weights(whole.layers[0]))
    whole.set_weights(stateful.get_weights())
    stateful.predict(x[:, :STEPS // 2], batch_size=BATCH)
    second = stateful.predict(x[:, STEPS // 2:], batch_size=BATCH)
    np.testing.assert_allclose(second, whole.predict(x), rtol=1e-5, atol=1e-6)
    stateful.reset_states()
    np.testing.assert_allclose(stateful.predict(x[:, :STEPS // 2], batch_size=BATCH),
                               whole.predict(x[:, :STEPS // 2]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('layer_class', [CuDNNLSTM, CuDNNGRU])
def test_masks_and_time_major_are_refused(layer_class):
    inputs = keras.Input((STEPS, FEATURES))
    with pytest.raises(ValueError, match='masking is not supported'):
        layer_class(UNITS)(keras.layers.Masking()(inputs))
    with pytest.raises(ValueError, match='time_major=True'):
        layer_class(UNITS, time_major=True)


def test_unit_forget_bias_is_on_the_recurrent_forget_gate():
    layer = CuDNNLSTM(UNITS)
    layer.build((None, STEPS, FEATURES))
    bias = K.get_value(layer.bias)
    expected = np.zeros(8 * UNITS, 'float32')
    expected[5 * UNITS:6 * UNITS] = 1.
    np.testing.assert_array_equal(bias, expected)


def test_torch_gru_kernel_matches_rnn_kernels():
    """The GRU kernel used on CUDA (torch.gru, run here on the CPU) computes what the CPU
    kernel of rnn_kernels computes."""
    rng = np.random.RandomState(7)
    x, h0, kernel, recurrent, bias = (
        torch.tensor(rng.uniform(-1, 1, shape).astype('float32'))
        for shape in [(BATCH, STEPS, FEATURES), (BATCH, UNITS), (FEATURES, 3 * UNITS),
                      (UNITS, 3 * UNITS), (2, 3 * UNITS)])
    fused = rnn._torch_gru(x, h0, kernel, recurrent, bias)
    reference = rnn._cell_recurrence('GRUCell', x, [h0], kernel, recurrent, bias, None, None,
                                     None, False, 'tanh', 'sigmoid', True)
    for got, want in zip(fused[:2] + (fused[2][0],), reference[:2] + (reference[2][0],)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('name', ['CuDNNLSTM', 'CuDNNGRU'])
def test_keras_module_of_the_cudnn_layers_gives_torchk_classes(name):
    from keras.layers import cudnn_recurrent
    import torchk.layers
    assert getattr(cudnn_recurrent, name) is getattr(torchk.layers, name)
    assert getattr(keras.layers, name) is getattr(torchk.layers, name)
