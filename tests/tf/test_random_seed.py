"""`tf.random.set_seed` alone makes a tf.keras script repeat its results, as under TF: it seeds
torch (weight initializers, dropout) and numpy's global generator (Keras 2.3.1's `fit`
shuffles with it)."""
import numpy as np

import torchk.keras as keras
import torchk.tf as tf

X = np.random.RandomState(0).randn(48, 5).astype('float32')
Y = (X[:, 0] > 0).astype('float32')


def _fit_once():
    tf.random.set_seed(1)
    model = keras.Sequential([keras.layers.Dense(6, activation='relu', input_shape=(5,)),
                              keras.layers.Dropout(0.3), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(learning_rate=0.1), 'mse')
    model.fit(X, Y, batch_size=8, epochs=2, shuffle=True, verbose=0)
    return model.get_weights()


def test_set_seed_repeats_a_shuffled_fit():
    first = _fit_once()
    np.random.rand(3)  # the global generator moves on between the runs, as in a script
    second = _fit_once()
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


def test_set_seed_seeds_numpy():
    tf.random.set_seed(5)
    drawn = np.random.rand(4)
    np.random.seed(5)
    assert np.array_equal(drawn, np.random.rand(4))
