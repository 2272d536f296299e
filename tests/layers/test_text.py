"""torchk.layers.text and .categorical beyond TensorFlow's fixtures: their errors, string
Inputs in multi-backend Keras 2.3.1 models (fit, predict, evaluate, HDF5 files), the batch
fast path of TextVectorization against its per-string path, adapt on datasets."""
import numpy as np
import pytest

import keras
from keras import backend as K

from torchk.layers import text as text_layers
from torchk.tf import data

REVIEWS = np.array(['Great film, great cast!', 'dull plot and poor acting', 'GREAT acting',
                    'poor, dull, poor', 'a great great film', 'the plot was dull'])
LABELS = np.array([1, 0, 1, 0, 1, 0])


def test_unknown_output_mode_names_the_argument():
    for layer in (keras.layers.TextVectorization, keras.layers.StringLookup,
                  keras.layers.IntegerLookup, keras.layers.Hashing):
        arguments = {'num_bins': 3} if layer is keras.layers.Hashing else {}
        with pytest.raises(ValueError, match="output_mode='bag'"):
            layer(output_mode='bag', **arguments)


def test_vocabulary_with_repeated_tokens_names_them():
    with pytest.raises(ValueError, match=r"vocabulary has repeated tokens \['b'\]"):
        keras.layers.StringLookup(vocabulary=['a', 'b', 'c', 'b'])
    with pytest.raises(ValueError, match=r'vocabulary has repeated tokens \[7\]'):
        keras.layers.IntegerLookup(vocabulary=[7, 1, 7])
    with pytest.raises(ValueError, match='repeated'):
        keras.layers.TextVectorization(vocabulary=['x', 'y', 'x'])


def test_other_argument_errors():
    with pytest.raises(ValueError, match='ragged=True'):
        keras.layers.TextVectorization(ragged=True)
    with pytest.raises(ValueError, match='sparse=True'):
        keras.layers.StringLookup(sparse=True, output_mode='multi_hot')
    with pytest.raises(ValueError, match='output_sequence_length'):
        keras.layers.TextVectorization(output_mode='count', output_sequence_length=3)
    with pytest.raises(ValueError, match='mask token'):
        keras.layers.StringLookup(mask_token='', vocabulary=['a', ''])
    layer = keras.layers.StringLookup(output_mode='multi_hot')
    with pytest.raises(RuntimeError, match='vocabulary must be set'):
        layer(['a'])
    layer.set_vocabulary(['a', 'b'])
    with pytest.raises(RuntimeError, match='cannot change'):
        layer.set_vocabulary(['a', 'b', 'c'])
    with pytest.raises(ValueError, match='num_oov_indices=0'):
        keras.layers.StringLookup(vocabulary=['a'], num_oov_indices=0)(['a', 'z'])
    with pytest.raises(ValueError, match='range 0 <= values < num_tokens'):
        keras.layers.CategoryEncoding(3)([[0, 3]])
    with pytest.raises(TypeError, match='IntegerLookup: data must be integers'):
        keras.layers.IntegerLookup().adapt(['a', 'b'])


def _model():
    review = keras.Input(shape=(1,), dtype='string', name='review')
    vectorize = keras.layers.TextVectorization(max_tokens=12, output_sequence_length=5)
    vectorize.adapt(REVIEWS)
    x = keras.layers.Embedding(12, 4)(vectorize(review))
    x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.models.Model(review, keras.layers.Dense(1, activation='sigmoid')(x))
    model.compile(keras.optimizers.Adam(0.05), 'binary_crossentropy', metrics=['acc'])
    return model


def test_multi_backend_model_with_a_string_input(tmp_path):
    model = _model()
    assert K.int_shape(model.layers[1].output) == (None, 5)
    model.fit(REVIEWS, LABELS, epochs=30, batch_size=3, verbose=0)
    assert model.evaluate(REVIEWS, LABELS, verbose=0)[1] == 1.
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(REVIEWS), model.predict(REVIEWS))
    with pytest.raises(TypeError, match="input 0 \\('review'\\) must be strings"):
        model.predict(np.ones((2, 1)))


def test_a_numeric_input_refuses_text():
    inputs = keras.Input(shape=(2,))
    model = keras.models.Model(inputs, keras.layers.Dense(1)(inputs))
    with pytest.raises(TypeError, match='strings'):
        model.predict(np.array([['a', 'b']]))


@pytest.mark.parametrize('arguments', [
    {}, {'output_sequence_length': 3}, {'output_mode': 'count'},
    {'output_mode': 'tf_idf', 'max_tokens': 6}])
def test_batch_split_gives_what_a_split_per_string_gives(arguments, monkeypatch):
    layer = keras.layers.TextVectorization(**arguments)
    layer.adapt(REVIEWS)
    texts = list(REVIEWS) + ['', '  spaced   out ', 'tab\there']
    fast = layer(texts).numpy()
    monkeypatch.setattr(text_layers, '_SEPARATOR', b'great')  # the batch holds it now
    np.testing.assert_array_equal(layer(texts).numpy(), fast)


def test_text_holding_the_separator_is_split_per_string():
    layer = keras.layers.TextVectorization(vocabulary=['a\x00b', 'film'])
    np.testing.assert_array_equal(layer(['a\x00b film', '\x00']).numpy(), [[2, 3], [1, 0]])


def test_adapt_on_a_dataset_equals_adapt_on_the_array():
    on_array = keras.layers.TextVectorization()
    on_array.adapt(REVIEWS)
    on_dataset = keras.layers.TextVectorization()
    on_dataset.adapt(data.Dataset.from_tensor_slices(REVIEWS).batch(4))
    assert on_dataset.get_vocabulary() == on_array.get_vocabulary()
    assert on_array.is_adapted


def test_integer_lookup_and_hashing_record_in_a_graph():
    codes = keras.Input(shape=(3,), dtype='int64')
    lookup = keras.layers.IntegerLookup(vocabulary=[10, 20, 30], num_oov_indices=2)
    hashed = keras.layers.Hashing(num_bins=4, mask_value=0)(codes)
    model = keras.models.Model(codes, [lookup(codes), hashed])
    found, bins = model.predict(np.array([[10, 31, 30], [0, 20, 7]]))
    np.testing.assert_array_equal(found, [[2, 1, 4], [0, 3, 1]])  # OOV: x mod 2
    assert bins[1, 0] == 0 and set(bins.ravel()) <= {0, 1, 2, 3}


def test_inverted_lookup_outputs_text():
    ids = keras.Input(shape=(2,), dtype='int64')
    names = keras.layers.StringLookup(vocabulary=['cat', 'dög'], invert=True)(ids)
    assert K.dtype(names) == 'string'
    model = keras.models.Model(ids, names)
    assert model.predict(np.array([[1, 2], [0, 5]])).tolist() == [
        [b'cat', 'dög'.encode()], [b'[UNK]', b'[UNK]']]
