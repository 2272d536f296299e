"""Python operators on the Keras tensors of a functional model are op layers, as in tf.keras
(torchk/keras/engine/functional.py, `operator_as_op_layer`); TF's layers, outputs and file
from tests/fixtures/make_tf_keras_functional.py."""
import json
import os

import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'tf_keras',
                    'functional')
with open(os.path.join(HERE, 'operators.json')) as _file:
    TF = json.load(_file)
X = np.array(TF['x'], dtype='float32')


def _operators_model():
    inputs = keras.Input((3,))
    dense = keras.layers.Dense(2, kernel_initializer='ones', bias_initializer='ones')(inputs)
    combined = dense * 2. - inputs[:, :2] + (dense + 1.) ** 2 / 4.
    return keras.Model(inputs, [combined, -dense, abs(dense - 4.), 1. - dense, dense // 2.,
                                dense % 3., dense > 4.5, 3. / dense])


def _assert_outputs(outputs):
    for got, expected in zip(outputs, TF['outputs']):
        np.testing.assert_allclose(np.asarray(got, dtype='float32'),
                                   np.asarray(expected, dtype='float32'), rtol=1e-6)


def test_operators_are_the_op_layers_tf_keras_makes(tmp_path):
    model = _operators_model()
    assert [[type(layer).__name__, getattr(layer, 'function', None)]
            for layer in model.layers] == TF['layers']
    _assert_outputs(model(X))
    path = str(tmp_path / 'operators.h5')
    model.save(path)
    _assert_outputs(keras.models.load_model(path).predict(X, verbose=0))


def test_tf_keras_file_of_operators_loads():
    _assert_outputs(keras.models.load_model(os.path.join(HERE, 'operators.h5'))(X))


def test_a_model_of_operators_on_a_scalar_input_called_on_numbers():
    """TF's CSV tutorial: `calc = Model(input, 2 * input + 1)` with `Input(shape=())`."""
    scalar = keras.Input(shape=(), dtype=tf.float32)
    calc = keras.Model(inputs=scalar, outputs=2 * scalar + 1)
    assert float(calc(1)) == TF['calc_1']
    np.testing.assert_allclose(calc(np.array([2., 3.])), TF['calc_2_3'])


def test_operators_inside_calls_and_losses_stay_backend_ops():
    class Doubled(keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2.

    def loss(y_true, y_pred):
        return keras.backend.mean((y_pred[:, :1] - y_true) ** 2)
    inputs = keras.Input((3,))
    model = keras.Model(inputs, Doubled()(inputs))
    model.compile('sgd', loss)
    assert [type(layer).__name__ for layer in model.layers] == ['InputLayer', 'Doubled']
    x, y = np.ones((4, 3), 'float32'), np.zeros((4, 1), 'float32')
    assert model.evaluate(x, y, verbose=0) == pytest.approx(4.)
    assert not model.layers[1]._outbound_nodes
