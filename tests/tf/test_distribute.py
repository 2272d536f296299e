"""tf.distribute in one process: the strategies' contexts, reduce, the batch split and the
loss scaling of custom loops. Two processes (gloo, under torchrun) are tested in
tests/integration/test_tf_distribute.py."""
import json

import numpy as np
import pytest
import torch

import torchk.tf as tf

distribute = tf.distribute


def test_default_strategy_outside_any_scope(single_process):
    strategy = distribute.get_strategy()
    assert not distribute.has_strategy()
    assert not distribute.in_cross_replica_context()
    assert strategy.num_replicas_in_sync == 1
    context = distribute.get_replica_context()
    assert context.num_replicas_in_sync == 1 and context.replica_id_in_sync_group == 0
    assert distribute.get_strategy() is strategy


@pytest.mark.parametrize('make', [
    distribute.MirroredStrategy, distribute.MultiWorkerMirroredStrategy,
    distribute.experimental.MultiWorkerMirroredStrategy,
    lambda: distribute.OneDeviceStrategy('/cpu:0'),
    lambda: distribute.MirroredStrategy(cross_device_ops=distribute.NcclAllReduce()),
], ids=['mirrored', 'multi_worker', 'experimental_multi_worker', 'one_device',
        'mirrored_nccl'])
def test_scope_and_run_contexts_on_one_device(single_process, make):
    strategy = make()
    assert strategy.num_replicas_in_sync == 1
    with strategy.scope():
        assert distribute.get_strategy() is strategy
        assert distribute.has_strategy() and distribute.in_cross_replica_context()
        assert distribute.get_replica_context() is None

        def replica_fn(value):
            context = distribute.get_replica_context()
            assert not distribute.in_cross_replica_context()
            return value * 2, context.replica_id_in_sync_group, context.strategy
        assert strategy.run(replica_fn, args=(torch.tensor(3.),)) == (6., 0, strategy)
    assert not distribute.has_strategy()
    assert strategy.extended.should_checkpoint and strategy.extended.should_save_summary
    assert strategy.experimental_local_results(5) == (5,)


def test_mixing_strategies_raises(single_process):
    one, other = distribute.MirroredStrategy(), distribute.OneDeviceStrategy('/gpu:0')
    with one.scope():
        with one.scope():
            assert distribute.get_strategy() is one
        with pytest.raises(ValueError, match='Mixing different tf.distribute.Strategy'):
            with other.scope():
                pass


@pytest.mark.parametrize('op, axis, expected', [
    (distribute.ReduceOp.SUM, None, [[1., 2.], [3., 6.]]),
    (distribute.ReduceOp.MEAN, None, [[1., 2.], [3., 6.]]),
    ('sum', 0, [4., 8.]),
    ('MEAN', 0, [2., 4.]),
    (distribute.ReduceOp.MEAN, 1, [1.5, 4.5]),
])
def test_reduce_of_one_replica(single_process, op, axis, expected):
    strategy = distribute.MirroredStrategy()
    value = strategy.reduce(op, np.array([[1., 2.], [3., 6.]], dtype='float32'), axis=axis)
    np.testing.assert_allclose(value.numpy(), expected)


def test_reduce_of_a_structure_and_a_bad_op(single_process):
    strategy = distribute.MirroredStrategy()
    result = strategy.reduce('SUM', {'a': torch.ones(3), 'b': (torch.tensor(2.),)}, axis=0)
    assert float(result['a']) == 3. and float(result['b'][0]) == 2.
    with pytest.raises(ValueError, match='ReduceOp.SUM or ReduceOp.MEAN'):
        strategy.reduce('MAX', torch.ones(2))
    context_sum = strategy.run(lambda: distribute.get_replica_context().all_reduce(
        distribute.ReduceOp.SUM, torch.tensor([1., 2.])))
    np.testing.assert_allclose(context_sum.numpy(), [1., 2.])


@pytest.mark.parametrize('rows, replicas, expected', [
    (8, 2, [[0, 1, 2, 3], [4, 5, 6, 7]]),
    (5, 2, [[0, 1], [2, 3, 4]]),
    (7, 3, [[0, 1], [2, 3], [4, 5, 6]]),
    (2, 3, [[0], [1], [0]]),
])
def test_replica_share_covers_the_batch_in_order(rows, replicas, expected):
    x = np.arange(rows)
    batch = ({'x': x, 'mask': None}, torch.arange(rows) * 10)
    shares = [distribute.replica_share(batch, r, replicas) for r in range(replicas)]
    assert [s[0]['x'].tolist() for s in shares] == expected
    assert [(s[1] // 10).tolist() for s in shares] == expected
    assert all(s[0]['mask'] is None for s in shares)


@pytest.mark.parametrize('batch, message', [
    ((np.zeros(3), np.zeros(4)), r'one length .*\[3, 4\]'),
    ((np.zeros(3), np.float32(1)), 'one length'),
    ((np.zeros(0),), 'empty batch'),
])
def test_replica_share_refuses_batches_it_cannot_split(batch, message):
    with pytest.raises(ValueError, match=message):
        distribute.replica_share(batch, 0, 2)


def test_distributed_datasets_of_one_replica(single_process):
    strategy = distribute.MirroredStrategy()
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(10.)).batch(4)
    assert [b.tolist() for b in strategy.experimental_distribute_dataset(dataset)] == \
        [b.tolist() for b in dataset]
    seen = []

    def dataset_fn(context):
        seen.append((context.num_input_pipelines, context.input_pipeline_id,
                     context.num_replicas_in_sync, context.get_per_replica_batch_size(8)))
        return tf.data.Dataset.from_tensor_slices(np.arange(10.)).shard(
            context.num_input_pipelines, context.input_pipeline_id).batch(
                context.get_per_replica_batch_size(4))
    batches = list(strategy.distribute_datasets_from_function(dataset_fn))
    assert seen == [(1, 0, 1, 8)]
    assert [b.tolist() for b in batches] == [[0., 1., 2., 3.], [4., 5., 6., 7.], [8., 9.]]


def test_input_context_needs_a_divisible_global_batch():
    with pytest.raises(ValueError, match='does not divide by num_replicas_in_sync 2'):
        distribute.InputContext(2, 0, 2).get_per_replica_batch_size(5)
    assert distribute.InputContext(2, 1, 2).get_per_replica_batch_size(6) == 3


@pytest.mark.parametrize('make, message', [
    (lambda: distribute.MultiWorkerMirroredStrategy(cluster_resolver=object()),
     "from torchrun's environment"),
    (lambda: distribute.OneDeviceStrategy(0), 'device name'),
])
def test_strategies_refuse_what_torchrun_decides(single_process, make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_multi_worker_tf_config_without_torchrun_raises(single_process, monkeypatch):
    monkeypatch.setenv('TF_CONFIG', json.dumps({
        'cluster': {'worker': ['host1:2222', 'host2:2222']},
        'task': {'type': 'worker', 'index': 0}}))
    with pytest.raises(ValueError, match='TF_CONFIG describes a cluster of several tasks'):
        distribute.MultiWorkerMirroredStrategy()


def test_multi_worker_cluster_resolver_names_the_chief(single_process):
    resolver = distribute.MultiWorkerMirroredStrategy(
        communication_options=distribute.experimental.CommunicationOptions(
            bytes_per_pack=1024)).cluster_resolver
    assert (resolver.task_type, resolver.task_id) == ('worker', 0)


@pytest.mark.parametrize('path, missing', [
    ('TPUStrategy', 'TPUStrategy'),
    ('cluster_resolver.TFConfigClusterResolver', 'cluster_resolver'),
    ('experimental.ParameterServerStrategy', 'experimental.ParameterServerStrategy')])
def test_missing_names_raise_the_documented_error(path, missing):
    with pytest.raises(AttributeError, match=r'^tf\.distribute\.%s: torchk does not provide '
                                             r'it.*docs/TF_SUBSET.md' % missing.replace('.', r'\.')):
        value = distribute
        for name in path.split('.'):
            value = getattr(value, name)


def test_compute_average_loss():
    losses = torch.tensor([1., 2., 3., 6.])
    assert float(tf.nn.compute_average_loss(losses)) == 3.
    assert float(tf.nn.compute_average_loss(losses, global_batch_size=8)) == 1.5
    weighted = tf.nn.compute_average_loss(losses, sample_weight=torch.tensor([1., 0., 0., 1.]),
                                          global_batch_size=np.int64(2))
    assert float(weighted) == 3.5
    per_step = tf.nn.compute_average_loss(torch.ones(2, 3), global_batch_size=4)
    assert float(per_step) == 1.5


@pytest.mark.parametrize('losses, size, message', [
    (torch.tensor(1.), 4, 'must have a batch axis'),
    (torch.ones(4), 0, 'positive integer'),
    (torch.ones(4), 2.5, 'positive integer'),
])
def test_compute_average_loss_refuses_bad_arguments(losses, size, message):
    with pytest.raises(ValueError, match=message):
        tf.nn.compute_average_loss(losses, global_batch_size=size)


def test_loss_scaling_needs_the_replica_context(single_process):
    strategy = distribute.MirroredStrategy()
    with strategy.scope():
        with pytest.raises(RuntimeError, match='cross-replica context'):
            tf.nn.compute_average_loss(torch.ones(4))
        total = strategy.run(tf.nn.scale_regularization_loss,
                             args=([torch.tensor(1.), torch.tensor([2., 3.])],))
    assert float(total) == 6.
    assert float(tf.nn.scale_regularization_loss(torch.tensor(4.))) == 4.


def test_distributed_iterator_optional_spec_and_values(single_process):
    # TF 2.21, one replica: the iterator's optional is empty after the last batch,
    # get_next raises OutOfRangeError, element_spec is the dataset's, and
    # experimental_distribute_values_from_function calls the function with replica 0 of 1.
    strategy = tf.distribute.MirroredStrategy()
    dataset = tf.data.Dataset.range(5).batch(2)
    distributed = strategy.experimental_distribute_dataset(dataset)
    assert distributed.element_spec == dataset.element_spec
    iterator = iter(distributed)
    assert next(iterator).tolist() == [0, 1]
    assert iterator.get_next().tolist() == [2, 3]
    optional = iterator.get_next_as_optional()
    assert bool(optional.has_value()) and optional.get_value().tolist() == [4]
    empty = iterator.get_next_as_optional()
    assert not bool(empty.has_value())
    with pytest.raises(tf.errors.InvalidArgumentError):
        empty.get_value()
    with pytest.raises(tf.errors.OutOfRangeError):
        iterator.get_next()
    seen = strategy.experimental_distribute_values_from_function(
        lambda context: (context.replica_id_in_sync_group, context.num_replicas_in_sync))
    assert seen == (0, 1)


def test_a_strategy_of_several_devices_is_made_and_refuses_use():
    """TF's distributed training guide makes `MirroredStrategy(devices=["/gpu:0", "/gpu:1"])`
    and goes on; using it in one process needs torchrun's processes."""
    strategy = tf.distribute.MirroredStrategy(devices=['/gpu:0', '/gpu:1'])
    with pytest.raises(ValueError, match='torchrun --nproc-per-node 2'):
        with strategy.scope():
            pass
    with pytest.raises(ValueError, match='one replica per process'):
        strategy.run(lambda: 1)


def test_central_storage_strategy_is_one_replica_per_process():
    strategy = tf.distribute.experimental.CentralStorageStrategy()
    assert strategy.num_replicas_in_sync == 1
    with strategy.scope():
        variable = tf.Variable(2.)
    assert float(strategy.run(lambda: variable * 3.)) == 6.
