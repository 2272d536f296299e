"""Text models in files, both ways with TensorFlow's Keras 2: tf_keras 2.21's `.keras`,
SavedModel and `.h5` files of text models load on torchk with their vocabularies, IDF weights
and boundaries and predict TensorFlow's numbers on raw strings (fixtures:
tests/fixtures/make_tf_keras_text.py); torchk's `.keras` and `.h5` files of a text model
load in TensorFlow and predict torchk's numbers (tests/fixtures/make_torchk_keras_zips.py);
vocabulary files are data, size-checked."""
import json
import os
import zipfile

import numpy as np
import pytest

import keras

from torchk.saving import ModelFileError, keras_zip_writer, vocabulary

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'fixtures')
TF_TEXT = os.path.join(FIXTURES, 'tf_keras', 'text', 'tf_keras-2.21.0')
TORCHK_ZIPS = os.path.join(FIXTURES, 'torchk_zips')


def _layer_of(model, class_name):
    return next(layer for layer in model.layers if type(layer).__name__ == class_name)


def _case(name):
    with open(os.path.join(TF_TEXT, name + '.json'), encoding='utf-8') as f:
        data = json.load(f)
    inputs = [np.array(x) for x in data['inputs']]
    return (inputs if len(inputs) > 1 else inputs[0]), np.array(data['predictions'])


@pytest.mark.parametrize('name, suffix', [
    ('two_inputs', '.keras'), ('two_inputs', ''), ('tf_idf', '.keras'), ('tf_idf', ''),
    ('given_vocabularies', '.h5'), ('discretization', '.keras')])
def test_tensorflow_file_predicts_tensorflows_numbers(name, suffix):
    x, expected = _case(name)
    model = keras.models.load_model(os.path.join(TF_TEXT, name + suffix), compile=False)
    np.testing.assert_allclose(model.predict(x), expected, atol=1e-6)


def test_discretization_boundaries_come_back_from_the_summary():
    """tf_keras 2.21 itself forgets adapted boundaries when it loads this file
    (docs/oracle_differences.md); torchk computes them again from the saved summary."""
    model = keras.models.load_model(os.path.join(TF_TEXT, 'discretization.keras'))
    layer = _layer_of(model, 'Discretization')
    assert len(layer.bin_boundaries) == 3 and layer.bin_boundaries == sorted(
        layer.bin_boundaries)


def _torchk_case():
    data = dict(np.load(os.path.join(TORCHK_ZIPS, 'text_layers.npz')))
    tf_run = dict(np.load(os.path.join(TORCHK_ZIPS, 'text_layers.tf_keras-2.21.0.npz')))
    return [data['x0'], data['x1'], data['x2']], data, tf_run


@pytest.mark.parametrize('suffix, key', [('.keras', 'pred0'), ('.h5', 'pred0_h5')])
def test_torchk_file_loaded_in_tensorflow_predicted_torchks_numbers(suffix, key):
    x, data, tf_run = _torchk_case()
    np.testing.assert_allclose(tf_run[key], data['pred0'], atol=1e-6)
    model = keras.models.load_model(os.path.join(TORCHK_ZIPS, 'text_layers' + suffix))
    np.testing.assert_allclose(model.predict(x), data['pred0'], atol=1e-6)


def test_keras_zip_holds_vocabularies_where_tensorflow_reads_them(tmp_path):
    model = keras.models.load_model(os.path.join(TORCHK_ZIPS, 'text_layers.keras'))
    path = str(tmp_path / 'again.keras')
    keras_zip_writer.save(model, path)
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        words = archive.read('assets/layers/text_vectorization/vocabulary.txt').decode()
    assert {'assets/layers/text_vectorization/vocabulary.txt',
            'assets/layers/text_vectorization/_lookup_layer/vocabulary.txt',
            'assets/layers/string_lookup/vocabulary.txt'} <= names
    assert words.split('\n') == _layer_of(model, 'TextVectorization').get_vocabulary()
    x, data, _ = _torchk_case()
    np.testing.assert_array_equal(keras.models.load_model(path).predict(x), model.predict(x))


def test_h5_configuration_carries_the_adapted_state(tmp_path):
    model = keras.models.load_model(os.path.join(TORCHK_ZIPS, 'text_layers.keras'))
    path = str(tmp_path / 'model.h5')
    model.save(path)
    import h5py
    with h5py.File(path, 'r') as f:
        config = json.loads(f.attrs['model_config'])
    layers = {entry['class_name']: entry['config'] for entry in config['config']['layers']}
    assert layers['TextVectorization']['vocabulary'][:3] == ['[UNK]', 'dog', 'the']
    assert len(layers['TextVectorization']['idf_weights']) == len(
        layers['TextVectorization']['vocabulary'])
    assert layers['StringLookup']['vocabulary'][:2] == ['[UNK]', '[UNK]']
    # get_config itself stays tf.keras': an adapted layer's vocabulary is None there
    assert _layer_of(model, 'TextVectorization').get_config()['vocabulary'] is None


def _text_zip(tmp_path, vocabulary_bytes):
    source = os.path.join(TF_TEXT, 'tf_idf.keras')
    path = str(tmp_path / 'edited.keras')
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(path, 'w') as new:
        for name in old.namelist():
            data = old.read(name)
            if name == 'assets/layers/text_vectorization/vocabulary.txt':
                data = vocabulary_bytes
            new.writestr(name, data)
    return path


def test_vocabulary_that_is_not_utf8_is_a_model_file_error(tmp_path):
    with pytest.raises(ModelFileError, match='not UTF-8'):
        keras.models.load_model(_text_zip(tmp_path, b'\xff\xfe the'))


def test_vocabulary_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(vocabulary, 'MAX_BYTES', 16)
    with pytest.raises(ModelFileError, match='bytes'):
        keras.models.load_model(_text_zip(tmp_path, b'x\n' * 20))


def test_vocabulary_file_argument(tmp_path):
    path = tmp_path / 'vocab.txt'
    path.write_text('über\ncat\ndog\n', encoding='utf-8')
    layer = keras.layers.StringLookup(vocabulary=str(path))
    assert layer.get_vocabulary() == ['[UNK]', 'über', 'cat', 'dog']
    np.testing.assert_array_equal(layer(['dog', 'über', 'x']).numpy(), [3, 1, 0])
    with pytest.raises(ValueError, match='does not exist'):
        keras.layers.StringLookup(vocabulary=str(tmp_path / 'missing.txt'))
