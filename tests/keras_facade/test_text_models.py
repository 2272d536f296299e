"""Strings through the tf.keras facade: a model with a string input called on string
tensors (eager), `predict` on a list of str, `fit` and `evaluate` on a `tf.data.Dataset` of
strings, and a text layer called on values."""
import numpy as np

import torchk.keras as keras
import torchk.tf as tf

TEXTS = ['good fun', 'bad dull', 'good good', 'dull bad bad', 'fun good', 'bad']
LABELS = np.array([1., 0., 1., 0., 1., 0.], dtype='float32')


def _model():
    vectorize = keras.layers.TextVectorization(output_mode='multi_hot')
    vectorize.adapt(TEXTS)
    inputs = keras.Input(shape=(1,), dtype=tf.string)
    outputs = keras.layers.Dense(1, activation='sigmoid')(vectorize(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(0.1), 'binary_crossentropy', metrics=['accuracy'])
    return model


def test_fit_and_evaluate_on_a_dataset_of_strings_predict_on_a_list():
    model = _model()
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).shuffle(6, seed=1).batch(2)
    model.fit(dataset, epochs=20, verbose=0)
    assert model.evaluate(dataset, verbose=0)[1] == 1.
    predicted = model.predict(['good', 'dull'])
    assert predicted.shape == (2, 1) and predicted[0, 0] > 0.5 > predicted[1, 0]
    np.testing.assert_allclose(model.predict(np.array(TEXTS)[:, None]),
                               model.predict(tf.constant(TEXTS)), rtol=1e-6)


def test_eager_call_on_string_tensors():
    model = _model()
    called = model(tf.constant([['good fun'], ['bad']]))
    np.testing.assert_allclose(called.detach().numpy(),
                               model.predict(np.array([['good fun'], ['bad']])), rtol=1e-6)


def test_text_layer_on_values_and_in_tf_data():
    lookup = keras.layers.StringLookup(vocabulary=['a', 'b'])
    ids = lookup(tf.constant(['b', 'z', 'a']))
    assert ids.tolist() == [2, 0, 1]
    mapped = tf.data.Dataset.from_tensor_slices(['a b', 'b']).batch(2).map(
        lambda text: lookup(tf.strings.split(text).to_tensor()))
    assert next(iter(mapped)).tolist() == [[1, 2], [2, 0]]
