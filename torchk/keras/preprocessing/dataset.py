"""`image_dataset_from_directory` and `text_dataset_from_directory`: `tf.data.Dataset`s
(torchk.tf's) of the files of a directory tree, one subdirectory per class, as tf.keras 2
builds them.

The files are indexed, shuffled and split as tf.keras does, so that a `seed` with
`validation_split` and `subset` gives TensorFlow's training and validation files: class
subdirectories in sorted order (hidden ones skipped), files sorted within each, shuffled by
`numpy.random.RandomState(seed)`, the last `int(validation_split * n)` held out. Images are
read (Pillow, through Keras' `load_img`) and resized, and texts read (bytes, cut to
`max_length`), when the dataset is made, and kept in memory; the texts are string tensors.
"""
import os

import numpy as np

from keras.preprocessing.image import img_to_array, load_img

_IMAGE_EXTENSIONS = ('.bmp', '.gif', '.jpeg', '.jpg', '.png')
_TEXT_EXTENSIONS = ('.txt',)
_CHANNELS = {'grayscale': 1, 'rgb': 3, 'rgba': 4}
_LABEL_MODES = ('int', 'categorical', 'binary', None)


def _valid_files(directory, follow_links, extensions):
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda walked: walked[0]):
        for file in sorted(files):
            if file.lower().endswith(extensions):
                yield os.path.join(root, file)


def index_directory(directory, labels, extensions, class_names=None, follow_links=False):
    """The files under `directory` with one of `extensions`, their labels and the class
    names, in tf.keras' order.

    # Arguments
        directory: the root directory.
        labels: 'inferred' (the index of each file's class subdirectory), a list of labels
            in the sorted order of the files, or None.
        extensions: the file name endings kept (lowercase).
        class_names: the class subdirectories, in the order of their labels (default: sorted).
        follow_links: whether to follow symbolic links.

    # Returns
        `(paths, labels or None, class_names)`.

    # Raises
        ValueError: if `class_names` are not the subdirectories, or `labels` has another
            length than the files.
    """
    if labels != 'inferred':
        paths = list(_valid_files(directory, follow_links, extensions))
        if labels is None:
            return paths, None, ['']
        if len(labels) != len(paths):
            raise ValueError('labels has %d entries but %s holds %d files (%s).'
                             % (len(labels), directory, len(paths), ', '.join(extensions)))
        return paths, np.asarray(labels), sorted(set(np.asarray(labels).tolist()))
    found = sorted(name for name in os.listdir(directory)
                   if os.path.isdir(os.path.join(directory, name)) and not name.startswith('.'))
    if class_names:
        if set(class_names) != set(found):
            raise ValueError('class_names %s do not match the subdirectories of %s: %s.'
                             % (list(class_names), directory, found))
        found = list(class_names)
    paths, indices = [], []
    for index, name in enumerate(found):
        files = list(_valid_files(os.path.join(directory, name), follow_links, extensions))
        paths.extend(files)
        indices.extend([index] * len(files))
    return paths, np.array(indices, dtype='int32'), found


def _shuffled(paths, labels, seed):
    order = np.random.RandomState(seed).permutation(len(paths))
    return [paths[i] for i in order], labels[order] if labels is not None else None


def _check_split(validation_split, subset, shuffle, seed, both=False):
    subsets = ('training', 'validation', 'both') if both else ('training', 'validation')
    if subset not in (None,) + subsets:
        raise ValueError('subset must be one of %s; got subset=%r.' % (subsets, subset))
    if validation_split is not None and not 0 < validation_split < 1:
        raise ValueError('validation_split must be between 0 and 1; got validation_split=%r.'
                         % (validation_split,))
    if (validation_split is None) != (subset is None):
        raise ValueError("validation_split and subset (%s) go together; got "
                         "validation_split=%r and subset=%r." % (subsets, validation_split,
                                                                  subset))
    if validation_split and shuffle and seed is None:
        raise ValueError('With validation_split and shuffle=True, give a seed, so that the '
                         'training and validation subsets do not overlap.')


def _split(paths, labels, validation_split, subset):
    if not validation_split:
        return paths, labels
    held_out = int(validation_split * len(paths))
    chosen = (slice(len(paths) - held_out, None) if subset == 'validation'
              else slice(0, len(paths) - held_out))
    return paths[chosen], labels[chosen] if labels is not None else None


def _elements(samples, labels, label_mode, class_names):
    if label_mode is None or labels is None:
        return samples
    if label_mode == 'int':
        return samples, labels.astype('int32')
    if label_mode == 'binary':
        return samples, labels.astype('float32')[:, None]
    count = len(class_names) if class_names is not None else int(labels.max()) + 1
    return samples, np.eye(count, dtype='float32')[labels]


def _dataset(samples, labels, label_mode, class_names, batch_size, shuffle, seed, buffer):
    from ...tf import data
    dataset = data.Dataset.from_tensor_slices(_elements(samples, labels, label_mode,
                                                        class_names))
    if shuffle:
        dataset = dataset.shuffle(buffer_size=buffer, seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    dataset.class_names = class_names
    return dataset


def _check_label_mode(label_mode):
    if label_mode not in _LABEL_MODES:
        raise ValueError("label_mode must be 'int', 'categorical', 'binary' or None; got "
                         "label_mode=%r." % (label_mode,))


def image_dataset_from_directory(directory, labels='inferred', label_mode='int',
                                 class_names=None, color_mode='rgb', batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation='bilinear',
                                 follow_links=False, crop_to_aspect_ratio=False, **kwargs):
    """A dataset of `(images, labels)` batches from `directory/<class>/<image>`.

    # Arguments
        directory: the root directory.
        labels: 'inferred' (from the subdirectories), a list of labels in the sorted order
            of the image paths, or None (images only).
        label_mode: 'int', 'categorical' (one-hot), 'binary' (float, shape (n, 1)) or None.
        color_mode: 'grayscale', 'rgb' or 'rgba'.
        batch_size: images per batch (None: single images).
        image_size: (height, width) the images are resized to.
        shuffle, seed: shuffle the files (and each epoch's order).
        validation_split, subset: the fraction held out, and 'training' or 'validation'.
        interpolation: Pillow's resampling name ('bilinear', 'nearest', 'bicubic', ...).

    # Returns
        A `torchk.tf.data.Dataset` with a `class_names` attribute (and `file_paths`).

    # Raises
        ValueError: for a missing directory, no images, or inconsistent arguments.
    """
    if not os.path.isdir(directory):
        raise ValueError('image_dataset_from_directory: %r is not a directory.' % (directory,))
    if color_mode not in _CHANNELS:
        raise ValueError("color_mode must be 'grayscale', 'rgb' or 'rgba'; got %r."
                         % (color_mode,))
    _check_label_mode(label_mode)
    _check_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, label_values, class_names = index_directory(directory, labels, _IMAGE_EXTENSIONS,
                                                       class_names, follow_links)
    if not paths:
        raise ValueError('No images (%s) found in %s.' % (', '.join(_IMAGE_EXTENSIONS),
                                                          directory))
    if label_mode == 'binary' and class_names is not None and len(class_names) != 2:
        raise ValueError("label_mode='binary' needs 2 classes; %s has %d: %s."
                         % (directory, len(class_names), class_names))
    if shuffle:
        paths, label_values = _shuffled(paths, label_values, seed)
    paths, label_values = _split(paths, label_values, validation_split, subset)
    images = np.stack([img_to_array(load_img(
        path, color_mode=color_mode, target_size=tuple(image_size),
        interpolation=interpolation)) for path in paths]).astype('float32')
    dataset = _dataset(images, label_values, label_mode, class_names, batch_size, shuffle,
                       seed, max(len(paths), 1))
    dataset.file_paths = paths
    return dataset


def text_dataset_from_directory(directory, labels='inferred', label_mode='int',
                                class_names=None, batch_size=32, max_length=None,
                                shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False):
    """A dataset of `(texts, labels)` batches from `directory/<class>/<file>.txt`: texts are
    string tensors of the files' bytes.

    # Arguments
        directory: the root directory.
        labels: 'inferred' (from the subdirectories), a list of labels in the sorted order
            of the files, or None (texts only).
        label_mode: 'int', 'categorical' (one-hot), 'binary' (float, shape (n, 1)) or None.
        class_names: the class subdirectories in the order of their labels.
        batch_size: texts per batch (None: single texts).
        max_length: cut each text to this many bytes.
        shuffle, seed: shuffle the files (and, as tf.keras, each epoch's order within a
            buffer of 8 batches).
        validation_split, subset: the fraction held out, and 'training', 'validation' or
            'both' (a list of the two datasets).
        follow_links: whether to follow symbolic links.

    # Returns
        A `torchk.tf.data.Dataset` with a `class_names` attribute, or a list of two.

    # Raises
        ValueError: for a missing directory, no text files, or inconsistent arguments.
    """
    if not os.path.isdir(directory):
        raise ValueError('text_dataset_from_directory: %r is not a directory.' % (directory,))
    if labels not in ('inferred', None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError("labels must be 'inferred', None or a list of integer labels; got "
                             "labels=%r." % (labels,))
        if class_names:
            raise ValueError("class_names are only used with labels='inferred'; got "
                             "labels=%r, class_names=%r." % (labels, class_names))
    _check_label_mode(label_mode)
    if labels is None or label_mode is None:
        labels = label_mode = None
    _check_split(validation_split, subset, shuffle, seed, both=True)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, label_values, class_names = index_directory(directory, labels, _TEXT_EXTENSIONS,
                                                       class_names, follow_links)
    if label_mode == 'binary' and len(class_names) != 2:
        raise ValueError("label_mode='binary' needs 2 classes; %s has %d: %s."
                         % (directory, len(class_names), class_names))
    if shuffle:
        paths, label_values = _shuffled(paths, label_values, seed)
    subsets = ['training', 'validation'] if subset == 'both' else [subset]
    datasets = []
    for part in subsets:
        part_paths, part_labels = _split(paths, label_values, validation_split, part)
        if not part_paths:
            raise ValueError('No %stext files (.txt) found in %s.'
                             % (part + ' ' if part else '', directory))
        texts = np.array([_read_text(path, max_length) for path in part_paths], dtype=object)
        buffer = batch_size * 8 if batch_size is not None else 1024
        datasets.append(_dataset(texts, part_labels, label_mode, class_names, batch_size,
                                 shuffle and not (subset == 'both' and part == 'validation'),
                                 seed, buffer))
        datasets[-1].file_paths = part_paths
    return datasets if subset == 'both' else datasets[0]


def _read_text(path, max_length):
    with open(path, 'rb') as f:
        return f.read() if max_length is None else f.read(max_length)
