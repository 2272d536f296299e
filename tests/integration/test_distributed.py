"""torchk.distributed on two CPU processes (gloo), checked against one process.

The pytest process starts two workers (this file run as a script, with the environment
torchrun would give them) once per scenario; they write what they saw to `.npz` files, and
the tests compare ranks with each other and with references a single process computes.
"""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = 4       # per-rank batch
STEPS = 3
TIMEOUT = 600  # generous: the suite's other workers may share the two cores


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def worker_environment(keras_home):
    """The environment of a worker process: this checkout's torchk, on the CPU, one thread."""
    env = dict(os.environ, PYTHONPATH=REPO, KERAS_BACKEND='torchk.core', KERAS_HOME=keras_home,
               TORCHK_DEVICE='cpu', OMP_NUM_THREADS='1')
    env.pop('WORLD_SIZE', None)
    return env


def launch(scenario, out_dir, world=2, timeout=TIMEOUT, device='cpu'):
    """Runs this file as `world` ranks of `scenario`; returns their `CompletedProcess`es.

    The port is picked free, then released until rank 0 binds it: on a busy machine another
    test's process can take it first, and that run is made again on a new port."""
    for _ in range(3):
        results = _launch(scenario, out_dir, world, timeout, device)
        if not any('EADDRINUSE' in r.stderr or 'address already in use' in r.stderr.lower()
                   for r in results):
            return results
    return results


def _launch(scenario, out_dir, world, timeout, device):
    env = worker_environment(str(out_dir))
    env['TORCHK_DEVICE'] = device
    env.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(_free_port()), WORLD_SIZE=str(world),
               LOCAL_WORLD_SIZE=str(world))
    processes = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), scenario, str(out_dir)],
        env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    results = []
    try:
        for p in processes:
            out, err = p.communicate(timeout=timeout)
            results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    return results


# ------------------------------------------------------------------------------------------
# Worker side.

def _data(seed, n, kind):
    rng = np.random.RandomState(seed)
    if kind == 'tokens':
        # Rank 0's halves of each global batch use ids 0-5, rank 1's ids 4-9: some embedding
        # rows get gradients from one rank only.
        x = np.concatenate([np.concatenate([rng.randint(0, 6, (B, 4)), rng.randint(4, 10, (B, 4))])
                            for _ in range(n // (2 * B))])
        return x, rng.randn(n, 1).astype('float32')
    return rng.randn(n, 5).astype('float32'), rng.randn(n, 3).astype('float32')


def _dense_model():
    import keras
    return keras.models.Sequential([keras.layers.Dense(8, activation='tanh', input_shape=(5,)),
                                    keras.layers.Dense(3)])


def _bn_embedding_model():
    import keras
    from keras import layers
    tokens = layers.Input((4,), dtype='int32')
    h = layers.Flatten()(layers.Embedding(10, 3)(tokens))
    h = layers.Activation('relu')(layers.BatchNormalization()(layers.Dense(6)(h)))
    return keras.models.Model(tokens, layers.Dense(1)(h))


CASES = {
    # name: (model, optimizer, data kind, (rtol, atol)); float16 gradients carry ~3 digits.
    'sgd': (_dense_model, ('SGD', {'lr': 0.1, 'momentum': 0.9}), 'dense', (1e-5, 1e-7)),
    'adam': (_dense_model, ('Adam', {'lr': 0.01}), 'dense', (1e-5, 1e-7)),
    'sgd_clipnorm': (_dense_model, ('SGD', {'lr': 0.1, 'clipnorm': 0.05}), 'dense',
                     (1e-5, 1e-7)),
    'sgd_fp16': (_dense_model, ('SGD', {'lr': 0.1}), 'dense', (1e-3, 1e-4)),
    'bn_embedding': (_bn_embedding_model, ('SGD', {'lr': 0.1}), 'tokens', (1e-5, 1e-7)),
}


def _seeded(build, seed=7):
    import torch
    np.random.seed(seed)
    torch.manual_seed(seed)
    return build()


def _train_case(name, hvd, out):
    import keras
    build, (optimizer_name, config), kind, _ = CASES[name]
    x, y = _data(3, 2 * B * STEPS, kind)
    rank = hvd.rank()
    model = _seeded(build)
    compression = hvd.Compression.fp16 if name.endswith('fp16') else hvd.Compression.none
    optimizer = getattr(keras.optimizers, optimizer_name)(**config)
    model.compile(hvd.DistributedOptimizer(optimizer, compression=compression), 'mse')
    for step in range(STEPS):
        start = (2 * step + rank) * B
        model.train_on_batch(x[start:start + B], y[start:start + B])
    out[name] = model.get_weights()
    in_get_weights_order = [w for layer in model.layers for w in layer.weights]
    out[name + '/moving'] = np.array([i for i, w in enumerate(in_get_weights_order)
                                      if 'moving' in w.name], dtype=int)
    if rank == 0:
        out[name + '/reference'] = _reference(build, optimizer_name, config, x, y)


def _reference(build, optimizer_name, config, x, y):
    """One process on the global batch `2B`. With BatchNormalization, each half is
    normalized with its own statistics as each rank does: the model is applied to both
    halves with shared weights and the two losses are averaged."""
    import keras
    base = _seeded(build)
    optimizer = getattr(keras.optimizers, optimizer_name)(**config)
    if build is _bn_embedding_model:
        halves = [keras.layers.Input((4,), dtype='int32') for _ in range(2)]
        model = keras.models.Model(halves, [base(h) for h in halves])
        model.compile(optimizer, 'mse', loss_weights=[0.5, 0.5])
        for step in range(STEPS):
            batch = slice(2 * step * B, 2 * (step + 1) * B)
            xs, ys = x[batch], y[batch]
            model.train_on_batch([xs[:B], xs[B:]], [ys[:B], ys[B:]])
    else:
        base.compile(optimizer, 'mse')
        for step in range(STEPS):
            batch = slice(2 * step * B, 2 * (step + 1) * B)
            base.train_on_batch(x[batch], y[batch])
    return base.get_weights()


def _broadcast_case(hvd, out, out_dir):
    """Rank 0 resumes a model trained alone (weights and Adam state, with `load_model`);
    rank 1 starts from other weights and a fresh optimizer. Recorded just after the
    broadcast callback and after training."""
    import keras
    from keras import backend as K
    rank = hvd.rank()
    if rank == 0:
        trained = _seeded(_dense_model, seed=100)
        trained.compile(keras.optimizers.Adam(0.01), 'mse')
        for step in range(2):
            trained.train_on_batch(*_data(30 + step, B, 'dense'))
        path = os.path.join(out_dir, 'trained.h5')
        trained.save(path)
        model = hvd.load_model(path)
    else:
        model = _seeded(_dense_model, seed=101)
        model.compile(hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), 'mse')
        model._make_train_function()
    out['broadcast/before'] = model.get_weights() + K.batch_get_value(model.optimizer.weights)

    class Record(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            out['broadcast/begin'] = (model.get_weights() +
                                      K.batch_get_value(model.optimizer.weights))
    x, y = _data(10 + rank, 2 * B, 'dense')
    model.fit(x, y, batch_size=B, epochs=1, verbose=0, shuffle=False,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), Record()])
    out['broadcast/after'] = model.get_weights()


def _callbacks_case(hvd, out):
    """Metric averaging, and the warm-up schedule seen at each batch."""
    import keras
    from keras import backend as K
    model = _seeded(_dense_model)
    model.compile(hvd.DistributedOptimizer(keras.optimizers.SGD(0.2, momentum=0.5)), 'mse',
                  metrics=['mae'])
    seen = {'lr': [], 'momentum': [], 'momentum_after': []}

    class Record(keras.callbacks.Callback):
        def __init__(self, key):
            super().__init__()
            self.key = key

        def on_batch_begin(self, batch, logs=None):
            if self.key == 'averaged':
                seen['lr'].append(K.get_value(model.optimizer.lr))
                seen['momentum'].append(K.get_value(model.optimizer.momentum))

        def on_batch_end(self, batch, logs=None):
            if self.key == 'averaged':
                seen['momentum_after'].append(K.get_value(model.optimizer.momentum))

        def on_epoch_end(self, epoch, logs=None):
            keys = sorted(k for k in logs if k != 'lr')
            out['logs/%s/%d' % (self.key, epoch)] = np.array([logs[k] for k in keys])
            out['logs/keys'] = np.array(keys)

    x, y = _data(20 + hvd.rank(), 3 * B, 'dense')
    model.fit(x, y, batch_size=B, epochs=2, verbose=0, shuffle=False, validation_split=0.25,
              callbacks=[Record('local'), hvd.callbacks.MetricAverageCallback(),
                         hvd.callbacks.LearningRateWarmupCallback(0.2, warmup_epochs=2),
                         Record('averaged')])
    for key, values in seen.items():
        out['schedule/' + key] = np.array(values)


def _collectives_case(hvd, out):
    import torch
    rank = hvd.rank()
    out['allreduce'] = hvd.allreduce(np.array([1.0, 2.0]) * (rank + 1))
    out['allreduce_sum'] = hvd.allreduce(torch.tensor([rank + 1]), average=False).numpy()
    out['allgather'] = hvd.allgather(np.full((rank + 1, 2), rank))
    out['broadcast'] = hvd.broadcast(torch.full((3,), float(rank)), 1).numpy()
    sparse = torch.sparse_coo_tensor([[rank]], [[1.0, 2.0]], (3, 2), check_invariants=True)
    average = hvd.average_gradients([torch.full((2, 3), float(rank)), sparse])
    out['average_dense'], out['average_sparse'] = [a.numpy() for a in average]


def _shard_case(hvd, out):
    import keras
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from torchk.interop import DataLoaderSequence
    out['shard/array'] = hvd.shard(np.arange(7))
    out['shard/dict'] = hvd.shard({'a': np.arange(7)})['a']

    class Batches(keras.utils.Sequence):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.array([i])

    for name, data in [('sequence', Batches()), ('loader', DataLoaderSequence(DataLoader(
            TensorDataset(torch.arange(10)), batch_size=2, shuffle=True)))]:
        sharded = hvd.shard(data, seed=1)
        epochs = []
        for _ in range(2):
            epochs.append(np.concatenate([np.ravel(sharded[i]) for i in range(len(sharded))]))
            sharded.on_epoch_end()
        out['shard/' + name] = np.stack(epochs)


def _fail_case(hvd, out):
    import keras
    model = _seeded(_dense_model)
    model.compile(hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), 'mse')
    x, y = _data(0, B, 'dense')
    model.train_on_batch(x, y)
    if hvd.rank() == 1:
        raise ValueError('rank 1 stops on purpose')
    for _ in range(100):
        model.train_on_batch(x, y)


def _worker(scenario, out_dir):
    import torch
    torch.set_num_threads(1)
    import torchk.distributed as hvd
    hvd.init(timeout_seconds=30)
    out = {}
    if scenario == 'fail':
        _fail_case(hvd, out)
    elif scenario == 'nccl':
        import torch.distributed as dist
        out['backend'] = np.array(dist.get_backend())
        _train_case('sgd', hvd, out)
        out['allreduce'] = hvd.allreduce(np.array([1.0, 2.0]) * (hvd.rank() + 1))
    else:
        for name in CASES:
            _train_case(name, hvd, out)
        _broadcast_case(hvd, out, out_dir)
        _callbacks_case(hvd, out)
        _collectives_case(hvd, out)
        _shard_case(hvd, out)
    flat = {}
    for key, value in out.items():
        if isinstance(value, list):
            flat.update({'%s/%d' % (key, i): v for i, v in enumerate(value)})
        else:
            flat[key] = value
    np.savez(os.path.join(out_dir, 'rank%d.npz' % hvd.rank()), **flat)
    hvd.shutdown()


# ------------------------------------------------------------------------------------------
# Tests.

@pytest.fixture(scope='module')
def ranks(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp('distributed')
    results = launch('train', out_dir)
    for r, result in enumerate(results):
        assert result.returncode == 0, 'rank %d failed:\n%s' % (r, result.stderr[-4000:])
    return [dict(np.load(out_dir / ('rank%d.npz' % r))) for r in range(2)]


def _list(results, key):
    return [results[k] for k in sorted((k for k in results if k.startswith(key + '/')
                                        and k[len(key) + 1:].isdigit()),
                                       key=lambda k: int(k.rsplit('/', 1)[1]))]


@pytest.mark.parametrize('case', sorted(CASES))
def test_two_ranks_train_like_one_process_on_the_global_batch(ranks, case):
    rtol, atol = CASES[case][3]
    reference = _list(ranks[0], case + '/reference')
    weights = [_list(r, case) for r in ranks]
    moving = list(ranks[0][case + '/moving'])
    assert len(weights[0]) == len(reference)
    for i, expected in enumerate(reference):
        if i in moving:
            continue
        np.testing.assert_array_equal(weights[0][i], weights[1][i])
        np.testing.assert_allclose(weights[0][i], expected, rtol=rtol, atol=atol)


def test_batch_normalization_moving_statistics_stay_per_rank(ranks):
    """As in Horovod, BN statistics are not averaged: rank 0's equal those of the reference
    (its first half, whose update is the one Keras' twice-called layer keeps), rank 1's
    differ."""
    reference = _list(ranks[0], 'bn_embedding/reference')
    weights = [_list(r, 'bn_embedding') for r in ranks]
    moving = list(ranks[0]['bn_embedding/moving'])
    assert len(moving) == 2
    for i in moving:
        np.testing.assert_allclose(weights[0][i], reference[i], rtol=1e-5, atol=1e-7)
        assert not np.allclose(weights[0][i], weights[1][i])


def test_clipnorm_applies_to_the_averaged_gradient(ranks):
    """Clipping each rank's gradient before averaging would give a different update than
    the one-process reference that the parametrized test above matches."""
    reference = _list(ranks[0], 'sgd_clipnorm/reference')
    unclipped = _list(ranks[0], 'sgd/reference')
    assert not np.allclose(reference[0], unclipped[0])


def test_fp16_compression_rounds_the_gradients(ranks):
    deviation = [np.abs(w - r).max() for w, r in zip(_list(ranks[0], 'sgd_fp16'),
                                                    _list(ranks[0], 'sgd_fp16/reference'))]
    assert max(deviation) > 1e-6


def test_broadcast_callback_gives_every_rank_root_weights_and_optimizer_state(ranks):
    """Also when rank 0 alone restored a model and its optimizer state with load_model."""
    before = [_list(r, 'broadcast/before') for r in ranks]
    begin = [_list(r, 'broadcast/begin') for r in ranks]
    iterations = 4  # after the model's 4 weights
    assert before[0][iterations] == 2 and before[1][iterations] == 0
    assert not np.allclose(before[0][0], before[1][0])
    assert not np.allclose(before[0][iterations + 1], before[1][iterations + 1])
    for root, other, expected in zip(begin[0], begin[1], before[0]):
        np.testing.assert_array_equal(root, expected)
        np.testing.assert_array_equal(other, expected)
    for a, b in zip(_list(ranks[0], 'broadcast/after'), _list(ranks[1], 'broadcast/after')):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('epoch', [0, 1])
def test_metric_average_callback_averages_epoch_logs(ranks, epoch):
    local = [r['logs/local/%d' % epoch] for r in ranks]
    assert not np.allclose(local[0], local[1])
    for r in ranks:
        np.testing.assert_allclose(r['logs/averaged/%d' % epoch], (local[0] + local[1]) / 2,
                                   rtol=1e-6)


def test_learning_rate_warmup_schedule(ranks):
    steps, world, warmup, lr = 3, 2, 2, 0.2
    epochs = np.array([e + b / steps + 1 / steps for e in range(2) for b in range(steps)])
    expected = lr / world * (epochs * (world - 1) / warmup + 1)
    schedule = ranks[0]
    np.testing.assert_allclose(schedule['schedule/lr'], expected, rtol=1e-6)
    previous = np.concatenate([[lr], expected[:-1]])
    np.testing.assert_allclose(schedule['schedule/momentum'], 0.5 * expected / previous,
                               rtol=1e-6)
    np.testing.assert_allclose(schedule['schedule/momentum_after'], 0.5, rtol=1e-6)


def test_collectives_on_numpy_arrays_and_tensors(ranks):
    for r in ranks:
        np.testing.assert_allclose(r['allreduce'], [1.5, 3.0])
        np.testing.assert_array_equal(r['allreduce_sum'], [3])
        np.testing.assert_array_equal(r['allgather'], [[0, 0], [1, 1], [1, 1]])
        np.testing.assert_array_equal(r['broadcast'], [1.0, 1.0, 1.0])
        np.testing.assert_allclose(r['average_dense'], np.full((2, 3), 0.5))
        np.testing.assert_allclose(r['average_sparse'], [[0.5, 1.0], [0.5, 1.0], [0, 0]])


@pytest.mark.parametrize('name, count', [('array', 7), ('dict', 7), ('sequence', 5),
                                         ('loader', 10)])
def test_shards_have_equal_sizes_and_cover_the_data(ranks, name, count):
    shards = [r['shard/' + name] for r in ranks]
    assert shards[0].shape == shards[1].shape
    epochs = shards[0][None] if shards[0].ndim == 1 else shards[0]
    for epoch in range(len(epochs)):
        seen = np.concatenate([s[epoch] if s.ndim > 1 else s for s in shards])
        assert set(seen) == set(range(count))
    if name in ('sequence', 'loader'):
        assert not np.array_equal(shards[0][0], shards[0][1])


def test_a_failing_rank_stops_the_others_with_an_error(tmp_path):
    results = launch('fail', tmp_path)
    assert results[1].returncode != 0
    assert 'ValueError: rank 1 stops on purpose' in results[1].stderr
    assert results[0].returncode != 0
    assert 'averaging gradients failed on rank 0 of 2' in results[0].stderr


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason='NCCL data parallelism needs two CUDA devices')
def test_two_ranks_on_nccl(tmp_path):
    results = launch('nccl', tmp_path, device='cuda')
    for r, result in enumerate(results):
        assert result.returncode == 0, 'rank %d failed:\n%s' % (r, result.stderr[-4000:])
    ranks = [dict(np.load(tmp_path / ('rank%d.npz' % r))) for r in range(2)]
    assert str(ranks[0]['backend']) == 'nccl'
    for got, other, expected in zip(_list(ranks[0], 'sgd'), _list(ranks[1], 'sgd'),
                                    _list(ranks[0], 'sgd/reference')):
        np.testing.assert_array_equal(got, other)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ranks[1]['allreduce'], [1.5, 3.0])


def test_example_runs_under_torchrun(tmp_path):
    script = os.path.join(REPO, 'examples', 'horovod_style_mnist.py')
    result = subprocess.run(
        [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '2',
         script,
         '--epochs', '2', '--checkpoint', str(tmp_path / 'model.h5')],
        env=worker_environment(str(tmp_path)), capture_output=True, text=True,
        timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary['size'] == 2
    assert summary['val_accuracy'] >= 0.9
    assert (tmp_path / 'model.h5').exists()


if __name__ == '__main__':
    _worker(sys.argv[1], sys.argv[2])
