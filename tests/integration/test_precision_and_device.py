"""floatx float64 and float16 end to end, and the device variables and feeds live on.

float16 decision (README "Configuration"): torchk keeps the variables Keras creates in
floatx, as Keras asks, with no hidden float32 master copy, because Keras' optimizers read
and write the variables themselves. Keras 2.3.1 has no loss scaling, so float16 training
needs `K.set_epsilon(1e-4)` (1e-7 is zero in float16) and well-scaled losses; for mixed
precision on CUDA, train through `torchk.to_torch` with `torch.autocast`.
"""
import numpy as np
import pytest
import torch

import keras
from keras import backend as K
from keras.layers import Dense
from keras.models import Sequential

from torchk import config


@pytest.fixture
def floatx():
    """Sets floatx (and a float16-safe epsilon) for one test, then restores both."""
    saved = (K.floatx(), K.epsilon())

    def set_floatx(value):
        K.set_floatx(value)
        if value == 'float16':
            K.set_epsilon(1e-4)
    yield set_floatx
    K.set_floatx(saved[0])
    K.set_epsilon(saved[1])


def regression_data(dtype, samples=256):
    rng = np.random.RandomState(0)
    x = rng.randn(samples, 4).astype(dtype)
    y = (x @ np.array([[1.], [-2.], [0.5], [0.]]) + 0.3).astype(dtype)
    return x, y


@pytest.mark.parametrize('dtype, make_optimizer, tolerance', [
    ('float64', lambda: keras.optimizers.Adam(0.01), 0.05),
    ('float16', lambda: keras.optimizers.SGD(0.05), 0.25),
])
def test_floatx_trains_end_to_end(floatx, dtype, make_optimizer, tolerance):
    floatx(dtype)
    optimizer = make_optimizer()
    x, y = regression_data(dtype)
    model = Sequential([Dense(8, activation='tanh', input_shape=(4,)), Dense(1)])
    model.compile(optimizer=optimizer, loss='mse')
    assert all(K.dtype(w) == dtype for w in model.weights)
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=30, batch_size=32, verbose=0)
    last = model.evaluate(x, y, verbose=0)
    prediction = model.predict(x[:3])
    assert prediction.dtype == np.dtype(dtype)
    assert np.isfinite(last) and last < tolerance * first


def test_variables_and_results_live_on_the_configured_device():
    model = Sequential([Dense(2, input_shape=(3,))])
    assert all(w.device.type == config.device().type for w in model.weights)
    out = model.predict(np.ones((4, 3), 'float32'))
    assert isinstance(out, np.ndarray) and out.shape == (4, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_cuda_feeds_and_values(monkeypatch):
    monkeypatch.setattr(config, '_DEVICE', torch.device('cuda'))
    x = K.placeholder(shape=(None, 3))
    w = K.variable(np.ones((3, 2)))
    assert w.device.type == 'cuda'
    result = K.function([x], [K.dot(x, w)])([np.ones((5, 3), 'float32')])[0]
    assert isinstance(result, np.ndarray) and result.tolist() == [[3., 3.]] * 5
    assert K.get_value(w).tolist() == [[1., 1.]] * 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_initial_weights_are_the_same_on_cpu_and_cuda(monkeypatch):
    def initial_weights(device):
        monkeypatch.setattr(config, '_DEVICE', torch.device(device))
        np.random.seed(7)
        model = Sequential([Dense(8, input_shape=(5,), kernel_initializer='glorot_normal'),
                            Dense(3, kernel_initializer='he_uniform',
                                  bias_initializer='random_normal')])
        assert {w.device.type for w in model.weights} == {device}
        return model.get_weights()

    for on_cpu, on_cuda in zip(initial_weights('cpu'), initial_weights('cuda')):
        np.testing.assert_array_equal(on_cpu, on_cuda)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
def test_cuda_float16_training_is_numerically_sane(floatx, monkeypatch):
    """float16 on CUDA trains as float32 does from the same initial weights (how far 240
    Adam steps get depends on them: a ratio of 0.08 to 0.31 over numpy seeds 0-5)."""
    monkeypatch.setattr(config, '_DEVICE', torch.device('cuda'))

    def trained(dtype):
        floatx(dtype)
        x, y = regression_data(dtype)
        np.random.seed(1)
        model = Sequential([Dense(16, activation='relu', input_shape=(4,)), Dense(1)])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss='mse')
        first = model.evaluate(x, y, verbose=0)
        model.fit(x, y, epochs=30, batch_size=32, verbose=0, shuffle=False)
        return first, model.evaluate(x, y, verbose=0)

    first32, last32 = trained('float32')
    first16, last16 = trained('float16')
    assert first16 == pytest.approx(first32, rel=1e-2)
    assert np.isfinite(last16) and last16 < 0.5 * first16 and last16 < 1.5 * last32
