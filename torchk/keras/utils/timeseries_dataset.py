"""`timeseries_dataset_from_array`: sliding windows over an array as a `tf.data.Dataset`."""
import numpy as np
import torch


def _positive_int(value, argument):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError('`%s` must be an integer above 0. Received: %s=%r'
                         % (argument, argument, value))
    return int(value)


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """A dataset of windows of `data`, as tf.keras makes it.

    Window `i` holds `sequence_length` rows of `data`, `sampling_rate` apart, the first at
    `start_index + p_i` where the window starts `p_i` run `0, sequence_stride, ...` over
    the windows that fit in `data[start_index:end_index]` (and, with targets, `p_i <
    len(targets)`); its target is `targets[start_index + p_i]`.

    # Arguments
        data: an array or tensor whose first axis is time.
        targets: an array of targets (one per row of `data`), or None.
        sequence_length: rows per window.
        sequence_stride: step between the starts of consecutive windows.
        sampling_rate: step between the rows of a window.
        batch_size: windows per batch; None for single windows.
        shuffle: shuffles the windows (their starts with a numpy generator seeded by `seed`,
            then, batched, a buffer of `8 * batch_size` windows, as TF does).
        seed: the shuffling seed.
        start_index, end_index: the part of `data` (and `targets`) windows are taken from.

    # Returns
        A `torchk.tf.data.Dataset` of windows `(batch, sequence_length) + data.shape[1:]`,
        or of `(windows, targets)` pairs.

    # Raises
        ValueError: for a non-positive length, stride, rate or batch size, or indices out
            of `data`.
    """
    from ...tf import data as tf_data
    from ...tf.tensors import convert_to_tensor

    sequence_length = _positive_int(sequence_length, 'sequence_length')
    sequence_stride = _positive_int(sequence_stride, 'sequence_stride')
    sampling_rate = _positive_int(sampling_rate, 'sampling_rate')
    if batch_size is not None:
        batch_size = _positive_int(batch_size, 'batch_size')
    length = len(data)
    if start_index is None:
        start_index = 0
    if end_index is None:
        end_index = length
    if not 0 <= start_index < length:
        raise ValueError('`start_index` must be 0 or greater and smaller than `data` length '
                         '(%d). Received: start_index=%r' % (length, start_index))
    if not start_index < end_index <= length:
        raise ValueError('`end_index` must be greater than `start_index` (%d) and at most '
                         '`data` length (%d). Received: end_index=%r'
                         % (start_index, length, end_index))
    if targets is not None and len(targets) != length:
        raise ValueError('Expected data and targets to have the same number of time steps '
                         '(axis 0) but got data.shape=%s, targets.shape=%s'
                         % (np.shape(data), np.shape(targets)))
    count = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        count = min(count, len(targets))
    starts = np.arange(0, max(count, 0), sequence_stride, dtype='int64')
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    values = convert_to_tensor(np.asarray(data) if not torch.is_tensor(data) else data)
    offsets = torch.arange(sequence_length, device=values.device) * sampling_rate
    labels = None
    if targets is not None:
        labels = convert_to_tensor(np.asarray(targets) if not torch.is_tensor(targets)
                                   else targets)

    def windows(position):
        rows = start_index + position
        window = values[rows.unsqueeze(-1) + offsets]
        return window if labels is None else (window, labels[rows])

    dataset = tf_data.Dataset.from_tensor_slices(starts)
    if batch_size is not None:
        if shuffle:
            dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
        dataset = dataset.batch(batch_size)
    return dataset.map(windows)
