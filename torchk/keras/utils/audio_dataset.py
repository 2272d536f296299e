"""`audio_dataset_from_directory`: a `tf.data.Dataset` of the WAV files of a directory tree,
one subdirectory per class, as tf.keras 2 builds it.

Files are indexed, shuffled and split as `image_dataset_from_directory` and
`text_dataset_from_directory` do (`torchk.keras.preprocessing.dataset`), then decoded with
`tf.audio.decode_wav` (16-bit PCM, float32 samples in [-1, 1)) when the dataset is made, and
kept in memory.
"""
import os

import numpy as np

from ..preprocessing import dataset as _directory

_AUDIO_EXTENSIONS = ('.wav',)


def _read_audio(path, output_sequence_length):
    from ...tf import audio, io
    samples = -1 if output_sequence_length is None else output_sequence_length
    return audio.decode_wav(io.read_file(path), desired_samples=samples).audio.cpu().numpy()


def _stacked(waves, output_sequence_length, directory):
    lengths = {len(wave) for wave in waves}
    if output_sequence_length is None and len(lengths) > 1:
        raise ValueError('audio_dataset_from_directory: the files of %s have different lengths '
                         '(%d to %d samples); give output_sequence_length (padding each batch '
                         'to its longest clip, and ragged=True, are not supported by torchk).'
                         % (directory, min(lengths), max(lengths)))
    return np.stack(waves).astype('float32')


def audio_dataset_from_directory(directory, labels='inferred', label_mode='int',
                                 class_names=None, batch_size=32, sampling_rate=None,
                                 output_sequence_length=None, ragged=False, shuffle=True,
                                 seed=None, validation_split=None, subset=None,
                                 follow_links=False):
    """A dataset of `(audio, labels)` batches from `directory/<class>/<file>.wav`: audio of
    shape `(batch, samples, channels)`, float32.

    # Arguments
        directory: the root directory.
        labels: 'inferred' (from the subdirectories), a list of labels in the sorted order
            of the files, or None (audio only).
        label_mode: 'int', 'categorical' (one-hot), 'binary' (float, shape (n, 1)) or None.
        class_names: the class subdirectories in the order of their labels.
        batch_size: clips per batch (None: single clips).
        sampling_rate: must be None (resampling is not supported).
        output_sequence_length: samples per clip: longer clips are cut, shorter ones padded
            with zeros. None: the files' length, which must then be the same for all.
        ragged: must be False.
        shuffle, seed: shuffle the files (and each epoch's order within 8 batches).
        validation_split, subset: the fraction held out, and 'training', 'validation' or
            'both' (a list of the two datasets).
        follow_links: whether to follow symbolic links.

    # Returns
        A `torchk.tf.data.Dataset` with `class_names` and `file_paths` attributes, or a list
        of two.

    # Raises
        ValueError: for a missing directory, no WAV files, clips of different lengths without
            `output_sequence_length`, `sampling_rate` or `ragged`, or inconsistent arguments.
    """
    if not os.path.isdir(directory):
        raise ValueError('audio_dataset_from_directory: %r is not a directory.' % (directory,))
    if sampling_rate is not None or ragged:
        raise ValueError('audio_dataset_from_directory: sampling_rate and ragged=True are not '
                         'supported by torchk; got sampling_rate=%r, ragged=%r.'
                         % (sampling_rate, ragged))
    _directory._check_label_mode(label_mode)
    if labels is None or label_mode is None:
        labels = label_mode = None
    _directory._check_split(validation_split, subset, shuffle, seed, both=True)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, label_values, class_names = _directory.index_directory(
        directory, labels, _AUDIO_EXTENSIONS, class_names, follow_links)
    if shuffle:
        paths, label_values = _directory._shuffled(paths, label_values, seed)
    subsets = ['training', 'validation'] if subset == 'both' else [subset]
    datasets = []
    for part in subsets:
        part_paths, part_labels = _directory._split(paths, label_values, validation_split, part)
        if not part_paths:
            raise ValueError('No %saudio files (.wav) found in %s.'
                             % (part + ' ' if part else '', directory))
        waves = _stacked([_read_audio(path, output_sequence_length) for path in part_paths],
                         output_sequence_length, directory)
        buffer = batch_size * 8 if batch_size is not None else 1024
        datasets.append(_directory._dataset(
            waves, part_labels, label_mode, class_names, batch_size,
            shuffle and not (subset == 'both' and part == 'validation'), seed, buffer))
        datasets[-1].file_paths = part_paths
    return datasets if subset == 'both' else datasets[0]
