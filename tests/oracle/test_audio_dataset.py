"""`tf.keras.utils.audio_dataset_from_directory` (torchk/keras/utils/audio_dataset.py) against
tf_keras' on the same directory of WAV files: class names, files of each subset, labels and
samples (cut or zero-padded to `output_sequence_length`)."""
import wave

import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tf_keras  # noqa: E402

import torchk.keras  # noqa: E402

RNG = np.random.RandomState(3)


@pytest.fixture(scope='module')
def audio_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp('audio')
    for label in ('no', 'yes', 'up'):
        (root / label).mkdir()
        for index in range(5):
            frames = RNG.randint(-32768, 32768, (RNG.randint(5, 12), 1)).astype('<i2')
            with wave.open(str(root / label / ('%d.wav' % index)), 'wb') as wav:
                wav.setnchannels(1)
                wav.setsampwidth(2)
                wav.setframerate(16000)
                wav.writeframes(frames.tobytes())
    (root / 'README.md').write_text('not audio')
    return str(root)


def _elements(dataset):
    audio, labels = zip(*[(np.asarray(a), np.asarray(b)) for a, b in dataset])
    return np.concatenate(audio), np.concatenate(labels)


@pytest.mark.parametrize('label_mode', ['int', 'categorical'])
def test_subsets_files_labels_and_samples_are_tf_keras(audio_tree, label_mode):
    arguments = dict(batch_size=4, validation_split=0.4, seed=5, output_sequence_length=8,
                     subset='both', label_mode=label_mode)
    got = torchk.keras.utils.audio_dataset_from_directory(audio_tree, **arguments)
    expected = tf_keras.utils.audio_dataset_from_directory(audio_tree, **arguments)
    assert got[0].class_names == expected[0].class_names
    # The validation batches keep their order; tf_keras shuffles the training batches each
    # epoch, so their clips are compared as sets of (samples, label) rows.
    audio, labels = _elements(got[1])
    expected_audio, expected_labels = _elements(expected[1])
    assert audio.shape == expected_audio.shape == (6, 8, 1)
    np.testing.assert_array_equal(audio, expected_audio)
    np.testing.assert_array_equal(labels, expected_labels)
    assert labels.dtype == expected_labels.dtype
    rows = [_rows(*_elements(dataset)) for dataset in (got[0], expected[0])]
    assert rows[0] == rows[1] and len(rows[0]) == 9


def _rows(audio, labels):
    return sorted(tuple(a.ravel().tolist()) + tuple(np.ravel(b).tolist())
                  for a, b in zip(audio, labels))
