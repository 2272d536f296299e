"""Each process' share of the training data, with the same number of steps on every rank.

A rank with one batch more than the others would wait forever in the all-reduce of that
extra step, so shards are padded by wrapping around to the start of the data (as torch's
`DistributedSampler` does): a few samples are seen twice per epoch instead.
"""
import math

import keras
import numpy as np
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

from ..interop import DataLoaderSequence
from . import runtime


def _my_indices(count, order=None):
    """Rank `rank()`'s positions of `order` (default `range(count)`), padded by wrapping."""
    world, rank = runtime.size(), runtime.rank()
    order = np.arange(count) if order is None else order
    padded = order[np.arange(math.ceil(count / world) * world) % count]
    return padded[rank::world]


def _shard_arrays(data):
    if isinstance(data, dict):
        return {k: _shard_arrays(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_shard_arrays(v) for v in data)
    data = np.asarray(data)
    return data[_my_indices(len(data))]


class ShardedSequence(keras.utils.Sequence):
    """This rank's batches of a `keras.utils.Sequence`: `ceil(len(sequence) / size())`
    of them, from a batch order shuffled anew each epoch with the same seed on every rank.

    # Arguments
        sequence: the full `Sequence`.
        shuffle: shuffle the batch order each epoch (seeded by `seed` and the epoch).
        seed: the seed, the same on every rank.
    """

    def __init__(self, sequence, shuffle=True, seed=0):
        self.sequence = sequence
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self._batches = self._order()

    def _order(self):
        count = len(self.sequence)
        order = (np.random.RandomState(self.seed + self.epoch).permutation(count)
                 if self.shuffle else None)
        return _my_indices(count, order)

    def __len__(self):
        return len(self._batches)

    def __getitem__(self, index):
        return self.sequence[int(self._batches[index])]

    def on_epoch_end(self):
        self.sequence.on_epoch_end()
        self.epoch += 1
        self._batches = self._order()


class _ShardedLoaderSequence(DataLoaderSequence):
    """A `DataLoaderSequence` over a loader with a `DistributedSampler`, told the epoch."""

    def on_epoch_end(self):
        super().on_epoch_end()
        self.loader.sampler.set_epoch(self.loader.sampler.epoch + 1)


def _shard_loader_sequence(sequence, shuffle, seed):
    loader = sequence.loader
    if not isinstance(loader, DataLoader) or loader.batch_size is None:
        raise TypeError('shard() of a DataLoaderSequence needs a torch DataLoader built with '
                        'batch_size (it swaps the sampler); got %r.' % (loader,))
    if shuffle is None:
        shuffle = isinstance(loader.sampler, RandomSampler)
    sampler = DistributedSampler(loader.dataset, num_replicas=runtime.size(),
                                 rank=runtime.rank(), shuffle=shuffle, seed=seed)
    return _ShardedLoaderSequence(DataLoader(
        loader.dataset, batch_size=loader.batch_size, sampler=sampler,
        num_workers=loader.num_workers, collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory, drop_last=loader.drop_last,
        worker_init_fn=loader.worker_init_fn))


def shard(data, shuffle=None, seed=0):
    """This process' share of `data`, the same size on every rank.

    - numpy arrays (or a list, tuple or dict of arrays of one length, as `x`, `y` of
      `fit`): every `size()`-th sample from `rank()`, `ceil(n / size())` samples; Keras'
      own `shuffle` then shuffles within the shard.
    - a `DataLoaderSequence`: a new one over the same dataset with a `DistributedSampler`
      (shuffled when `shuffle`, by default when the loader shuffles; a new order each
      epoch, from `seed`).
    - another `keras.utils.Sequence`: a `ShardedSequence` of its batches (`shuffle` by
      default).

    In a world of one, `data` is returned as it is.
    """
    if runtime.size() == 1:
        return data
    if isinstance(data, DataLoaderSequence):
        return _shard_loader_sequence(data, shuffle, seed)
    if isinstance(data, keras.utils.Sequence):
        return ShardedSequence(data, shuffle=True if shuffle is None else shuffle, seed=seed)
    return _shard_arrays(data)
