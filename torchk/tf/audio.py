"""`tf.audio`: decoding WAV files (`decode_wav`) on the host.

`decode_wav` reads 16-bit PCM WAV bytes (what `tf.io.read_file` gives) into float32 samples in
[-1, 1), as TF's kernel does: each sample divided by 32768.
"""
import collections
import io
import wave

import numpy as np
import torch

from .. import config, strings
from .namespaces import module_getattr

__all__ = ['decode_wav']

DecodeWav = collections.namedtuple('DecodeWav', ['audio', 'sample_rate'])


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """Decodes a 16-bit PCM WAV file.

    # Arguments
        contents: the file's bytes (a scalar string tensor, or `bytes`).
        desired_channels: channels to return (-1: the file's); a mono file is repeated into
            more, otherwise the first channels are kept.
        desired_samples: samples to return (-1: the file's); the audio is cut, or padded with
            zeros, to this length.

    # Returns
        `DecodeWav(audio, sample_rate)`: float32 samples `(samples, channels)` and an int32 scalar.

    # Raises
        ValueError: for bytes that are no 16-bit PCM WAV file, or more channels than a
            multi-channel file has.
    """
    data = strings.as_bytes(contents, 'contents')
    if data.ndim != 0:
        raise ValueError('tf.audio.decode_wav: contents must be a scalar string; got shape %s.'
                         % (data.shape,))
    try:
        with wave.open(io.BytesIO(data.item()), 'rb') as wav:
            channels, width = wav.getnchannels(), wav.getsampwidth()
            rate, frames = wav.getframerate(), wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as error:
        raise ValueError('tf.audio.decode_wav: not a PCM WAV file (%s).' % error) from error
    if width != 2:
        raise ValueError('tf.audio.decode_wav: only 16-bit PCM samples are supported; this '
                         'file has %d-bit samples.' % (8 * width))
    samples = np.frombuffer(frames, dtype='<i2').reshape(-1, channels)
    audio = samples.astype(np.float32) / 32768.0
    if desired_channels not in (-1, None) and desired_channels != channels:
        if channels == 1:
            audio = np.repeat(audio, desired_channels, axis=1)
        elif desired_channels < channels:
            audio = audio[:, :desired_channels]
        else:
            raise ValueError('tf.audio.decode_wav: cannot make %d channels of a file with %d.'
                             % (desired_channels, channels))
    if desired_samples not in (-1, None):
        audio = audio[:desired_samples]
        audio = np.pad(audio, ((0, desired_samples - len(audio)), (0, 0)))
    return DecodeWav(torch.as_tensor(np.ascontiguousarray(audio), device=config.device()),
                     torch.tensor(rate, dtype=torch.int32, device=config.device()))


__getattr__ = module_getattr('tf.audio')
