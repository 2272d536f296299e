"""text_dataset_from_directory gives TensorFlow's files, labels and split (fixtures made by
tests/fixtures/make_tf_keras_text.py on tests/text_cases.py's directory), as string tensors
that tf.data maps, batches and feeds to a text layer."""
import json
import os

import numpy as np
import pytest

import text_cases
import torchk.keras as keras
import torchk.tf as tf

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures',
                       'tf_keras', 'text', 'tf_keras-2.21.0', 'directories.json')


@pytest.fixture(scope='module')
def text_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp('texts')
    text_cases.write_text_tree(str(root))
    return str(root)


def _plain(value):
    if value is None:
        return None
    value = value.numpy()
    if isinstance(value, bytes):
        return value.decode('utf-8')
    return np.asarray(value).tolist()


@pytest.mark.parametrize('name', sorted(text_cases.DIRECTORY_CASES))
def test_files_labels_and_split_are_tensorflows(text_tree, name):
    with open(FIXTURE, encoding='utf-8') as f:
        expected = json.load(f)[name]
    arguments = text_cases.DIRECTORY_CASES[name]
    dataset = keras.utils.text_dataset_from_directory(text_tree, batch_size=None, **arguments)
    elements = [(_plain(e[0]), _plain(e[1])) if isinstance(e, tuple) else (_plain(e), None)
                for e in dataset]
    if arguments.get('shuffle', True):
        elements.sort()
    assert [list(e) for e in elements] == expected['elements']
    assert dataset.class_names == expected['class_names']


def test_batches_map_and_vectorize(text_tree):
    training, validation = keras.preprocessing.text_dataset_from_directory(
        text_tree, batch_size=4, validation_split=0.3, subset='both', seed=1337)
    texts, labels = next(iter(training))
    assert texts.dtype == tf.string and texts.shape == (4,) and labels.shape == (4,)
    vectorize = keras.layers.TextVectorization(output_sequence_length=3)
    vectorize.adapt(training.map(lambda text, label: text))
    batches = list(validation.map(lambda text, label: (vectorize(tf.expand_dims(text, -1)),
                                                       label)))
    assert [tuple(x.shape) for x, _ in batches] == [(4, 3), (1, 3)]
    # Every file holds '—' and 'é' (14 training files), then each its own path's letters;
    # ties go to the larger UTF-8 bytes.
    assert vectorize.get_vocabulary()[:6] == ['', '[UNK]', '—', 'é', 'posrtxt', 'posqtxt']


def test_errors_name_the_argument(text_tree):
    with pytest.raises(ValueError, match='seed'):
        keras.utils.text_dataset_from_directory(text_tree, validation_split=0.2,
                                                subset='training')
    with pytest.raises(ValueError, match='label_mode'):
        keras.utils.text_dataset_from_directory(text_tree, label_mode='sparse')
    with pytest.raises(ValueError, match='class_names'):
        keras.utils.text_dataset_from_directory(text_tree, class_names=['a', 'b'])
