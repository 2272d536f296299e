"""tf.keras' `Dense` where Keras 2.3.1's differs (torchk/keras/layers/core.py)."""
import numpy as np
import pytest

import torchk.keras as keras

MULTI_HOT = np.array([[1, 0, 1, 1], [0, 1, 0, 0]])


@pytest.mark.parametrize('dtype', ['int64', 'int32', 'bool'])
def test_dense_casts_integer_inputs_to_its_dtype(dtype):
    """TF's `Dense.call` casts its inputs (Deep Learning with Python's multi-hot tickets,
    concatenated int64 arrays into a `Dense`); the products are the float products."""
    dense = keras.layers.Dense(3)
    values = MULTI_HOT.astype(dtype)
    outputs = np.asarray(dense(values))
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(outputs, MULTI_HOT.astype('float32') @ kernel + bias, rtol=1e-6)
    inputs = keras.Input((4,), dtype=dtype)
    model = keras.Model(inputs, dense(inputs))
    np.testing.assert_allclose(model.predict(values, verbose=0), outputs, rtol=1e-6)
