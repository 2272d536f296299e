"""tf.keras' data helpers: `split_dataset` and the `(x, y, sample_weight)` packing of
custom `train_step`s."""
import random

import numpy as np


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The tuple a `train_step` unpacks: `x` alone (a tuple `x` wrapped as `(x,)`),
    `(x, y)` or `(x, y, sample_weight)`."""
    if y is None:
        return (x,) if isinstance(x, tuple) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    """`(x, y, sample_weight)` of a batch (`x`, `(x,)`, `(x, y)` or `(x, y, sample_weight)`),
    None for the parts it lacks.

    # Raises
        ValueError: for a tuple or list of more than three parts.
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) > 3:
        raise ValueError('Data is expected to be in format `x`, `(x,)`, `(x, y)`, or '
                         '`(x, y, sample_weight)`, found: %s' % (data,))
    return data + (None,) * (3 - len(data))


def _split_size(size, argument, total):
    if size is None:
        return None
    if isinstance(size, bool) or type(size) not in (int, float):
        raise TypeError('Invalid `%s` Type. Expected: int or float or None, Received: '
                        'type(%s)=%s.' % (argument, argument, type(size)))
    if isinstance(size, int) and not 0 < size < total or isinstance(
            size, float) and not 0 < size < 1:
        raise ValueError('`%s` should be either a positive integer smaller than %d, or a '
                         'float within the range `[0, 1]`. Received: %s=%r'
                         % (argument, total, argument, size))
    return round(size * total) if isinstance(size, float) else size


def _samples(dataset):
    """The samples of `dataset` as a list, and the batch size to batch its parts with: that
    of a dataset batched with a fixed size (TF reads it from the static batch dimension:
    `drop_remainder=True`), else None."""
    from ...tf import data

    if isinstance(dataset, data.Dataset):
        if dataset._batch_size == 0:
            return list(dataset), None
        return list(dataset.unbatch()), dataset._batch_size
    if isinstance(dataset, np.ndarray):
        return list(dataset), None
    if isinstance(dataset, (list, tuple)):
        lengths = {len(array) for array in dataset}
        if len(lengths) != 1:
            raise ValueError('The arrays of `dataset` must have the same length; got lengths '
                             '%s.' % sorted(lengths))
        return list(zip(*dataset)), None
    raise TypeError('The `dataset` argument must be either a `tf.data.Dataset` object or a '
                    'list/tuple of arrays. Received: dataset=%r of type %s'
                    % (dataset, type(dataset)))


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Splits a dataset or arrays into two `tf.data.Dataset`s, as tf.keras does.

    # Arguments
        dataset: a `tf.data.Dataset` (a batched one is split by samples and both parts
            batched alike), a numpy array, or a list or tuple of arrays of one length.
        left_size, right_size: an int (samples) or a float in (0, 1) (a fraction, rounded);
            one may be None (the rest).
        shuffle: shuffle the samples first (Python's `random` seeded with `seed`).
        seed: the shuffling seed; None draws one from Python's `random`.

    # Returns
        `(left, right)`: the first `left_size` samples and the last `right_size`.

    # Raises
        TypeError: for another `dataset` or size type.
        ValueError: for sizes out of range, both None, or an empty part.
    """
    from ...tf import data

    if left_size is None and right_size is None:
        raise ValueError('At least one of the `left_size` or `right_size` must be specified. '
                         'Received: left_size=None and right_size=None')
    samples, batch_size = _samples(dataset)
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.Random(seed).shuffle(samples)
    total = len(samples)
    left = _split_size(left_size, 'left_size', total)
    right = _split_size(right_size, 'right_size', total)
    if isinstance(left_size, float) and isinstance(right_size, float) and \
            left_size + right_size > 1:
        raise ValueError('The sum of `left_size` and `right_size` is greater than 1. It must '
                         'be less than or equal to 1.')
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError('The sum of `left_size` and `right_size` should be at most the '
                         'dataset length %d. Received: left_size + right_size = %d'
                         % (total, left + right))
    if left == 0 or right == 0:
        raise ValueError('With `dataset` of length=%d, `left_size`=%s and `right_size`=%s, '
                         'one side of the split is empty. Adjust the sizes.'
                         % (total, left, right))
    parts = []
    for part in (samples[:left], samples[total - right:]):
        if isinstance(part[0], tuple):
            part = tuple(np.stack([np.asarray(s[i]) for s in part])
                         for i in range(len(part[0])))
        elif isinstance(part[0], dict):
            part = {key: np.stack([np.asarray(s[key]) for s in part]) for key in part[0]}
        else:
            part = np.stack([np.asarray(s) for s in part])
        split = data.Dataset.from_tensor_slices(part)
        parts.append(split.batch(batch_size) if batch_size else split)
    return tuple(parts)
