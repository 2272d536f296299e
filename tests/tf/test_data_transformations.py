"""tf.data.Dataset's reduce, interleave and flat_map, and tf.py_function in a pipeline: the
element orders and values are TensorFlow's (tensorflow 2.21), written here as TF gives
them."""
import numpy as np
import pytest
import torch

import torchk.tf as tf

Dataset = tf.data.Dataset


def _ints(dataset):
    return [int(v) for v in dataset]


def _repeated(x):
    return Dataset.from_tensors(x).repeat(x)


@pytest.mark.parametrize('cycle_length,block_length,parallel,expected', [
    # TF: Dataset.range(1, 6).interleave(lambda x: from_tensors(x).repeat(x), ...)
    (2, 2, None, [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5]),
    (3, 1, 2, [1, 2, 3, 2, 3, 4, 3, 4, 5, 4, 5, 4, 5, 5, 5]),
    (2, None, None, [1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 4, 5, 5, 5, 5]),
])
def test_interleave_order_is_tf_s(cycle_length, block_length, parallel, expected):
    dataset = Dataset.range(1, 6).interleave(_repeated, cycle_length=cycle_length,
                                             block_length=block_length,
                                             num_parallel_calls=parallel)
    assert _ints(dataset) == expected
    assert _ints(dataset) == expected  # re-iterable
    assert int(dataset.cardinality()) == tf.data.UNKNOWN_CARDINALITY


def test_interleave_takes_as_many_datasets_as_cpus_by_default(monkeypatch):
    # TF on 2 CPUs: Dataset.range(6).interleave(lambda x: Dataset.range(10 * x, 10 * x + 3))
    monkeypatch.setattr('torchk.tf.dataset._cpu_count', lambda: 2)
    dataset = Dataset.range(6).interleave(lambda x: Dataset.range(x * 10, x * 10 + 3))
    assert _ints(dataset) == [0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32, 40, 50, 41, 51,
                              42, 52]


def test_interleave_unpacks_tuple_elements_and_checks_the_result():
    pairs = Dataset.from_tensor_slices(([1, 2], [10, 20]))
    dataset = pairs.interleave(lambda a, b: Dataset.from_tensor_slices([a, b]),
                               cycle_length=2)
    assert _ints(dataset) == [1, 2, 10, 20]
    with pytest.raises(TypeError, match='interleave: map_func must return a Dataset'):
        list(pairs.interleave(lambda a, b: a, cycle_length=1))


def test_flat_map_chains_the_datasets():
    # TF: [0, 0, 1, 0, 1, 2], cardinality -2 (unknown)
    dataset = Dataset.range(1, 4).flat_map(lambda x: Dataset.range(x))
    assert _ints(dataset) == [0, 0, 1, 0, 1, 2]
    assert int(dataset.cardinality()) == tf.data.UNKNOWN_CARDINALITY


def test_reduce_folds_into_tensors_of_the_initial_state_s_dtypes():
    # TF: 22 (int32); 10 (int64); {'a': 10, 'b': 32} (int32)
    total = Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1]).reduce(0, lambda s, v: s + v)
    assert total.dtype == torch.int32 and int(total) == 22
    total = Dataset.range(5).reduce(tf.constant(0, tf.int64), lambda s, v: s + v)
    assert total.dtype == torch.int64 and int(total) == 10
    state = Dataset.range(5).reduce(
        {'a': 0, 'b': 1}, lambda s, v: {'a': s['a'] + tf.cast(v, tf.int32), 'b': s['b'] * 2})
    assert (int(state['a']), int(state['b'])) == (10, 32)
    assert state['a'].dtype == state['b'].dtype == torch.int32


def test_reduce_passes_a_tuple_element_whole_and_refuses_a_dtype_change():
    pairs = Dataset.from_tensor_slices((np.array([1, 2, 3]), np.array([0, 1, 1])))
    counted = pairs.reduce(0, lambda count, pair: count + tf.cast(pair[1], tf.int32))
    assert int(counted) == 2
    assert int(Dataset.range(0).reduce(7, lambda s, v: s)) == 7
    with pytest.raises(TypeError, match='reduce: reduce_func must return a state'):
        Dataset.range(3).reduce(0, lambda s, v: s + v)  # int32 + int64: TF refuses too


def test_from_generator_reads_a_tuple_as_one_tensor_of_a_tensor_spec():
    # TF: [[0], [1], [2]], element_spec TensorSpec(shape=(1,), dtype=tf.int64)
    dataset = Dataset.from_generator(
        lambda: ((i,) for i in range(3)),
        output_signature=tf.TensorSpec(shape=(1,), dtype=tf.int64))
    values = list(dataset)
    assert [v.tolist() for v in values] == [[0], [1], [2]]
    assert values[0].dtype == torch.int64


def test_py_function_in_a_map():
    # TF: py_function(f, [3.], tf.float32) -> 6.0; Tout a list -> a list; Tout () -> [].
    dataset = Dataset.from_tensor_slices([1., 2.]).map(
        lambda x: tf.py_function(lambda v: v.numpy() * 2, [x], tf.float32))
    assert [float(v) for v in dataset] == [2., 4.]
    pair = tf.py_function(lambda x, y: (x, y), [3, 4.0], [tf.int32, tf.float32])
    assert isinstance(pair, list) and pair[0].dtype == torch.int32 and float(pair[1]) == 4.
    assert tf.py_function(lambda: None, [], ()) == []

    @tf.py_function(Tout=tf.float32)
    def doubled(x):
        return np.asarray(x) * 2
    assert doubled(tf.constant([1., 2.])).tolist() == [2., 4.]
    with pytest.raises(ValueError, match='Tout asks for int32'):
        tf.py_function(lambda x: x, [1.5], tf.int32)


def test_string_zeros_are_empty_strings():
    # TF: tf.zeros([2, 1], dtype=tf.string).numpy() -> [[b''], [b'']]
    assert tf.zeros([2, 1], dtype=tf.string).numpy().tolist() == [[b''], [b'']]


def test_pandas_columns_slice_as_their_numpy_values():
    pd = pytest.importorskip('pandas')
    frame = pd.DataFrame({'n': [1, 2], 'x': [0.5, 1.5], 's': ['a', 'bc']})
    dataset = Dataset.from_tensor_slices(dict(frame))
    # TF (as numpy's dtypes): int64, float64 and string scalars
    assert dataset.element_spec == {'n': tf.TensorSpec((), tf.int64),
                                    'x': tf.TensorSpec((), tf.float64),
                                    's': tf.TensorSpec((), tf.string)}
    rows = list(dataset.as_numpy_iterator())
    assert [(int(r['n']), float(r['x']), r['s']) for r in rows] == [(1, .5, b'a'),
                                                                    (2, 1.5, b'bc')]


def test_filter_on_text_with_string_comparisons():
    # TF: [b'1,b', b'1,c']; tf.equal on strings gives a bool tensor.
    lines = Dataset.from_tensor_slices([b'0,a', b'1,b', b'1,c', b'0,d'])
    kept = lines.filter(lambda line: tf.not_equal(tf.strings.substr(line, 0, 1), '0'))
    assert list(kept.as_numpy_iterator()) == [b'1,b', b'1,c']
    equal = tf.equal(tf.constant([b'0,1', b'1,x']), [b'0,1', b'z'])
    assert equal.dtype == torch.bool and equal.tolist() == [True, False]


def test_counter_is_endless():
    # TF: cardinality -1, int64 [0, 1, 2]; counter(5, -2, int32) -> [5, 3, 1]; zipped with
    # range(10, 13): cardinality 3.
    counter = tf.data.experimental.Counter()
    assert int(counter.cardinality()) == tf.data.INFINITE_CARDINALITY
    assert _ints(counter.take(3)) == [0, 1, 2] and next(iter(counter)).dtype == torch.int64
    down = Dataset.counter(start=5, step=-2, dtype=tf.int32)
    assert _ints(down.take(3)) == [5, 3, 1] and next(iter(down)).dtype == torch.int32
    zipped = Dataset.zip((tf.data.experimental.Counter(), Dataset.range(10, 13)))
    assert int(zipped.cardinality()) == 3
    assert [(int(a), int(b)) for a, b in zipped] == [(0, 10), (1, 11), (2, 12)]


@pytest.mark.parametrize('arguments,expected,cardinality', [
    # TF: Dataset.range(7).window(**arguments), each window's values, and the cardinality
    (dict(size=3, shift=2), [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]], 4),
    (dict(size=3, shift=2, drop_remainder=True), [[0, 1, 2], [2, 3, 4], [4, 5, 6]], 3),
    (dict(size=3, shift=1, stride=2),
     [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5], [4, 6], [5], [6]], 7),
    (dict(size=2), [[0, 1], [2, 3], [4, 5], [6]], 4),
    (dict(size=4, shift=3, stride=2, drop_remainder=True), [[0, 2, 4, 6]], 1),
    (dict(size=2, shift=5), [[0, 1], [5, 6]], 2),
])
def test_window(arguments, expected, cardinality):
    windows = Dataset.range(7).window(**arguments)
    assert [_ints(w) for w in windows] == expected
    assert int(windows.cardinality()) == cardinality


def test_windows_of_an_endless_dataset_batched_by_flat_map():
    # TF (the data guide's make_window_dataset): the first two windows batched
    windows = Dataset.range(100000).repeat().window(10, shift=5, stride=3)
    assert int(windows.cardinality()) == tf.data.INFINITE_CARDINALITY
    batches = windows.flat_map(lambda w: w.batch(10, drop_remainder=True))
    assert [b.tolist() for b in batches.take(2)] == [
        [0, 3, 6, 9, 12, 15, 18, 21, 24, 27], [5, 8, 11, 14, 17, 20, 23, 26, 29, 32]]


def test_windows_of_tuples_are_tuples_of_datasets():
    # TF: ([1, 2], [4, 5]), ([3], [6]); element_spec a tuple of DatasetSpecs of int32
    windows = Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2)
    assert [(_ints(a), _ints(b)) for a, b in windows] == [([1, 2], [4, 5]), ([3], [6])]
    spec = windows.element_spec
    assert isinstance(spec, tuple) and len(spec) == 2
    assert spec[0].element_spec == tf.TensorSpec((), tf.int32)
    assert int(Dataset.range(5).filter(lambda x: x > 0).window(2).cardinality()) == (
        tf.data.UNKNOWN_CARDINALITY)


def test_sample_from_datasets_draws_by_weight():
    ones, zeros = Dataset.from_tensors(1).repeat(), Dataset.from_tensors(0).repeat()
    mixed = Dataset.sample_from_datasets([ones, zeros], [0.2, 0.8], seed=4)
    assert int(mixed.cardinality()) == tf.data.INFINITE_CARDINALITY  # TF: -1
    draws = np.array(_ints(mixed.take(20000)))
    assert abs(draws.mean() - 0.2) < 0.015
    assert _ints(mixed.take(50)) == _ints(mixed.take(50))  # same seed, same picks


def test_sample_from_datasets_exhaustion():
    a, b = Dataset.range(0, 3), Dataset.range(100, 105)
    # TF: every element of both, cardinality -2; weight 0 is never drawn: [0, 1, 2].
    both = Dataset.sample_from_datasets([a, b], [0.5, 0.5], seed=1)
    assert int(both.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    assert sorted(_ints(both)) == [0, 1, 2, 100, 101, 102, 103, 104]
    assert _ints(Dataset.sample_from_datasets([a, b], [1.0, 0.0], seed=1)) == [0, 1, 2]
    # stop_on_empty_dataset: the end comes when the exhausted one is picked.
    stopped = _ints(Dataset.sample_from_datasets([a, Dataset.range(100, 200).repeat()],
                                                 seed=2, stop_on_empty_dataset=True))
    assert [v for v in stopped if v < 100] == [0, 1, 2] and len(stopped) < 200
    with pytest.raises(ValueError, match='weights must be 2 non-negative'):
        Dataset.sample_from_datasets([a, b], [1.0])


@pytest.mark.parametrize('initial_dist', [[0.9, 0.1], None])
def test_rejection_resample_follows_the_target_distribution(initial_dist):
    labels = np.array([0] * 900 + [1] * 100)
    # shuffled: an estimated initial distribution needs the classes mixed, as in TF
    source = Dataset.from_tensor_slices((np.arange(1000), labels)).shuffle(
        1000, seed=0).repeat(20)
    resampled = source.rejection_resample(lambda x, y: y, target_dist=[0.5, 0.5],
                                          initial_dist=initial_dist, seed=3)
    pairs = [(int(c), int(element[1])) for c, element in resampled]
    assert all(c == label for c, label in pairs)
    classes = np.array([c for c, _ in pairs])
    # binomial: about 4000 kept (all 2000 of class 1), the mean within 3 standard errors
    assert len(classes) > 3000 and abs(classes.mean() - 0.5) < 0.03
    with pytest.raises(ValueError, match='class_func gave class 1'):
        list(source.rejection_resample(lambda x, y: y, target_dist=[1.0], seed=0))


def test_from_generator_checks_the_declared_shapes():
    # TF: InvalidArgumentError "`generator` yielded an element of shape (2, 2) where an
    # element of shape (None,) was expected", after the first element; and (3,) for (2,).
    def generate():
        yield 1, np.zeros(3)
        yield 2, np.zeros((2, 2))
    dataset = Dataset.from_generator(generate, output_types=(tf.int32, tf.float32),
                                     output_shapes=((), (None,)))
    iterator = iter(dataset)
    assert next(iterator)[1].shape == (3,)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'shape \(2, 2\) where an '
                       r'element of shape \(None,\)'):
        next(iterator)
    spec = Dataset.from_generator(lambda: iter([[1, 2, 3]]),
                                  output_signature=tf.TensorSpec((2,), tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'\(3,\) where .* \(2,\)'):
        list(spec)
    assert [v.tolist() for v in Dataset.from_generator(lambda: iter([[1, 2, 3]]),
                                                       output_types=tf.int32)] == [[1, 2, 3]]
