"""`tf.io` (files as string tensors, gfile) and `tf.audio.decode_wav` (torchk/tf/io.py,
torchk/tf/audio.py), against the WAV bytes Python's `wave` writes and numpy's arithmetic."""
import io
import wave

import numpy as np
import pytest

import torchk.tf as tf
from torchk.strings import StringTensor


def wav_bytes(samples, rate=8000):
    """A 16-bit PCM WAV file of `samples` (int16, `(frames, channels)`)."""
    buffer = io.BytesIO()
    with wave.open(buffer, 'wb') as wav:
        wav.setnchannels(samples.shape[1])
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.astype('<i2').tobytes())
    return buffer.getvalue()


STEREO = np.array([[0, 1], [16384, 2], [-32768, 3], [32767, 4]], dtype='int16')


def test_read_file_gives_the_bytes_as_a_scalar_string_tensor(tmp_path):
    path = tmp_path / 'a.bin'
    path.write_bytes(b'\x00ab\xff')
    contents = tf.io.read_file(str(path))
    assert isinstance(contents, StringTensor) and contents.shape == ()
    assert contents.numpy() == b'\x00ab\xff'
    assert tf.io.read_file(tf.constant(str(path))).numpy() == b'\x00ab\xff'
    with pytest.raises(tf.errors.NotFoundError, match='missing'):
        tf.io.read_file(str(tmp_path / 'missing'))


def test_write_file_and_gfile(tmp_path):
    tf.io.gfile.makedirs(str(tmp_path / 'd' / 'e'))
    tf.io.write_file(str(tmp_path / 'd' / 'x.txt'), tf.constant('hello'))
    assert (tmp_path / 'd' / 'x.txt').read_bytes() == b'hello'
    assert sorted(tf.io.gfile.listdir(str(tmp_path / 'd'))) == ['e', 'x.txt']
    assert tf.io.gfile.glob(str(tmp_path / 'd' / '*.txt')) == [str(tmp_path / 'd' / 'x.txt')]
    assert tf.io.gfile.exists(str(tmp_path / 'd')) and tf.io.gfile.isdir(str(tmp_path / 'd'))
    with pytest.raises(AttributeError, match='tf.io.parse_example: torchk does not'):
        tf.io.parse_example


def test_decode_wav_scales_16_bit_samples():
    audio, rate = tf.audio.decode_wav(wav_bytes(STEREO))
    assert audio.dtype == tf.float32 and int(rate) == 8000 and rate.dtype == tf.int32
    np.testing.assert_array_equal(audio.numpy(), STEREO / np.float32(32768))


def test_decode_wav_channels_and_samples():
    # TF keeps the first channels, repeats a mono file's, and cuts or zero-pads the samples.
    first, _ = tf.audio.decode_wav(wav_bytes(STEREO), desired_channels=1, desired_samples=6)
    np.testing.assert_array_equal(
        first.numpy(), np.pad(STEREO[:, :1] / np.float32(32768), ((0, 2), (0, 0))))
    mono = wav_bytes(STEREO[:, :1])
    both = tf.audio.decode_wav(mono, desired_channels=2, desired_samples=2).audio
    np.testing.assert_array_equal(both.numpy(), np.repeat(STEREO[:2, :1], 2, 1) / 32768.)
    with pytest.raises(ValueError, match='3 channels of a file with 2'):
        tf.audio.decode_wav(wav_bytes(STEREO), desired_channels=3)
    with pytest.raises(ValueError, match='not a PCM WAV'):
        tf.audio.decode_wav(b'not a wav file')
