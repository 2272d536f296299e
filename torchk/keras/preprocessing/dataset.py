"""`image_dataset_from_directory`: a `tf.data.Dataset` (torchk.tf's) of the images in a
directory tree, one subdirectory per class, as tf.keras 2 builds it.

The images are read (Pillow, through Keras' `load_img`) and resized when the dataset is made,
and kept in memory.
"""
import os

import numpy as np

from keras.preprocessing.image import img_to_array, load_img

_EXTENSIONS = ('.bmp', '.gif', '.jpeg', '.jpg', '.png')
_CHANNELS = {'grayscale': 1, 'rgb': 3, 'rgba': 4}


def _files_and_labels(directory, labels, class_names, follow_links):
    if labels == 'inferred':
        found = sorted(name for name in os.listdir(directory)
                       if os.path.isdir(os.path.join(directory, name)))
        if class_names is not None:
            if sorted(class_names) != found and set(class_names) != set(found):
                raise ValueError('class_names %s do not match the subdirectories of %s: %s.'
                                 % (class_names, directory, found))
            found = list(class_names)
        class_names = found
        paths, indices = [], []
        for index, name in enumerate(class_names):
            for root, _, files in sorted(os.walk(os.path.join(directory, name),
                                                 followlinks=follow_links)):
                for file in sorted(files):
                    if file.lower().endswith(_EXTENSIONS):
                        paths.append(os.path.join(root, file))
                        indices.append(index)
        return paths, np.array(indices, dtype='int32'), class_names
    paths = sorted(os.path.join(root, file)
                   for root, _, files in os.walk(directory, followlinks=follow_links)
                   for file in files if file.lower().endswith(_EXTENSIONS))
    if labels is None:
        return paths, None, None
    labels = np.asarray(labels)
    if len(labels) != len(paths):
        raise ValueError('labels has %d entries but %s holds %d images.'
                         % (len(labels), directory, len(paths)))
    return paths, labels, class_names


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
    from ...tf import data

    if not os.path.isdir(directory):
        raise ValueError('image_dataset_from_directory: %r is not a directory.' % (directory,))
    if color_mode not in _CHANNELS:
        raise ValueError("color_mode must be 'grayscale', 'rgb' or 'rgba'; got %r."
                         % (color_mode,))
    if label_mode not in ('int', 'categorical', 'binary', None):
        raise ValueError("label_mode must be 'int', 'categorical', 'binary' or None; got %r."
                         % (label_mode,))
    if (validation_split is None) != (subset is None) or subset not in (
            None, 'training', 'validation'):
        raise ValueError("validation_split and subset ('training' or 'validation') go "
                         "together; got %r and %r." % (validation_split, subset))
    paths, label_values, class_names = _files_and_labels(directory, labels, class_names,
                                                         follow_links)
    if not paths:
        raise ValueError('No images (%s) found in %s.' % (', '.join(_EXTENSIONS), directory))
    if label_mode == 'binary' and class_names is not None and len(class_names) != 2:
        raise ValueError("label_mode='binary' needs 2 classes; %s has %d: %s."
                         % (directory, len(class_names), class_names))
    if seed is None:
        seed = np.random.randint(1e6)
    if shuffle:
        order = np.random.RandomState(seed).permutation(len(paths))
        paths = [paths[i] for i in order]
        label_values = label_values[order] if label_values is not None else None
    if validation_split:
        held_out = int(validation_split * len(paths))
        chosen = slice(len(paths) - held_out, None) if subset == 'validation' else slice(
            0, len(paths) - held_out)
        paths = paths[chosen]
        label_values = label_values[chosen] if label_values is not None else None
    images = np.stack([img_to_array(load_img(
        path, color_mode=color_mode, target_size=tuple(image_size),
        interpolation=interpolation)) for path in paths]).astype('float32')
    if label_mode is None or label_values is None:
        elements = images
    elif label_mode == 'int':
        elements = (images, label_values.astype('int32'))
    elif label_mode == 'binary':
        elements = (images, label_values.astype('float32')[:, None])
    else:
        count = len(class_names) if class_names is not None else int(label_values.max()) + 1
        elements = (images, np.eye(count, dtype='float32')[label_values])
    dataset = data.Dataset.from_tensor_slices(elements)
    if shuffle:
        dataset = dataset.shuffle(buffer_size=max(len(paths), 1), seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    dataset.class_names = class_names
    dataset.file_paths = paths
    return dataset
