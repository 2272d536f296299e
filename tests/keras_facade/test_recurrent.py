"""tf.keras' recurrent and normalization semantics over Keras 2.3.1's: `GRU`'s default
`reset_after=True`, stateful layers called eagerly, masks passed between eager calls (TF's
results: tests/fixtures/make_tf_keras_semantics.py), frozen `BatchNormalization`."""
import os

import numpy as np
import pytest
import torch

import torchk.keras as keras

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'fixtures', 'tf_keras', 'semantics')


def _fixture(name):
    with np.load(os.path.join(FIXTURES, name + '.npz')) as data:
        arrays = dict(data)
    weights = [arrays.pop('w%d' % i) for i in range(len(arrays)) if 'w%d' % i in arrays]
    return arrays, weights


def test_gru_default_is_tf_keras():
    arrays, weights = _fixture('gru_default')
    layer = keras.layers.GRU(3, return_sequences=True)
    assert layer.reset_after and keras.layers.GRUCell(2).reset_after
    layer(arrays['x'])
    assert [w.shape for w in layer.get_weights()] == [w.shape for w in weights]
    layer.set_weights(weights)
    np.testing.assert_allclose(np.asarray(layer(arrays['x'])), arrays['y'], rtol=1e-5,
                               atol=1e-6)


def test_eager_embedding_mask_reaches_the_lstm():
    arrays, weights = _fixture('eager_mask_chain')
    embedding = keras.layers.Embedding(6, 3, mask_zero=True)
    lstm = keras.layers.LSTM(2)
    embedded = embedding(arrays['x'])
    lstm(embedded)
    embedding.set_weights(weights[:1])
    lstm.set_weights(weights[1:])
    np.testing.assert_allclose(np.asarray(lstm(embedding(arrays['x']))), arrays['y'],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('layer_class', ['LSTM', 'GRU', 'SimpleRNN'])
def test_stateful_layer_called_eagerly_carries_its_state(layer_class):
    """Two eager calls on halves of a sequence end where one call on the whole does."""
    x = np.random.RandomState(0).randn(2, 6, 3).astype('float32')
    stateful = getattr(keras.layers, layer_class)(4, stateful=True)
    whole = getattr(keras.layers, layer_class)(4)
    stateful(x[:, :3])
    whole(x)
    stateful.reset_states()
    whole.set_weights(stateful.get_weights())
    stateful(x[:, :3])
    np.testing.assert_allclose(np.asarray(stateful(x[:, 3:])), np.asarray(whole(x)),
                               rtol=1e-5, atol=1e-6)


def test_frozen_batch_normalization_infers_in_training():
    """tf.keras 2: `trainable=False` runs batch normalization in inference mode in `fit`
    (the moving statistics normalise and stay), where Keras 2.3.1 uses the batch's."""
    norm = keras.layers.BatchNormalization()
    norm.trainable = False
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1, kernel_initializer='ones')(norm(inputs)))
    model.compile(keras.optimizers.SGD(0.), 'mse')
    x = np.random.RandomState(0).uniform(3, 5, (32, 2)).astype('float32')
    loss = model.fit(x, np.zeros((32, 1)), batch_size=32, verbose=0).history['loss'][0]
    assert loss == pytest.approx(np.mean((x.sum(1) / np.sqrt(1. + 1e-3)) ** 2), rel=1e-5)
    np.testing.assert_array_equal(keras.backend.get_value(norm.moving_mean), [0., 0.])
    np.testing.assert_allclose(np.asarray(norm(x, training=True)), x / np.sqrt(1. + 1e-3),
                               rtol=1e-5)


def test_eager_initial_state_as_in_a_functional_model():
    rng = np.random.RandomState(0)
    x, h, c = rng.randn(2, 3, 2), rng.randn(2, 4), rng.randn(2, 4)
    x, h, c = (v.astype('float32') for v in (x, h, c))
    lstm = keras.layers.LSTM(4)
    inputs, states = keras.Input((3, 2)), [keras.Input((4,)), keras.Input((4,))]
    model = keras.Model([inputs] + states, lstm(inputs, initial_state=states))
    eager = lstm(torch.from_numpy(x), initial_state=[torch.from_numpy(h), torch.from_numpy(c)])
    np.testing.assert_allclose(np.asarray(eager), model.predict([x, h, c]), rtol=1e-5)
    assert not np.allclose(np.asarray(eager), np.asarray(lstm(x)), atol=1e-3)


def test_a_tuple_of_inputs_to_a_convolutional_rnn_is_refused_by_name():
    """tf.keras' `RNN` takes a tuple for one nested input (test_nested_rnn.py); its
    convolutional recurrent layers take one tensor, or a list `[inputs, *states]`."""
    layer = keras.layers.ConvLSTM2D(2, 3)
    inputs = (keras.Input((None, 5, 5, 1)), keras.Input((None, 5, 5, 1)))
    with pytest.raises(NotImplementedError, match='convolutional recurrent layers take one'):
        layer(inputs)
    assert keras.backend.int_shape(layer(inputs[0])) == (None, 3, 3, 2)
