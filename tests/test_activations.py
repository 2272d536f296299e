"""torchk.activations: gelu, swish/silu and mish against their numpy formulas, and as Keras
activation names (TF's own values are compared in tests/layers/test_tf_keras_models.py)."""
import numpy as np
import pytest
from scipy.special import erf

import keras
from keras import backend as K

from torchk import activations

X = np.linspace(-6., 6., 97).astype('float32').reshape(1, 97)


def _sigmoid(x):
    return 1. / (1. + np.exp(-x))


REFERENCES = {
    'gelu': lambda x: 0.5 * x * (1. + erf(x / np.sqrt(2.))),
    'swish': lambda x: x * _sigmoid(x),
    'silu': lambda x: x * _sigmoid(x),
    'mish': lambda x: x * np.tanh(np.log1p(np.exp(x))),
}


@pytest.mark.parametrize('name', sorted(REFERENCES))
def test_activation_matches_formula(name):
    x = X.astype('float64')
    np.testing.assert_allclose(K.eval(getattr(activations, name)(K.constant(X))),
                               REFERENCES[name](x), rtol=1e-6, atol=1e-6)


def test_approximate_gelu_matches_tanh_formula():
    x = X.astype('float64')
    expected = 0.5 * x * (1. + np.tanh(np.sqrt(2. / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(K.eval(activations.gelu(K.constant(X), approximate=True)),
                               expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('name', sorted(REFERENCES))
def test_activation_by_name_in_a_model(name):
    inputs = keras.Input((97,))
    model = keras.Model(inputs, keras.layers.Activation(name)(inputs))
    np.testing.assert_allclose(model.predict(X), REFERENCES[name](X.astype('float64')),
                               rtol=1e-6, atol=1e-6)
    rebuilt = keras.models.Model.from_config(model.get_config())
    assert rebuilt.layers[-1].get_config()['activation'] == name


def test_dense_with_gelu_trains():
    np.random.seed(0)
    model = keras.models.Sequential([keras.layers.Dense(4, activation='gelu', input_shape=(3,)),
                                     keras.layers.Dense(1, activation='swish')])
    model.compile(keras.optimizers.SGD(0.1), 'mse')
    x, y = np.random.randn(32, 3).astype('float32'), np.random.randn(32, 1).astype('float32')
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=5, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
