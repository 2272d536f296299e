"""tf.data.Dataset pipelines."""
import numpy as np
import pytest
import torch

import torchk.tf as tf

Dataset = tf.data.Dataset
X = np.arange(20, dtype='float32').reshape(10, 2)
Y = np.arange(10)


def _values(dataset):
    return [np.asarray(e).tolist() if not isinstance(e, (tuple, dict)) else e
            for e in dataset.as_numpy_iterator()]


def test_from_tensor_slices_of_tuples_and_dicts():
    pairs = list(Dataset.from_tensor_slices((X, Y)))
    assert len(pairs) == 10 and isinstance(pairs[3][0], torch.Tensor)
    assert pairs[3][0].tolist() == [6., 7.] and int(pairs[3][1]) == 3
    assert pairs[3][1].dtype == torch.int64
    named = next(iter(Dataset.from_tensor_slices({'a': X, 'b': Y})))
    assert set(named) == {'a', 'b'} and named['a'].tolist() == [0., 1.]
    assert [int(v) for v in Dataset.from_tensor_slices([1, 2, 3])] == [1, 2, 3]


def test_from_tensor_slices_checks_lengths():
    with pytest.raises(ValueError, match=r'first dimensions \[3, 10\]'):
        Dataset.from_tensor_slices((X, Y[:3]))


@pytest.mark.parametrize('drop_remainder,sizes', [(False, [4, 4, 2]), (True, [4, 4])])
def test_batch(drop_remainder, sizes):
    for source in (Dataset.from_tensor_slices((X, Y)),
                   Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x, y))):
        batches = list(source.batch(4, drop_remainder=drop_remainder))
        assert [len(b[1]) for b in batches] == sizes
        assert batches[1][0].tolist() == X[4:8].tolist()
        assert len(source.batch(4, drop_remainder=drop_remainder)) == len(sizes)


@pytest.mark.parametrize('drop_remainder', [False, True])
def test_batches_in_order_are_views_of_the_slices(drop_remainder):
    source = torch.arange(40.).reshape(20, 2)
    dataset = Dataset.from_tensor_slices((source, Y.repeat(2))).skip(3).take(15)
    batches = list(dataset.batch(4, drop_remainder=drop_remainder))
    assert [len(x) for x, _ in batches] == ([4, 4, 4] if drop_remainder else [4, 4, 4, 3])
    for i, (x, y) in enumerate(batches):
        assert x.tolist() == source[3 + 4 * i:min(7 + 4 * i, 18)].tolist()
        assert y.tolist() == Y.repeat(2)[3 + 4 * i:min(7 + 4 * i, 18)].tolist()
        assert x.data_ptr() == source[3 + 4 * i].data_ptr()


def test_shuffle_permutes_reproducibly_and_reshuffles():
    dataset = Dataset.range(100).shuffle(100, seed=1)
    first, second = _values(dataset), _values(dataset)
    assert sorted(first) == list(range(100)) and first != list(range(100))
    assert first != second
    assert _values(Dataset.range(100).shuffle(100, seed=1)) == first
    fixed = Dataset.range(100).shuffle(100, seed=2, reshuffle_each_iteration=False)
    assert _values(fixed) == _values(fixed)


def test_shuffle_draws_from_a_buffer():
    """With a buffer of 5 the first element is one of the first 5, as in TF."""
    for seed in range(20):
        for source in (Dataset.range(50), Dataset.range(50).map(lambda x: x)):
            values = _values(source.shuffle(5, seed=seed))
            assert values[0] < 5 and sorted(values) == list(range(50))


def test_shuffle_then_batch_keeps_pairs_together():
    for x, y in Dataset.from_tensor_slices((X, Y)).shuffle(10).batch(3):
        assert (x[:, 0] == 2 * y).all()


def test_map_filter_take_skip_repeat():
    dataset = Dataset.range(10).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
    assert _values(dataset.filter(lambda x: x % 4 == 0)) == [0, 4, 8, 12, 16]
    assert _values(dataset.take(3)) == [0, 2, 4]
    assert _values(dataset.skip(8)) == [16, 18]
    assert _values(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert _values(Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert _values(Dataset.from_tensor_slices(Y).skip(7).take(2)) == [7, 8]


def test_map_unpacks_tuples_and_returns_structures():
    dataset = Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: {'x': tf.reduce_sum(x), 'y': tf.cast(y, tf.float32)})
    element = next(iter(dataset))
    assert float(element['x']) == 1. and element['y'].dtype == torch.float32


def test_cache_reads_the_source_once():
    calls = []

    def generate():
        calls.append(1)
        yield from range(3)
    dataset = Dataset.from_generator(generate, output_types=tf.int64).cache()
    assert _values(dataset) == [0, 1, 2] and _values(dataset) == [0, 1, 2]
    assert len(calls) == 1


def test_from_generator_with_a_signature():
    def generate():
        for i in range(3):
            yield np.full(i + 1, i), i * 0.5
    signature = (tf.TensorSpec(shape=(None,), dtype=tf.int32),
                 tf.TensorSpec(shape=(), dtype=tf.float32))
    elements = list(Dataset.from_generator(generate, output_signature=signature))
    assert elements[2][0].dtype == torch.int32 and elements[2][0].tolist() == [2, 2, 2]
    assert elements[1][1].dtype == torch.float32 and float(elements[1][1]) == 0.5
    with pytest.raises(TypeError, match='output_signature'):
        Dataset.from_generator(generate)


def test_padded_batch():
    def generate():
        for n in (1, 3, 2):
            yield list(range(1, n + 1))
    dataset = Dataset.from_generator(generate, output_types=tf.int32)
    assert _values(dataset.padded_batch(2)) == [[[1, 0, 0], [1, 2, 3]], [[1, 2]]]
    assert _values(dataset.padded_batch(3, padded_shapes=[4], padding_values=-1)) == [
        [[1, -1, -1, -1], [1, 2, 3, -1], [1, 2, -1, -1]]]


def test_unbatch_enumerate_zip_concatenate():
    assert _values(Dataset.from_tensor_slices(X).batch(4).unbatch().map(
        lambda x: x[0])) == X[:, 0].tolist()
    indices, values = zip(*Dataset.range(3, 6).enumerate(start=1))
    assert [int(i) for i in indices] == [1, 2, 3] and [int(v) for v in values] == [3, 4, 5]
    zipped = list(Dataset.zip((Dataset.range(3), Dataset.range(10, 20))))
    assert [(int(a), int(b)) for a, b in zipped] == [(0, 10), (1, 11), (2, 12)]
    assert _values(Dataset.range(2).concatenate(Dataset.range(5, 6))) == [0, 1, 5]


def test_cardinality_and_autotune():
    assert int(Dataset.range(10).batch(3).cardinality()) == 4
    assert int(Dataset.range(10).repeat().cardinality()) == tf.data.INFINITE_CARDINALITY
    assert int(Dataset.range(10).filter(lambda x: x > 2).cardinality()) == \
        tf.data.UNKNOWN_CARDINALITY
    assert int(tf.data.experimental.cardinality(Dataset.range(4).take(2))) == 2
    assert tf.data.AUTOTUNE == tf.data.experimental.AUTOTUNE
    assert Dataset.range(5).prefetch(tf.data.AUTOTUNE) is not None


def test_element_spec():
    dataset = Dataset.from_tensor_slices((X, Y))
    assert dataset.element_spec == (tf.TensorSpec((2,), tf.float32),
                                    tf.TensorSpec((), tf.int64))
    assert dataset.batch(4).element_spec == (tf.TensorSpec((None, 2), tf.float32),
                                             tf.TensorSpec((None,), tf.int64))
    assert dataset.batch(4, drop_remainder=True).element_spec[1] == tf.TensorSpec((4,),
                                                                                  tf.int64)


def test_from_tensors_and_strings():
    assert [e.tolist() for e in Dataset.from_tensors(X[:2])] == [X[:2].tolist()]
    words = list(Dataset.from_tensor_slices(['a', 'bc']))
    assert [w.numpy() for w in words] == [b'a', b'bc']  # string tensors: TF's bytes
    assert words[0].dtype == tf.string


def test_missing_names_point_at_the_document():
    with pytest.raises(AttributeError, match=r'tf\.data\.FixedLengthRecordDataset: torchk does'):
        tf.data.FixedLengthRecordDataset


@pytest.mark.parametrize('num_shards, index, expected', [
    (3, 0, [0, 3, 6, 9]), (3, 2, [2, 5, 8]), (1, 0, list(range(10)))])
def test_shard(num_shards, index, expected):
    sharded = Dataset.from_tensor_slices(Y).shard(num_shards, index)
    assert [int(v) for v in sharded] == expected
    assert len(sharded) == len(expected)


def test_shard_checks_its_index():
    with pytest.raises(ValueError, match=r'index must be in \[0, num_shards=2\); got 2'):
        Dataset.from_tensor_slices(Y).shard(2, 2)


def test_options_are_kept_and_change_nothing():
    # TF 2.21: options never set read None; with_options keeps the elements.
    options = tf.data.Options()
    assert options.experimental_distribute.auto_shard_policy is None
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA)
    options.experimental_optimization.map_fusion = True
    dataset = tf.data.Dataset.range(6).batch(4)
    optioned = dataset.with_options(options)
    assert [b.tolist() for b in optioned] == [[0, 1, 2, 3], [4, 5]]
    assert optioned.options().experimental_distribute.auto_shard_policy == 2
    assert optioned.cardinality() == dataset.cardinality()
    assert dataset.options().experimental_distribute.auto_shard_policy is None
    with pytest.raises(AttributeError, match='no option'):
        options.experimental_distribute.auto_shard = 1
