"""The zeros pass (torchk/passes/zeros.py): zeros built by arithmetic from a tensor's shape are
made at once, with the same values and shapes, with the pass on and off."""
import numpy as np
import pytest

from torchk import array_ops
from torchk import core as K
from torchk.passes import zeros


def _function(build, enabled):
    zeros.set_enabled(enabled)
    try:
        inputs, outputs = build()
        return K.function(inputs, outputs)
    finally:
        zeros.set_enabled(None)


def _constants(function):
    return list(function._program.__globals__.values())


@pytest.mark.parametrize('chain, shape', [
    # Keras' RNN.get_initial_state
    (lambda x: K.tile(K.expand_dims(K.sum(K.zeros_like(x), axis=(1, 2))), [1, 5]), (4, 5)),
    (lambda x: K.zeros_like(x), (4, 3, 2)),
    (lambda x: K.sum(K.zeros_like(x, dtype='int32'), axis=1, keepdims=True), (4, 1, 2)),
    (lambda x: K.expand_dims(K.sum(K.zeros_like(x)), 0), (1,)),
    (lambda x: K.tile(K.zeros_like(x), 2), (4, 3, 4)),
], ids=['rnn_initial_state', 'zeros_like', 'sum_keepdims_int', 'sum_all', 'tile_int'])
def test_zeros_from_a_shape_are_made_at_once(chain, shape):
    def build():
        x = K.placeholder(shape=(None, 3, 2))
        y = chain(x)
        return [x], [y, y + 1.]
    rewritten, plain = _function(build, True), _function(build, False)
    feeds = [np.ones((4, 3, 2), 'float32')]
    for a, b in zip(rewritten(feeds), plain(feeds)):
        assert a.shape == b.shape
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert rewritten(feeds)[0].shape == shape
    assert array_ops.zeros_like.__wrapped__ not in _constants(rewritten)
    assert zeros.zeros_of_shape in _constants(rewritten)


def test_zeros_read_by_other_ops_are_kept():
    def build():
        x = K.placeholder(shape=(None, 3))
        return [x], [K.exp(K.zeros_like(x)), K.tile(K.zeros_like(x), K.shape(x))]
    rewritten = _function(build, True)
    results = rewritten([np.ones((2, 3), 'float32')])
    np.testing.assert_array_equal(results[0], np.ones((2, 3)))
    assert results[1].shape == (4, 9)
    assert array_ops.tile.__wrapped__ in _constants(rewritten)


def test_lstm_model_trains_alike_with_and_without_the_pass():
    import keras

    def train(enabled):
        np.random.seed(0)
        zeros.set_enabled(enabled)
        try:
            model = keras.models.Sequential([keras.layers.LSTM(4, input_shape=(5, 3)),
                                             keras.layers.Dense(1)])
            model.compile('sgd', 'mse')
            x = np.random.RandomState(1).rand(8, 5, 3).astype('float32')
            losses = [model.train_on_batch(x, np.ones((8, 1))) for _ in range(3)]
        finally:
            zeros.set_enabled(None)
        return losses, model.get_weights()
    (losses, weights), (plain_losses, plain_weights) = train(True), train(False)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    for a, b in zip(weights, plain_weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
