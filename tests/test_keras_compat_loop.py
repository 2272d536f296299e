"""`torchk.keras_compat`'s fixes of Keras 2.3.1's loop around the step: batches cut as views,
callback timing without numpy."""
import time

import numpy as np
import pytest

import keras
from keras.engine import training_arrays
from keras.utils import generic_utils

RNG = np.random.RandomState(0)
X = RNG.randn(40, 3).astype('float32')
Y = RNG.randn(40, 1).astype('float32')


@pytest.mark.parametrize('indices', [np.arange(8, 16), np.array([3, 9, 1, 0]), np.arange(5, 6)])
def test_batches_are_keras_batches_and_views_where_consecutive(indices):
    got = training_arrays.slice_arrays([X, Y, None], indices)
    expected = generic_utils.slice_arrays([X, Y, None], indices)
    assert got[2] is None
    for a, b in zip(got[:2], expected[:2]):
        np.testing.assert_array_equal(a, b)
    consecutive = bool((np.diff(indices) == 1).all())
    assert np.shares_memory(got[0], X) == consecutive
    np.testing.assert_array_equal(training_arrays.slice_arrays(X, indices), X[indices])


class _ListIndexedOnly:
    """Indexed by slices or lists only, as an h5py dataset is."""

    def __init__(self, values):
        self.values = values

    def __getitem__(self, key):
        if isinstance(key, np.ndarray):
            raise TypeError('index with a list')
        return self.values[key]


def test_other_arrays_are_cut_as_keras_cuts_them():
    data = _ListIndexedOnly(X)
    np.testing.assert_array_equal(training_arrays.slice_arrays([data], np.array([4, 2]))[0],
                                  X[[4, 2]])
    np.testing.assert_array_equal(training_arrays.slice_arrays([data], np.arange(2, 6))[0],
                                  X[2:6])
    assert training_arrays.slice_arrays([X], 2, 5)[0].tolist() == X[2:5].tolist()


def _model():
    np.random.seed(1)
    model = keras.models.Sequential([keras.layers.Dense(4, activation='tanh', input_shape=(3,)),
                                     keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.01), 'mse')
    return model


def test_fit_trains_as_train_on_batch_over_the_same_batches():
    fitted, stepped = _model(), _model()
    stepped.set_weights(fitted.get_weights())
    history = fitted.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    losses = []
    for _ in range(2):
        losses.append([float(stepped.train_on_batch(X[i:i + 16], Y[i:i + 16]))
                       for i in range(0, 40, 16)])
    for a, b in zip(fitted.get_weights(), stepped.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    expected = [np.average(epoch, weights=[16, 16, 8]) for epoch in losses]
    np.testing.assert_allclose(history.history['loss'], expected, rtol=1e-5)


class _Slow(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = []

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append((batch, logs['size']))
        time.sleep(0.12)


def test_slow_callbacks_are_still_reported():
    slow = _Slow()
    with pytest.warns(RuntimeWarning, match=r'on_train_batch_end\) is slow'):
        _model().fit(X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[slow])
    assert slow.batches == [(0, 16), (1, 16), (2, 8)]
