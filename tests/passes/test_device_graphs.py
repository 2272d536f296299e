"""Device graphs (torchk/passes/device_graphs.py) checked on the CPU.

A CUDA graph replays what was captured, reading its static argument buffers: here a backend
that "replays" by running the captured program on those buffers stands in for it, so the
bookkeeping (static buffers, signatures, warm-up, version counters, fallbacks) is checked
against the program run as it is. `StepProbe` checks what a capture could not hold: every
Keras training step below must read nothing back to the host and make no tensor from host
data, as it is built for CUDA (`host_variables=False`)."""
import warnings

import numpy as np
import pytest

import keras
from torchk import core as K
from torchk import mixed_precision
from torchk.passes import device_graphs


class _RunningReplay:
    """Replays a 'captured' program by running it on the static buffers it closes over."""

    captures = 0

    def __init__(self, device=None):
        pass

    def warm(self, run):
        return run()

    def capture(self, run):
        _RunningReplay.captures += 1
        return _Handle(run)


class _Handle:
    def __init__(self, run):
        self.run = run
        self.outputs = None

    def replay(self):
        self.outputs = self.run()


@pytest.fixture
def captured(monkeypatch):
    """Programs built from now on are captured (on the CPU, with `_RunningReplay`)."""
    monkeypatch.setattr(device_graphs, 'applies', lambda device: True)
    monkeypatch.setattr(device_graphs, 'CudaCapture', _RunningReplay)
    _RunningReplay.captures = 0
    return _RunningReplay


def _mlp():
    return keras.models.Sequential([keras.layers.Dense(8, activation='relu', input_shape=(6,)),
                                    keras.layers.Dropout(0.3),
                                    keras.layers.Dense(3, activation='softmax')])


def _cnn():
    return keras.models.Sequential([
        keras.layers.Conv2D(4, 3, activation='relu', input_shape=(8, 8, 2)),
        keras.layers.BatchNormalization(), keras.layers.Flatten(),
        keras.layers.Dense(3, activation='softmax')])


def _lstm():
    return keras.models.Sequential([
        keras.layers.Embedding(20, 4, input_length=5),
        keras.layers.LSTM(6, dropout=0.2, recurrent_dropout=0.2),
        keras.layers.Dense(3, activation='softmax')])


def _gru():
    return keras.models.Sequential([keras.layers.Embedding(20, 4, input_length=5),
                                    keras.layers.GRU(6), keras.layers.Dense(3, activation='softmax')])


MODELS = {'mlp': (_mlp, (6,), 'float32'), 'cnn': (_cnn, (8, 8, 2), 'float32'),
          'lstm': (_lstm, (5,), 'int64'), 'gru': (_gru, (5,), 'int64')}


def _data(shape, dtype, seed, batch=8):
    rng = np.random.RandomState(seed)
    x = (rng.randint(0, 20, (batch,) + shape) if dtype == 'int64'
         else rng.rand(batch, *shape)).astype(dtype)
    return x, np.eye(3)[rng.randint(0, 3, batch)].astype('float32')


def _train(name, steps=5, optimizer='adam'):
    build, shape, dtype = MODELS[name]
    np.random.seed(0)
    model = build()
    model.compile(optimizer, 'categorical_crossentropy')
    losses = [model.train_on_batch(*_data(shape, dtype, seed)) for seed in range(steps)]
    return model, losses


@pytest.mark.parametrize('name', sorted(MODELS))
def test_a_captured_training_step_replays_with_the_same_numbers(name, captured):
    with warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)  # no fallback message
        model, losses = _train(name)
    assert captured.captures >= 1
    predicted = model.predict(_data(MODELS[name][1], MODELS[name][2], 9)[0])
    device_graphs.set_enabled(False)
    try:
        plain, plain_losses = _train(name)
    finally:
        device_graphs.set_enabled(None)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    for a, b in zip(model.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(predicted, plain.predict(_data(MODELS[name][1],
                                                              MODELS[name][2], 9)[0]),
                               rtol=1e-5, atol=1e-6)


def test_a_loss_scaled_mixed_precision_step_is_captured(captured):
    mixed_precision.set_global_policy('mixed_float16')
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always', RuntimeWarning)
            _train('mlp', steps=4)
    finally:
        mixed_precision.set_global_policy('float32')
    assert not [w for w in caught if 'CUDA graph' in str(w.message)]
    assert captured.captures == 1


def test_a_program_reading_values_runs_as_it_is_and_says_why_once(captured):
    indices = K.placeholder(shape=(2,), dtype='int32')
    table = K.variable(np.arange(8.).reshape(4, 2))
    step = K.function([indices], [K.gather(table, indices + 1)])
    with pytest.warns(RuntimeWarning, match=r'tolist\(\) at validation'):
        results = [step([np.array([0, i % 3], 'int32')])[0] for i in range(5)]
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result, np.arange(8.).reshape(4, 2)[[1, i % 3 + 1]])
    assert captured.captures == 0


def test_a_new_signature_is_captured_apart_and_the_old_one_kept(captured):
    x = K.placeholder(shape=(None, 3))
    w = K.variable(np.ones((3, 2)))
    step = K.function([x], [K.dot(x, w)], updates=[K.update(w, w * 0.5)])
    scale = 1.
    for batch in (4, 4, 4, 2, 2, 2, 4, 2):
        result = step([np.ones((batch, 3), 'float32')])[0]
        np.testing.assert_allclose(result, np.full((batch, 2), 3. * scale))
        scale *= 0.5
    assert captured.captures == 2


def test_a_changed_beta_is_captured_again(captured):
    model, _ = _train('mlp', steps=4)
    captures = captured.captures
    K.set_value(model.optimizer.beta_1, 0.5)
    model.train_on_batch(*_data((6,), 'float32', 7))
    assert captured.captures == captures + 1


def test_probe_notes_host_reads_and_host_data():
    import torch
    probe = device_graphs.StepProbe()
    with probe:
        x = torch.ones(3)
        float(x.sum())
        torch.tensor([1., 2.])
        x.tolist()
        x[x > 0]
    kinds = [what for what, _ in probe.problems]
    assert any('read back' in k for k in kinds)
    assert any('host data' in k for k in kinds)
    assert any('tolist' in k for k in kinds)
    assert any('boolean-mask' in k for k in kinds)
