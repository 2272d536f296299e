"""`tf.data`'s `Dataset` (its pipelines over in-memory data and Python generators) and
`TensorSpec`; `data.py` is the `tf.data` namespace, with the file sources of `data_sources`.

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
import os

import numpy as np
import torch

from .. import strings
from .. import structure
from .. import tf_dtypes as dtypes
from . import trackable
from .data_options import Options
from .op_errors import InvalidArgumentError
from .tensors import convert_to_tensor

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
    """A dataset leaf: a torch tensor, or a string tensor for text (a pandas column as its
    numpy values)."""
    if type(value).__module__.split('.')[0] == 'pandas':
        value = value.to_numpy(copy=True)
    return convert_to_tensor(value, dtype=dtype)


def _element(value, signature=None):
    """`value` (any nested structure of values) as an element of tensors; lists become
    tuples unless `value` is itself a leaf (TF reads a list as one tensor), or `signature`
    (the structure of dtypes or `TensorSpec`s a generator's values follow) has a leaf there
    (a tuple is then one tensor too)."""
    if isinstance(signature, TensorSpec) or (
            signature is not None and not isinstance(signature, (tuple, list, dict))):
        dtype = signature.dtype if isinstance(signature, TensorSpec) else signature
        return _leaf(value, dtype)
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


class DatasetSpec:
    """The spec of a dataset held as an element (a window of `Dataset.window`): its
    elements' spec."""

    def __init__(self, element_spec):
        self.element_spec = element_spec

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self.element_spec == other.element_spec

    def __hash__(self):
        return hash(repr(self.element_spec))

    def __repr__(self):
        return 'DatasetSpec(%r, TensorShape([]))' % (self.element_spec,)


def _spec_of(leaf):
    if isinstance(leaf, Dataset):
        return DatasetSpec(leaf.element_spec)
    return TensorSpec(tuple(leaf.shape), dtypes.as_dtype(leaf.dtype))


def _call(function, element):
    """Calls a `map` or `filter` function as TF does: a tuple element is unpacked."""
    if isinstance(element, tuple):
        return function(*element)
    return function(element)


class Dataset:
    """A re-iterable sequence of elements (`tf.data.Dataset`).

    Build one with `from_tensor_slices`, `from_tensors`, `from_generator`, `range`,
    `counter`, `list_files`, `zip` or `sample_from_datasets` (or a file source of
    `data_sources`), transform it (`map`, `filter`, `shuffle`, `batch`, `padded_batch`,
    `repeat`, `take`, `skip`, `shard`, `cache`, `unbatch`, `enumerate`, `concatenate`,
    `interleave`, `flat_map`, `window`, `rejection_resample`, `prefetch`), fold it with
    `reduce`, and iterate it with `for`: elements are torch tensors in tuples and dicts.
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

        shapes = _leaf_shapes(signature, output_shapes)

        def iterate():
            for value in generator(*arguments):
                if isinstance(value, list) and isinstance(signature, tuple):
                    value = tuple(value)
                element = _element(value, signature)
                for leaf, shape in zip(structure.flatten(element), shapes):
                    if shape is not None and not _compatible(tuple(leaf.shape), shape):
                        raise InvalidArgumentError(
                            'Dataset.from_generator: `generator` yielded an element of shape '
                            '%s where an element of shape %s was expected.'
                            % (tuple(leaf.shape), shape))
                yield element
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
    def counter(start=0, step=1, dtype=dtypes.int64, name=None):
        """An endless dataset of the scalars `start`, `start + step`, ... of `dtype`."""
        torch_dtype = dtypes.torch_dtype(dtype)
        device = convert_to_tensor(0).device
        return Dataset(lambda: (torch.tensor(value, dtype=torch_dtype, device=device)
                                for value in itertools.count(start, step)),
                       INFINITE_CARDINALITY)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None, name=None):
        """Elements drawn at random from `datasets`, each element's dataset picked with
        probability proportional to `weights` among those not exhausted yet.

        # Arguments
            datasets: a list of datasets of one element structure.
            weights: a list of non-negative floats, one per dataset (default equal).
            seed: the seed of the draws (default drawn from torch's generator).
            stop_on_empty_dataset: whether to end when a picked dataset is exhausted
                (else it is left out and the draws go on among the others, until only
                datasets of zero weight are left).
            rerandomize_each_iteration: whether each iteration draws anew (default False:
                the same picks in each).

        # Raises
            ValueError: for weights that are not one non-negative number per dataset.
        """
        datasets = list(datasets)
        probabilities = (np.ones(len(datasets)) if weights is None
                         else np.asarray(_to_numpy(convert_to_tensor(weights)), np.float64))
        if probabilities.shape != (len(datasets),) or (probabilities < 0).any():
            raise ValueError('Dataset.sample_from_datasets: weights must be %d non-negative '
                             'numbers, one per dataset; got %r.' % (len(datasets), weights))
        if isinstance(weights, (list, tuple)):
            # As TF: datasets of weight 0 in a list are left out; one left is the result.
            kept = [i for i, p in enumerate(probabilities) if p > 0]
            datasets = [datasets[i] for i in kept] or [datasets[0].take(0)]
            probabilities = probabilities[kept] if kept else np.ones(1)
        if len(datasets) == 1:
            return datasets[0]
        seeds = _seeds(seed, bool(rerandomize_each_iteration))
        cardinalities = [d._cardinality for d in datasets]
        infinite = (all(c == INFINITE_CARDINALITY for c in cardinalities) or (
            INFINITE_CARDINALITY in cardinalities and not stop_on_empty_dataset))

        def iterate():
            generator = np.random.default_rng(next(seeds))
            iterators = [iter(d) for d in datasets]
            live = list(range(len(datasets)))
            while live:
                remaining = probabilities[live]
                if remaining.sum() <= 0:
                    return
                k = live[int(generator.choice(len(live), p=remaining / remaining.sum()))]
                element = next(iterators[k], _END)
                if element is not _END:
                    yield element
                elif stop_on_empty_dataset:
                    return
                else:
                    live.remove(k)
        return Dataset(iterate, INFINITE_CARDINALITY if infinite else UNKNOWN_CARDINALITY)

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

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """Mixes the datasets `map_func` makes of the elements, in TF's order: up to
        `cycle_length` of them are open at once, and `block_length` elements are taken from
        each in turn; an exhausted one's place takes the next element's dataset when its
        turn comes again.

        # Arguments
            map_func: a function from an element (a tuple element unpacked) to a `Dataset`.
            cycle_length: how many datasets are open at once (default, or `AUTOTUNE`: the
                number of CPUs, as TF).
            block_length: how many consecutive elements to take from each (default 1).
            num_parallel_calls, deterministic: accepted; the order is always the one above.
        """
        cycle = _cpu_count() if cycle_length in (None, AUTOTUNE) else _positive(
            cycle_length, 'cycle_length')
        block = 1 if block_length in (None, AUTOTUNE) else _positive(block_length,
                                                                     'block_length')
        return Dataset(lambda: _interleave(
            (_dataset_of(_call(map_func, e), 'interleave') for e in self), cycle, block))

    def flat_map(self, map_func, name=None):
        """The elements of the datasets `map_func` makes of each element, one after the
        other (`map_func` takes an element, a tuple element unpacked, and returns a
        `Dataset`)."""
        return Dataset(lambda: itertools.chain.from_iterable(
            _dataset_of(_call(map_func, e), 'flat_map') for e in self))

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """A dataset of windows: window `k` holds the elements `k * shift + j * stride` for
        `j < size` (fewer at the end), as a structure of datasets matching the element's
        (a tuple element gives a tuple of datasets).

        # Arguments
            size: the elements per window.
            shift: how many elements each window starts after the previous one (default
                `size`).
            stride: the step between a window's elements.
            drop_remainder: whether to leave out the last windows with fewer than `size`
                elements.
        """
        size = _positive(size, 'size')
        shift = size if shift is None else _positive(shift, 'shift')
        stride = _positive(stride, 'stride')
        span = (size - 1) * stride + 1
        n = self._cardinality
        if n < 0:
            cardinality = n
        elif drop_remainder:
            cardinality = (n - span) // shift + 1 if n >= span else 0
        else:
            cardinality = -(-n // shift)

        def iterate():
            for elements in _windows(iter(self), size, shift, stride, drop_remainder):
                leaves = [structure.flatten(e) for e in elements]
                yield structure.pack_as(elements[0], [
                    _list_dataset([f[i] for f in leaves]) for i in range(len(leaves[0]))])
        return Dataset(iterate, cardinality)

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None,
                           name=None):
        """Pairs `(class, element)` of the elements kept at random so that their classes
        follow `target_dist`: an element of class `i` is kept with probability
        `(target_i / initial_i) / max_j(target_j / initial_j)`.

        # Arguments
            class_func: a function from an element (a tuple unpacked) to its class, an
                integer scalar in `[0, len(target_dist))`.
            target_dist: the wanted probability of each class.
            initial_dist: the classes' probabilities in this dataset (default: estimated
                from the classes seen so far).
            seed: the seed of the draws (default drawn from torch's generator).

        # Raises
            ValueError: for distributions of different lengths or a class out of range.
        """
        target = np.asarray(_to_numpy(convert_to_tensor(target_dist)), np.float64)
        initial = (None if initial_dist is None
                   else np.asarray(_to_numpy(convert_to_tensor(initial_dist)), np.float64))
        if initial is not None and initial.shape != target.shape:
            raise ValueError('Dataset.rejection_resample: initial_dist has %d classes, '
                             'target_dist %d.' % (initial.size, target.size))
        seeds = _seeds(seed, True)

        def iterate():
            generator = np.random.default_rng(next(seeds))
            counts = np.zeros(target.size)
            for element in self:
                label = convert_to_tensor(_call(class_func, element))
                k = int(label)
                if not 0 <= k < target.size:
                    raise ValueError('Dataset.rejection_resample: class_func gave class %d; '
                                     'target_dist has %d classes.' % (k, target.size))
                counts[k] += 1
                seen = initial if initial is not None else counts / counts.sum()
                with np.errstate(divide='ignore', invalid='ignore'):
                    ratios = np.where(seen > 0, target / seen, 0.)
                if generator.random() < ratios[k] / ratios.max():
                    yield label, element
        return Dataset(iterate)

    def reduce(self, initial_state, reduce_func, name=None):
        """Folds the elements into a state: `reduce_func(state, element)` (the element as
        one argument) from `initial_state`, each new state a structure of tensors of the
        initial state's dtypes.

        # Returns
            The final state (`initial_state` as tensors for an empty dataset).

        # Raises
            TypeError: if `reduce_func` returns a state of another structure or dtypes.
        """
        state = _element(_map_result(initial_state))
        kinds = [leaf.dtype for leaf in structure.flatten(state)]
        for element in self:
            new = _element(_map_result(reduce_func(state, element)))
            try:
                new_kinds = [leaf.dtype for leaf in structure.flatten(
                    structure.map_structure(lambda a, b: b, state, new))]
            except (ValueError, TypeError, KeyError):
                new_kinds = None
            if new_kinds != kinds:
                raise TypeError('Dataset.reduce: reduce_func must return a state of the '
                                'structure and dtypes of initial_state (%s); it returned %s.'
                                % (_describe(state), _describe(new)))
            state = new
        return state

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


def _leaf_shapes(signature, shapes):
    """The shape declared for each leaf of a generator's elements (flattened as
    `structure.flatten`; None: any), from `TensorSpec`s or `output_shapes`."""
    if isinstance(signature, dict):
        return [shape for key in sorted(signature) for shape in _leaf_shapes(
            signature[key], None if shapes is None else shapes[key])]
    if isinstance(signature, (tuple, list)):
        return [shape for i, item in enumerate(signature) for shape in _leaf_shapes(
            item, None if shapes is None else shapes[i])]
    if isinstance(signature, TensorSpec):
        return [signature.shape]
    dims = getattr(shapes, 'dims', shapes)
    return [None if dims is None else tuple(None if d is None else int(d) for d in dims)]


def _compatible(shape, declared):
    return len(shape) == len(declared) and all(
        d is None or d == n for n, d in zip(shape, declared))


def _cpu_count():
    """The CPUs this process may run on: TF's `cycle_length` when left to it."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _dataset_of(value, method):
    if not isinstance(value, Dataset):
        raise TypeError('Dataset.%s: map_func must return a Dataset; it returned %s.'
                        % (method, type(value).__name__))
    return value


def _interleave(datasets, cycle_length, block_length):
    """TF's interleave order over an iterator of datasets."""
    slots = [None] * cycle_length
    index = taken = opened = 0
    more = True
    while more or opened:
        if slots[index] is not None:
            element = next(slots[index], _END)
            if element is not _END:
                yield element
                taken += 1
                if taken < block_length:
                    continue
            else:
                slots[index] = None
                opened -= 1
        elif more:
            dataset = next(datasets, None)
            if dataset is None:
                more = False
            else:
                slots[index] = iter(dataset)
                opened += 1
            continue
        index, taken = (index + 1) % cycle_length, 0


_END = object()


def _list_dataset(items):
    return Dataset(lambda: iter(items), len(items))


def _windows(iterator, size, shift, stride, drop_remainder):
    """Lists of the elements of each window, reading `iterator` as far as each needs."""
    span = (size - 1) * stride + 1
    buffer = []
    exhausted = False
    while True:
        while not exhausted and len(buffer) < span:
            element = next(iterator, _END)
            if element is _END:
                exhausted = True
            else:
                buffer.append(element)
        window = buffer[:span:stride]
        if not window or (drop_remainder and len(window) < size):
            return
        yield window
        if shift <= len(buffer):
            del buffer[:shift]
            continue
        skipped = shift - len(buffer)
        buffer = []
        if exhausted or len(list(itertools.islice(iterator, skipped))) < skipped:
            return


def _describe(element):
    return structure.map_structure(lambda leaf: str(dtypes.as_dtype(leaf.dtype).name), element)


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
