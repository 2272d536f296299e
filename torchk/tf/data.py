"""`tf.data`: `Dataset` pipelines over in-memory data and Python generators.

A `Dataset` is a re-iterable sequence of elements, each a nested structure (tuples, dicts)
of torch tensors on torchk's device. Each transformation returns a new `Dataset` that
iterates its source lazily, in Python, as TF's eager iteration does.

Datasets made by `from_tensor_slices` keep their tensors whole: `shuffle`, `take` and
`skip` applied directly to them reorder indices only, and `batch` then gathers each batch
with one indexing per tensor instead of stacking elements one by one (unshuffled, each
batch is a view of the tensors: no copy at all).

Text has no torch tensor: string leaves are string tensors (`torchk.strings.StringTensor`,
numpy `bytes` on the host); `map`, `batch`, `shuffle`, `cache`, `prefetch`, `unbatch` carry
them as they carry tensors.
"""
import copy
import itertools

import numpy as np
import torch

from .. import strings
from .. import structure
from .. import tf_dtypes as dtypes
from . import trackable
from .data_options import (AutoShardPolicy, DistributeOptions, Options, OptimizationOptions,
                           ThreadingOptions)
from .namespaces import Namespace, module_getattr
from .tensors import convert_to_tensor

__all__ = ['AUTOTUNE', 'Dataset', 'INFINITE_CARDINALITY', 'UNKNOWN_CARDINALITY', 'experimental',
           'Options', 'ThreadingOptions']

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


class TensorSpec:
    """The shape and dtype of a tensor (`tf.TensorSpec`).

    # Arguments
        shape: a tuple of ints and None (None: unknown rank).
        dtype: a dtype (default float32).
        name: optional name.
    """

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self.shape = None if shape is None else tuple(
            None if d is None else int(d) for d in shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, str(self.dtype)))

    def __repr__(self):
        return 'TensorSpec(shape=%s, dtype=%r, name=%r)' % (self.shape, self.dtype, self.name)


def _leaf(value, dtype=None):
    """A dataset leaf: a torch tensor, or a string tensor for text."""
    return convert_to_tensor(value, dtype=dtype)


def _element(value, signature=None):
    """`value` (any nested structure of values) as an element of tensors; lists become
    tuples unless `value` is itself a leaf (TF reads a list as one tensor)."""
    if isinstance(value, dict):
        return {key: _element(item, signature and signature[key]) for key, item in value.items()}
    if isinstance(value, tuple):
        specs = signature if isinstance(signature, tuple) else [None] * len(value)
        return tuple(_element(item, spec) for item, spec in zip(value, specs))
    dtype = signature.dtype if isinstance(signature, TensorSpec) else signature
    return _leaf(value, dtype)


def _length(leaf):
    return leaf.shape[0] if leaf.ndim else None


def _stack(leaves):
    if isinstance(leaves[0], strings.StringTensor):
        return strings.StringTensor(np.stack([leaf.numpy() for leaf in leaves]))
    shapes = {tuple(leaf.shape) for leaf in leaves}
    if len(shapes) > 1:
        raise ValueError('Dataset.batch: cannot batch elements of different shapes %s; use '
                         'padded_batch to pad them to one shape.' % sorted(shapes))
    return torch.stack(leaves)


def _pad_stack(leaves, padded_shape, padding_value):
    rank = leaves[0].ndim
    target = [max(leaf.shape[axis] for leaf in leaves) for axis in range(rank)]
    if padded_shape is not None:
        if len(padded_shape) != rank:
            raise ValueError('Dataset.padded_batch: padded_shapes %s has %d dimensions; the '
                             'elements have %d.' % (tuple(padded_shape), len(padded_shape), rank))
        for axis, size in enumerate(padded_shape):
            if size is not None and size != -1:
                if int(size) < target[axis]:
                    raise ValueError('Dataset.padded_batch: an element has size %d on axis '
                                     '%d, more than padded_shapes allows (%d).'
                                     % (target[axis], axis, size))
                target[axis] = int(size)
    if isinstance(leaves[0], strings.StringTensor):
        fill = strings.as_bytes(b'' if padding_value is None else padding_value).item()
        out = np.full([len(leaves)] + target, fill, dtype=object)
        for i, leaf in enumerate(leaves):
            out[(i,) + tuple(slice(0, n) for n in leaf.shape)] = leaf.numpy()
        return strings.StringTensor(out)
    value = 0 if padding_value is None else padding_value
    out = torch.full([len(leaves)] + target, value, dtype=leaves[0].dtype,
                     device=leaves[0].device)
    for i, leaf in enumerate(leaves):
        out[(i,) + tuple(slice(0, n) for n in leaf.shape)] = leaf
    return out


def _spec_of(leaf):
    return TensorSpec(tuple(leaf.shape), dtypes.as_dtype(leaf.dtype))


def _call(function, element):
    """Calls a `map` or `filter` function as TF does: a tuple element is unpacked."""
    if isinstance(element, tuple):
        return function(*element)
    return function(element)


class Dataset:
    """A re-iterable sequence of elements (`tf.data.Dataset`).

    Build one with `from_tensor_slices`, `from_tensors`, `from_generator`, `range` or `zip`,
    transform it (`map`, `filter`, `shuffle`, `batch`, `padded_batch`, `repeat`, `take`,
    `skip`, `shard`, `cache`, `unbatch`, `enumerate`, `concatenate`, `prefetch`), and iterate
    it with `for`: elements are torch tensors in tuples and dicts.
    """

    def __init__(self, iterate, cardinality=UNKNOWN_CARDINALITY, batch_size=0):
        self._iterate = iterate
        self._cardinality = cardinality
        # Of a batched dataset: its batch size, None if the last batch may be smaller.
        self._batch_size = batch_size

    def __iter__(self):
        return DatasetIterator(self)

    def __len__(self):
        if self._cardinality == INFINITE_CARDINALITY:
            raise TypeError('The dataset is infinite.')
        if self._cardinality == UNKNOWN_CARDINALITY:
            raise TypeError('The dataset length is unknown.')
        return self._cardinality

    def __repr__(self):
        return '<Dataset element_spec=%r>' % (self.element_spec,)

    # Sources.

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """A dataset of the slices of `tensors` along their first axis.

        # Arguments
            tensors: an array, tensor or list, or a tuple or dict of them, all of one length.

        # Raises
            ValueError: if the leaves' first dimensions differ, or a leaf is a scalar.
        """
        element = _element(tensors)
        leaves = structure.flatten(element)
        lengths = {_length(leaf) for leaf in leaves}
        if None in lengths:
            raise ValueError('Dataset.from_tensor_slices: a value is a scalar; every value '
                             'needs a first axis to slice.')
        if len(lengths) != 1:
            raise ValueError('Dataset.from_tensor_slices: the values have different first '
                             'dimensions %s; they must all have the same.' % sorted(lengths))
        return _Slices(element, leaves, np.arange(lengths.pop()))

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset of one element, `tensors`."""
        element = _element(tensors)
        return Dataset(lambda: iter([element]), 1)

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """A dataset of the values a Python generator yields, converted to tensors.

        # Arguments
            generator: a callable returning an iterator (called again for each iteration).
            output_types: the elements' dtypes (a structure of dtypes), or
            output_signature: a structure of `TensorSpec`s.
            output_shapes: accepted; shapes are those of the generated values.
            args: arguments passed to `generator`.

        # Raises
            TypeError: if neither `output_types` nor `output_signature` is given.
        """
        signature = output_signature if output_signature is not None else output_types
        if signature is None:
            raise TypeError('Dataset.from_generator needs output_signature (or output_types).')
        arguments = tuple(args or ())

        def iterate():
            for value in generator(*arguments):
                if isinstance(value, list) and isinstance(signature, tuple):
                    value = tuple(value)
                yield _element(value, signature)
        return Dataset(iterate)

    @staticmethod
    def range(*args, dtype=dtypes.int64, name=None):
        """A dataset of integers, as Python's `range(start, stop, step)` (int64 scalars)."""
        numbers = range(*args)
        torch_dtype = dtypes.torch_dtype(dtype)
        values = torch.arange(numbers.start, numbers.stop, numbers.step, dtype=torch_dtype,
                              device=convert_to_tensor(0).device)
        return _Slices(values, [values], np.arange(len(numbers)))

    @staticmethod
    def zip(datasets, name=None):
        """A dataset of tuples (or dicts) of the elements of `datasets` (a tuple or dict of
        datasets), as long as the shortest."""
        flat = structure.flatten(datasets)
        cardinalities = [d._cardinality for d in flat]
        known = [c for c in cardinalities if c >= 0]
        if known:
            cardinality = min(known)
        elif all(c == INFINITE_CARDINALITY for c in cardinalities):
            cardinality = INFINITE_CARDINALITY
        else:
            cardinality = UNKNOWN_CARDINALITY
        return Dataset(lambda: (structure.pack_as(datasets, elements)
                                for elements in zip(*flat)), cardinality)

    # Transformations.

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """Applies `map_func` to each element (a tuple element is passed unpacked)."""
        return Dataset(lambda: (_element(_map_result(_call(map_func, e))) for e in self),
                       self._cardinality)

    def filter(self, predicate, name=None):
        """Keeps the elements for which `predicate` returns True."""
        return Dataset(lambda: (e for e in self if bool(_call(predicate, e))))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        """Shuffles elements with a buffer of `buffer_size` elements, as TF does (a buffer at
        least as long as the dataset gives a uniform permutation).

        # Arguments
            buffer_size: the number of elements drawn from.
            seed: optional seed; else a seed drawn from torch's generator (set by
                `tf.random.set_seed`).
            reshuffle_each_iteration: a new order for each iteration if True.
        """
        seeds = _seeds(seed, reshuffle_each_iteration)
        size = int(buffer_size)
        if size < 1:
            raise ValueError('Dataset.shuffle: buffer_size must be at least 1; got %d.' % size)
        return Dataset(lambda: _buffer_shuffle(iter(self), size, next(seeds)), self._cardinality)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        """Stacks consecutive elements into batches of `batch_size` (the last one smaller
        unless `drop_remainder`)."""
        size = _positive(batch_size, 'batch_size')
        return Dataset(lambda: _batches(iter(self), size, drop_remainder, _stack_elements),
                       _batched_cardinality(self._cardinality, size, drop_remainder),
                       size if drop_remainder else None)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """`batch` for elements of different shapes: each tensor is padded (at the end of
        each axis) to the largest in its batch, or to `padded_shapes` (None or -1: the
        largest), with `padding_values` (default 0)."""
        size = _positive(batch_size, 'batch_size')

        def stack(elements):
            flat = [structure.flatten(e) for e in elements]
            count = len(flat[0])
            shapes = (structure.flatten(padded_shapes) if padded_shapes is not None
                      and not _is_shape(padded_shapes) else [padded_shapes] * count)
            values = (structure.flatten(padding_values) if isinstance(padding_values,
                                                                     (tuple, dict, list))
                      else [padding_values] * count)
            return structure.pack_as(elements[0], [
                _pad_stack([f[i] for f in flat], shapes[i], values[i]) for i in range(count)])
        return Dataset(lambda: _batches(iter(self), size, drop_remainder, stack),
                       _batched_cardinality(self._cardinality, size, drop_remainder),
                       size if drop_remainder else None)

    def unbatch(self, name=None):
        """Splits each element along its first axis into elements."""
        def iterate():
            for element in self:
                leaves = structure.flatten(element)
                for i in range(leaves[0].shape[0]):
                    yield structure.pack_as(element, [leaf[i] for leaf in leaves])
        return Dataset(iterate)

    def repeat(self, count=None, name=None):
        """Repeats the dataset `count` times (forever if None or -1)."""
        forever = count is None or count == -1
        if forever:
            cardinality = 0 if self._cardinality == 0 else INFINITE_CARDINALITY
            return Dataset(lambda: itertools.chain.from_iterable(
                iter(self) for _ in itertools.count()), cardinality)
        cardinality = (self._cardinality * count if self._cardinality >= 0
                       else self._cardinality)
        return Dataset(lambda: itertools.chain.from_iterable(iter(self) for _ in range(count)),
                       cardinality)

    def take(self, count, name=None):
        """The first `count` elements (all if -1)."""
        count = int(count)
        if count < 0:
            return self
        return Dataset(lambda: itertools.islice(iter(self), count),
                       _bounded(self._cardinality, count))

    def skip(self, count, name=None):
        """The elements after the first `count` (none if -1)."""
        count = int(count)
        if count < 0:
            return Dataset(lambda: iter(()), 0)
        cardinality = (max(self._cardinality - count, 0) if self._cardinality >= 0
                       else self._cardinality)
        return Dataset(lambda: itertools.islice(iter(self), count, None), cardinality)

    def shard(self, num_shards, index, name=None):
        """Every `num_shards`-th element from the `index`-th (an input pipeline's share, e.g.
        `InputContext.input_pipeline_id` of `num_input_pipelines`).

        # Raises
            ValueError: unless `0 <= index < num_shards`.
        """
        num_shards, index = _positive(num_shards, 'num_shards'), int(index)
        if not 0 <= index < num_shards:
            raise ValueError('Dataset.shard: index must be in [0, num_shards=%d); got %d.'
                             % (num_shards, index))
        cardinality = (len(range(index, self._cardinality, num_shards))
                       if self._cardinality >= 0 else self._cardinality)
        return Dataset(lambda: itertools.islice(iter(self), index, None, num_shards),
                       cardinality)

    def cache(self, filename='', name=None):
        """Keeps the elements in memory after the first full iteration (`filename` must be
        empty: torchk caches in memory only)."""
        if filename:
            raise ValueError('Dataset.cache(filename=%r): torchk caches in memory only; call '
                             'cache() without a file name.' % (filename,))
        cached = []
        complete = []

        def iterate():
            if complete:
                yield from cached
                return
            cached.clear()
            for element in self:
                cached.append(element)
                yield element
            complete.append(True)
        return Dataset(iterate, self._cardinality)

    def with_options(self, options, name=None):
        """The dataset with `options` (a `tf.data.Options`), which `options()` returns; they
        change nothing in how torchk computes elements (`data_options`)."""
        dataset = copy.copy(self)
        dataset._options = options
        return dataset

    def options(self):
        """The `tf.data.Options` given by `with_options` (default options if none)."""
        return getattr(self, '_options', None) or Options()

    def prefetch(self, buffer_size=None, name=None):
        """Returns the dataset (elements are computed when iterated; nothing to prefetch)."""
        return self

    def enumerate(self, start=0, name=None):
        """Pairs `(index, element)`, the index an int64 tensor counting from `start`."""
        def iterate():
            for i, element in enumerate(self, start):
                yield convert_to_tensor(i, dtypes.int64), element
        return Dataset(iterate, self._cardinality)

    def concatenate(self, dataset, name=None):
        """This dataset's elements followed by `dataset`'s."""
        a, b = self._cardinality, dataset._cardinality
        if INFINITE_CARDINALITY in (a, b):
            cardinality = INFINITE_CARDINALITY
        elif a >= 0 and b >= 0:
            cardinality = a + b
        else:
            cardinality = UNKNOWN_CARDINALITY
        return Dataset(lambda: itertools.chain(self, dataset), cardinality)

    def apply(self, transformation_func):
        """`transformation_func(self)`."""
        return transformation_func(self)

    # Inspection.

    def as_numpy_iterator(self):
        """Iterates the elements with numpy arrays in place of tensors."""
        return (structure.map_structure(_to_numpy, element) for element in self)

    def cardinality(self):
        """The number of elements as an int64 tensor: -1 if infinite, -2 if unknown."""
        return convert_to_tensor(self._cardinality, dtypes.int64)

    @property
    def element_spec(self):
        """The `TensorSpec`s of the first element (computed by reading it); the batch axis
        of a batched dataset is None unless its batches all have the same size."""
        for element in self:
            specs = structure.map_structure(_spec_of, element)
            if self._batch_size != 0:
                for spec in structure.flatten(specs):
                    spec.shape = (self._batch_size,) + spec.shape[1:]
            return specs
        return None


_POSITION = 'TORCHK_ITERATOR_POSITION'


class DatasetIterator:
    """An iterator over a dataset (`iter(dataset)`), counting the elements it gave.

    A `tf.train.Checkpoint` saves that count (as `TORCHK_ITERATOR_POSITION`); restoring it
    starts a new pass over the dataset and skips as many elements, which continues where the
    saved iterator was for a dataset that gives the same elements on each pass (unshuffled,
    or shuffled with a seed and `reshuffle_each_iteration=False`).
    """

    def __init__(self, dataset):
        self._dataset = dataset
        self._iterator = iter(dataset._iterate())
        self._position = 0

    def __iter__(self):
        return self

    def __next__(self):
        element = next(self._iterator)
        self._position += 1
        return element

    def get_next(self):
        """The next element (`tf.errors.OutOfRangeError`-free: StopIteration at the end)."""
        return next(self)

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def _restore_position(self, position):
        self._iterator = iter(self._dataset._iterate())
        for _ in itertools.islice(self._iterator, position):
            pass
        self._position = position


def _restore_iterator(iterator, attribute, read, key):
    if attribute != _POSITION:
        return False
    iterator._restore_position(int(read()))
    return True


trackable.register_view(DatasetIterator, trackable.View(
    values=lambda it: [(_POSITION, 'iterator', np.array(it._position, np.int64))],
    restore=_restore_iterator))


class _Slices(Dataset):
    """`from_tensor_slices`: whole tensors and the order of their indices to yield."""

    def __init__(self, element, leaves, order, seeds=None, buffer_size=None):
        self._element = element
        self._leaves = leaves
        self._order = order
        self._seeds = seeds
        self._buffer_size = buffer_size
        super().__init__(self._elements, len(order))

    def _indices(self):
        if self._seeds is None:
            return self._order
        return np.fromiter(_buffer_shuffle(iter(self._order), self._buffer_size,
                                           next(self._seeds)), dtype=np.int64,
                           count=len(self._order))

    def _gather(self, indices):
        # index_select, not `leaf[index]`: torch's advanced indexing is ~1000x slower here.
        index = torch.as_tensor(indices)
        return structure.pack_as(self._element, [
            leaf[indices] if isinstance(leaf, strings.StringTensor)
            else torch.index_select(leaf, 0, index.to(leaf.device)) for leaf in self._leaves])

    def _elements(self):
        for i in self._indices():
            yield structure.pack_as(self._element, [leaf[int(i)] for leaf in self._leaves])

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        if self._seeds is not None:
            return super().shuffle(buffer_size, seed, reshuffle_each_iteration)
        size = int(buffer_size)
        if size < 1:
            raise ValueError('Dataset.shuffle: buffer_size must be at least 1; got %d.' % size)
        return _Slices(self._element, self._leaves, self._order,
                       _seeds(seed, reshuffle_each_iteration), size)

    def take(self, count, name=None):
        if self._seeds is not None or int(count) < 0:
            return super().take(count)
        return _Slices(self._element, self._leaves, self._order[:int(count)])

    def skip(self, count, name=None):
        if self._seeds is not None or int(count) < 0:
            return super().skip(count)
        return _Slices(self._element, self._leaves, self._order[int(count):])

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        size = _positive(batch_size, 'batch_size')

        def iterate():
            indices = self._indices()
            stop = len(indices) - len(indices) % size if drop_remainder else len(indices)
            if self._seeds is None and _is_run(indices):
                # In order: each batch is a view of the tensors, no copy.
                first = int(indices[0]) if len(indices) else 0
                for start in range(first, first + stop, size):
                    yield structure.pack_as(self._element, [
                        leaf[start:min(start + size, first + stop)] for leaf in self._leaves])
                return
            for start in range(0, stop, size):
                yield self._gather(indices[start:start + size])
        return Dataset(iterate, _batched_cardinality(len(self._order), size, drop_remainder),
                       size if drop_remainder else None)


def _is_run(indices):
    """True if `indices` (an int array) counts up by one."""
    return len(indices) < 2 or (int(indices[-1]) - int(indices[0]) == len(indices) - 1
                                and bool((np.diff(indices) == 1).all()))


def _map_result(value):
    if isinstance(value, list):
        return tuple(value)
    return value


def _to_numpy(leaf):
    if isinstance(leaf, (torch.Tensor, strings.StringTensor)):
        return leaf.numpy() if isinstance(leaf, strings.StringTensor) else (
            leaf.detach().cpu().numpy())
    return leaf


def _is_shape(value):
    return isinstance(value, (list, tuple)) and all(
        v is None or isinstance(v, (int, np.integer)) for v in value)


def _positive(value, argument):
    value = int(value)
    if value < 1:
        raise ValueError('Dataset: %s must be at least 1; got %d.' % (argument, value))
    return value


def _bounded(cardinality, count):
    if cardinality == INFINITE_CARDINALITY:
        return count
    if cardinality >= 0:
        return min(cardinality, count)
    return UNKNOWN_CARDINALITY


def _batched_cardinality(cardinality, size, drop_remainder):
    if cardinality < 0:
        return cardinality
    return cardinality // size if drop_remainder else -(-cardinality // size)


def _stack_elements(elements):
    flat = [structure.flatten(e) for e in elements]
    return structure.pack_as(elements[0], [_stack([f[i] for f in flat])
                                           for i in range(len(flat[0]))])


def _batches(iterator, size, drop_remainder, stack):
    while True:
        elements = list(itertools.islice(iterator, size))
        if not elements or (drop_remainder and len(elements) < size):
            return
        yield stack(elements)


def _seeds(seed, reshuffle_each_iteration):
    """An endless iterator of shuffle seeds: one per iteration of the dataset."""
    if seed is None:
        seed = int(torch.randint(0, 2 ** 31 - 1, ()).item())
    if not reshuffle_each_iteration:
        return itertools.repeat(int(seed))
    generator = np.random.default_rng(int(seed))
    return iter(lambda: int(generator.integers(2 ** 31 - 1)), None)


def _buffer_shuffle(iterator, buffer_size, seed):
    """TF's shuffle: fill a buffer, then yield a random buffer entry and refill its place."""
    generator = np.random.default_rng(seed)
    buffer = list(itertools.islice(iterator, buffer_size))
    for element in iterator:
        j = int(generator.integers(len(buffer)))
        yield buffer[j]
        buffer[j] = element
    for j in generator.permutation(len(buffer)):
        yield buffer[j]


experimental = Namespace('tf.data.experimental', {
    'AUTOTUNE': AUTOTUNE, 'INFINITE_CARDINALITY': INFINITE_CARDINALITY,
    'UNKNOWN_CARDINALITY': UNKNOWN_CARDINALITY,
    'cardinality': lambda dataset: dataset.cardinality(),
    'AutoShardPolicy': AutoShardPolicy, 'DistributeOptions': DistributeOptions,
    'OptimizationOptions': OptimizationOptions})
__getattr__ = module_getattr('tf.data')
