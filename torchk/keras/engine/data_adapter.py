"""The data of `fit`, `evaluate` and `predict` as batches of tensors: arrays (numpy or torch,
nested in lists, tuples and dicts), `tf.data.Dataset`s, `keras.utils.Sequence`s and generators;
`unpack_x_y_sample_weight` / `pack_x_y_sample_weight` as tf.keras defines them.

Text stays on the host (docs/ARCHITECTURE.md, "Text"): a string tensor, a numpy array of
strings or a list of `str` is one array of text (`host_text` makes it numpy `bytes`), which
batches carry as it is, for the model's string inputs. pandas' `Series` and `DataFrame`s are
arrays, as tf.keras reads them (`array_data`).
"""
import numpy as np
import torch

import keras
from keras import backend as K

from ... import config
from ... import strings
from ... import tf_dtypes
from ...tf import distribute
from .. import eager


def _is_text(value):
    """Whether `value` is one array of text: a string tensor, a numpy array of strings, or
    a list of `str`/`bytes` (or of such lists)."""
    if isinstance(value, (strings.StringTensor, np.ndarray)):
        return strings.is_text(value)
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, (str, bytes)) or isinstance(v, list) and _is_text(v) for v in value)


def host_text(x):
    """`x` (nested in lists, tuples, dicts) with each array of text as a numpy array of
    `bytes`: the form fed to string inputs."""
    if _is_text(x):
        return strings.as_bytes(x)
    if isinstance(x, (list, tuple)):
        return type(x)(host_text(v) for v in x)
    if isinstance(x, dict):
        return {k: host_text(v) for k, v in x.items()}
    return x


def _whole(count, name):
    """A step count given as a whole float (`np.ceil(n / batch_size)`, TF's imbalanced data
    tutorial) as an int, as tf.keras takes it; None stays None."""
    if count is None:
        return None
    if not isinstance(count, (int, np.integer)) and float(count) != int(count):
        raise TypeError('%s must be a whole number of steps; got %r.' % (name, count))
    return int(count)


def array_data(data):
    """`fit`/`evaluate`/`predict` data (nested in lists, tuples, dicts) as tf.keras reads it
    (its `_process_tensorlike`): a pandas `Series` as a column, `(n, 1)` (also each column of
    `dict(data_frame)`), a `DataFrame` as its values; text as `host_text` makes it."""
    if tf_dtypes.is_pandas(data):
        data = tf_dtypes.pandas_as_array(data)
    elif isinstance(data, (list, tuple)) and not _is_text(data):
        data = type(data)(array_data(v) for v in data)
    elif isinstance(data, dict):
        data = {k: array_data(v) for k, v in data.items()}
    return host_text(data)


def _to_tensor(value):
    """Arrays (nested in lists, tuples, dicts) as tensors on torchk's device; text stays
    host text."""
    if value is None:
        return value
    if _is_text(value):
        return strings.as_bytes(value)
    if isinstance(value, torch.Tensor):
        return value.to(config.device())
    if isinstance(value, (list, tuple)):
        return type(value)(_to_tensor(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_tensor(v) for k, v in value.items()}
    value = np.asarray(value)
    if value.dtype == np.float64:
        value = value.astype(K.floatx())
    return torch.from_numpy(eager.contiguous(value)).to(config.device())


def unpack_x_y_sample_weight(data):
    """`(x, y, sample_weight)` of a batch: a tuple `(x,)`, `(x, y)`, `(x, y, w)`, or `x`."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError('A batch must be (x,), (x, y) or (x, y, sample_weight); got a tuple of '
                     '%d elements.' % len(data))


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The batch tuple that `unpack_x_y_sample_weight` reads."""
    if y is None:
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def _is_array_data(x):
    if isinstance(x, (np.ndarray, torch.Tensor, strings.StringTensor)):
        return True
    if isinstance(x, (list, tuple)):
        return all(_is_array_data(v) for v in x)
    if isinstance(x, dict):
        return all(_is_array_data(v) for v in x.values())
    return False


def _first_array(x):
    if isinstance(x, dict):
        return _first_array(next(iter(x.values())))
    if isinstance(x, (list, tuple)):
        return _first_array(x[0])
    return x


def _take(x, index):
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _take(v, index) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_take(v, index) for v in x)
    return x[index]


class _Batches(object):
    """The batches of one epoch of `fit`/`evaluate`/`predict` data, as tuples of tensors.

    # Arguments
        x, y, sample_weight: arrays (numpy or torch; lists and dicts of them), or `x` a
            `tf.data.Dataset`, a `keras.utils.Sequence`, a generator or any iterable of
            batches (then `y` and `sample_weight` must be None).
        batch_size: for arrays (default 32).
        shuffle: shuffle arrays per epoch.
        steps: batches per epoch (default: all, or one pass of an iterable).
        strategy: the `tf.distribute` strategy of `fit`/`evaluate`: with several replicas,
            each batch is this replica's share of a global batch (`Strategy.split_batch`; a
            `DistributedDataset`'s batches already are), and arrays are shuffled in the
            order of the first replica (`Strategy.shuffle`).
    """

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                 steps=None, strategy=None):
        self.arrays = _is_array_data(x) or isinstance(x, (list, tuple))
        self.steps = _whole(steps, 'steps')
        self.strategy = (strategy if strategy is not None and strategy.num_replicas_in_sync > 1
                         else None)
        self.split = (self.strategy is not None
                      and not isinstance(x, distribute.DistributedDataset))
        if self.arrays:
            self.data = (x, y, sample_weight)
            self.batch_size = batch_size or 32
            self.size = len(_first_array(x))
            self.shuffle = shuffle
            # Shuffled in place each epoch, as Keras 2.3.1's `fit` shuffles: a seeded script
            # sees the same batches with Keras' compiled step and with tf.keras' loop.
            self.order = np.arange(self.size)
            if self.steps is None:
                self.steps = -(-self.size // self.batch_size)
        else:
            if y is not None or sample_weight is not None:
                raise ValueError('y and sample_weight must be None when x is a dataset, a '
                                 'generator or a Sequence (%s): its batches hold the targets.'
                                 % type(x).__name__)
            self.data = x
            if self.steps is None and hasattr(x, '__len__'):
                try:
                    self.steps = len(x)
                except TypeError:
                    self.steps = None
            self._iterator = None

    def epoch(self):
        """Yields the batches of one epoch."""
        for batch in self._global_batches():
            yield _to_tensor(self.strategy.split_batch(batch) if self.split else batch)

    def _global_batches(self):
        if self.arrays:
            x, y, w = self.data
            if self.shuffle:
                (self.strategy or np.random).shuffle(self.order)
            for step in range(self.steps):
                start = step * self.batch_size
                if start >= self.size:
                    return
                if not self.shuffle:  # in order: each batch a view, no copy
                    index = slice(start, min(start + self.batch_size, self.size))
                else:
                    index = self.order[start:start + self.batch_size]
                    if isinstance(_first_array(x), torch.Tensor):
                        index = torch.from_numpy(index)
                yield pack_x_y_sample_weight(_take(x, index), _take(y, index),
                                             _take(w, index))
            return
        if isinstance(self.data, keras.utils.Sequence):
            for step in range(self.steps or len(self.data)):
                yield self._as_tuple(self.data[step])
            self.data.on_epoch_end()
            return
        if self._iterator is None or self.steps is None:
            self._iterator = iter(self.data)
        for step in range(self.steps) if self.steps is not None else iter(int, 1):
            try:
                batch = next(self._iterator)
            except StopIteration:
                self._iterator = None
                return
            yield self._as_tuple(batch)
        if self._iterator is not None and self._iterator is not self.data and not hasattr(
                self.data, '__next__'):
            self._iterator = None

    @staticmethod
    def _as_tuple(batch):
        return tuple(batch) if isinstance(batch, (tuple, list)) else (batch,)


def _numpy(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, strings.StringTensor):
        return strings.as_bytes(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return value


def _numpy_batches(batches):
    """An endless generator of a `_Batches`' batches as numpy, for Keras' `fit_generator`."""
    while True:
        produced = False
        for batch in batches.epoch():
            produced = True
            yield _numpy(batch if len(batch) > 1 else batch[0])
        if not produced:
            return


def _numpy_batches_once(batches):
    """One epoch of a `_Batches`' batches as numpy."""
    for batch in batches.epoch():
        yield _numpy(batch)


def _count_steps(batches):
    if batches.steps is None:
        batches.steps = sum(1 for _ in batches.epoch())
        if not batches.steps:
            raise ValueError('The dataset given to fit/evaluate/predict yields no batch.')
    return batches.steps


def _class_sample_weights(y, class_weight, sample_weight):
    """Per-sample weights from `class_weight` (`{class index: weight}`), times
    `sample_weight`; the class of a one-hot row is its argmax."""
    labels = np.asarray(y.detach().cpu() if isinstance(y, torch.Tensor) else y)
    labels = labels.argmax(-1) if labels.ndim > 1 and labels.shape[-1] > 1 else labels.reshape(
        len(labels))
    weights = np.array([class_weight.get(int(label), 1.) for label in labels], dtype='float32')
    if sample_weight is not None:
        weights = weights * np.asarray(sample_weight, dtype='float32')
    return weights


def _validation_tuple(validation_data):
    if isinstance(validation_data, (list, tuple)) and _is_array_data(validation_data[0]):
        return tuple(validation_data) + (None,) * (3 - len(validation_data))
    return (validation_data, None, None)
