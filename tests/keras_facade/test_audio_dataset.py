"""`tf.keras.utils.audio_dataset_from_directory` (torchk/keras/utils/audio_dataset.py): clips
of the files' length when they agree, and clear errors for what torchk does not do (tf_keras'
values: tests/oracle/test_audio_dataset.py)."""
import wave

import numpy as np
import pytest

import torchk.keras as keras


def _write(path, frames):
    with wave.open(str(path), 'wb') as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(np.asarray(frames, dtype='<i2').tobytes())


def test_clips_of_one_length_need_no_output_sequence_length(tmp_path):
    for label, value in (('a', 1024), ('b', -2048)):
        (tmp_path / label).mkdir()
        _write(tmp_path / label / 'x.wav', [value] * 4)
    dataset = keras.utils.audio_dataset_from_directory(str(tmp_path), shuffle=False)
    (audio, labels), = list(dataset)
    assert dataset.class_names == ['a', 'b']
    np.testing.assert_array_equal(np.asarray(audio)[..., 0],
                                  [[1024 / 32768.] * 4, [-2048 / 32768.] * 4])
    np.testing.assert_array_equal(np.asarray(labels), [0, 1])


def test_refuses_clips_of_different_lengths_and_resampling(tmp_path):
    (tmp_path / 'a').mkdir()
    _write(tmp_path / 'a' / 'x.wav', [1, 2, 3])
    _write(tmp_path / 'a' / 'y.wav', [1, 2])
    with pytest.raises(ValueError, match='different lengths .2 to 3 samples.; give '
                                         'output_sequence_length'):
        keras.utils.audio_dataset_from_directory(str(tmp_path))
    with pytest.raises(ValueError, match='sampling_rate'):
        keras.utils.audio_dataset_from_directory(str(tmp_path), sampling_rate=8000)
    with pytest.raises(ValueError, match='No audio files'):
        keras.utils.audio_dataset_from_directory(str(tmp_path / 'a' / '..' / 'a'))
