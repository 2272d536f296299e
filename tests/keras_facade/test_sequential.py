"""tf.keras' `Sequential` (torchk.keras.engine.sequential): `keras.Input(...)` starts it."""
import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

TOKENS = np.array([[1, 2, 3], [4, 0, 9]])


def _embedding_model(start):
    layers = [keras.layers.Embedding(10, 2), keras.layers.Flatten(), keras.layers.Dense(1)]
    if start == 'list':
        return keras.Sequential([keras.Input(shape=(3,), dtype='int32')] + layers)
    model = keras.Sequential()
    model.add(keras.Input(shape=(3,), dtype='int32'))
    for layer in layers:
        model.add(layer)
    return model


def _reference(model, tokens):
    embeddings, kernel, bias = model.get_weights()
    return embeddings[tokens].reshape(len(tokens), -1) @ kernel + bias


@pytest.mark.parametrize('start', ['list', 'add'])
def test_input_starts_the_model(start):
    model = _embedding_model(start)
    assert model.inputs[0].dtype == 'int32' and tuple(model.inputs[0].shape) == (None, 3)
    assert [type(layer).__name__ for layer in model.layers] == ['Embedding', 'Flatten', 'Dense']
    assert model.output_shape == (None, 1)
    np.testing.assert_allclose(model.predict(TOKENS), _reference(model, TOKENS), rtol=1e-5)


@pytest.mark.parametrize('extension', ['h5', 'keras'])
def test_saved_with_its_input(tmp_path, extension):
    """The configuration starts with the InputLayer, as tf.keras writes it: the input's length
    and dtype come back (Embedding's own configuration has neither)."""
    model = _embedding_model('list')
    assert model.get_config()['layers'][0]['class_name'] == 'InputLayer'
    path = str(tmp_path / ('model.' + extension))
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, keras.Sequential)
    assert loaded.inputs[0].dtype == 'int32' and tuple(loaded.inputs[0].shape) == (None, 3)
    np.testing.assert_allclose(loaded.predict(TOKENS), model.predict(TOKENS), rtol=1e-6)


def test_a_layer_shaped_model_keeps_keras_configuration():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    assert [entry['class_name'] for entry in model.get_config()['layers']] == ['Dense']


def test_fit_on_a_dataset_as_with_input_shape():
    """`Sequential([keras.Input(...), ...])` trains as the same layers given `input_shape`
    (the scoreboard's tfk_fit: fit on a tf.data.Dataset)."""
    rng = np.random.RandomState(0)
    x, y = rng.randn(64, 4).astype('float32'), rng.randn(64, 1).astype('float32')
    histories = []
    for first in ([keras.Input(shape=(4,)), keras.layers.Dense(8, activation='relu')],
                  [keras.layers.Dense(8, activation='relu', input_shape=(4,))]):
        keras.utils.set_random_seed(3)
        model = keras.Sequential(first + [keras.layers.Dense(1)])
        model.compile(keras.optimizers.Adam(0.01), 'mse')
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
        histories.append(model.fit(dataset, epochs=3, verbose=0).history['loss'])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-6)
    assert histories[0][-1] < histories[0][0]


def test_a_model_without_input_is_built_by_its_first_call():
    """A `Sequential` given no input shape builds when a functional model calls it on a Keras
    tensor (a tower shared inside a functional model), as in tf.keras."""
    tower = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(2)])
    assert not tower.built
    features = keras.Input(shape=(4,))
    model = keras.Model(features, tower(features))
    assert tower.built and model.output_shape == (None, 2)
    x = np.random.RandomState(1).randn(5, 4).astype('float32')
    kernel1, bias1, kernel2, bias2 = tower.get_weights()
    np.testing.assert_allclose(model.predict(x), (x @ kernel1 + bias1) @ kernel2 + bias2,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('data', ['text', 'integers'])
def test_a_model_built_from_data_of_text_or_integers_takes_their_dtype(data):
    """TF's text classification tutorial evaluates `Sequential([vectorize_layer, model,
    Activation('sigmoid')])` on raw strings, compiled with one metric object (not a list)."""
    labels = np.array([1., 0., 1., 0.], 'float32')
    if data == 'text':
        x = np.array(['a good film', 'a bad film', 'good good', 'bad'])
        vectorize = keras.layers.TextVectorization(max_tokens=6, output_sequence_length=3)
        vectorize.adapt(x)
        layers = [vectorize, keras.layers.Embedding(6, 2),
                  keras.layers.GlobalAveragePooling1D()]
    else:
        x = np.array([[1, 2, 3], [1, 4, 3], [2, 2, 0], [4, 0, 0]])
        layers = [keras.layers.CategoryEncoding(num_tokens=6, output_mode='multi_hot')]
    model = keras.Sequential(layers + [keras.layers.Dense(1, activation='sigmoid')])
    model.compile(loss='binary_crossentropy', optimizer='adam',
                  metrics=keras.metrics.BinaryAccuracy(threshold=0.5))
    loss, accuracy = model.evaluate(x, labels, verbose=0)
    predicted = model.predict(x, verbose=0)[:, 0]
    assert model.inputs[0].dtype == ('string' if data == 'text' else 'int64')
    assert accuracy == pytest.approx(np.mean((predicted > .5) == labels))
    expected_loss = -np.mean(labels * np.log(predicted) + (1 - labels) * np.log(1 - predicted))
    assert loss == pytest.approx(expected_loss, rel=1e-5)
