"""torchk.distributed in one process: a world of one, bucketing and compression.

Two-process behaviour (gloo) is tested in tests/integration/test_distributed.py.
"""
import numpy as np
import pytest
import torch

import keras
import torchk.distributed as hvd
from torchk.distributed import optimizer as distributed_optimizer


@pytest.fixture
def world_of_one(monkeypatch):
    monkeypatch.delenv('WORLD_SIZE', raising=False)
    hvd.init()
    yield
    hvd.shutdown()


def test_a_process_without_torchrun_is_a_world_of_one(world_of_one):
    assert (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size()) == (0, 1, 0, 1)
    assert hvd.is_initialized()
    x = np.arange(3.0)
    assert hvd.allreduce(x) is x
    assert hvd.allgather(x) is x
    assert hvd.broadcast(x, 0) is x
    assert hvd.shard(x) is x


def test_rank_before_init_names_init():
    with pytest.raises(ValueError, match=r'init\(\)'):
        hvd.rank()


def test_distributed_optimizer_rejects_non_keras_optimizers():
    with pytest.raises(TypeError, match='keras.optimizers.Optimizer'):
        hvd.DistributedOptimizer(torch.optim.SGD([torch.zeros(1)], lr=0.1))


def _trained_weights(optimizer):
    np.random.seed(0)
    torch.manual_seed(0)
    model = keras.models.Sequential([keras.layers.Dense(4, activation='tanh', input_shape=(3,)),
                                     keras.layers.Dense(2)])
    model.compile(optimizer, 'mse')
    rng = np.random.RandomState(1)
    for _ in range(3):
        model.train_on_batch(rng.randn(8, 3), rng.randn(8, 2))
    return model.get_weights()


@pytest.mark.parametrize('make', [
    lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    lambda: keras.optimizers.Adam(0.01, clipnorm=0.1),
    lambda: keras.optimizers.RMSprop(0.01, clipvalue=0.01),
], ids=['sgd', 'adam_clipnorm', 'rmsprop_clipvalue'])
def test_world_of_one_trains_like_the_wrapped_optimizer(world_of_one, make):
    for got, expected in zip(_trained_weights(hvd.DistributedOptimizer(make())),
                             _trained_weights(make())):
        np.testing.assert_array_equal(got, expected)


def test_wrapped_optimizer_keeps_its_class_name_and_config():
    sgd = keras.optimizers.SGD(0.3, momentum=0.5)
    wrapped = hvd.DistributedOptimizer(sgd, compression=hvd.Compression.fp16)
    assert isinstance(wrapped, keras.optimizers.SGD)
    assert type(wrapped).__name__ == 'SGD'
    assert wrapped.get_config() == sgd.get_config()
    assert type(sgd) is keras.optimizers.SGD
    rewrapped = hvd.DistributedOptimizer(wrapped)
    assert type(rewrapped).__mro__[1] is keras.optimizers.SGD


def test_load_model_makes_the_optimizer_distributed(world_of_one, tmp_path):
    model = keras.models.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    model.compile(keras.optimizers.Adam(0.01), 'mse')
    model.train_on_batch(np.ones((4, 3)), np.ones((4, 2)))
    model.save(str(tmp_path / 'm.h5'))
    loaded = hvd.load_model(str(tmp_path / 'm.h5'))
    assert type(loaded.optimizer).get_gradients is type(
        hvd.DistributedOptimizer(keras.optimizers.Adam())).get_gradients
    for got, expected in zip(loaded.optimizer.get_weights(), model.optimizer.get_weights()):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize('sizes, dtypes, bucket_bytes, expected', [
    ([2, 3, 4], ['float32'] * 3, 64, [[0, 1, 2]]),
    ([2, 3, 4], ['float32'] * 3, 20, [[0, 1], [2]]),
    ([2, 3, 4], ['float32'] * 3, 1, [[0], [1], [2]]),
    ([8, 1, 1], ['float32', 'float64', 'float32'], 64, [[0, 2], [1]]),
])
def test_bucket_plan(sizes, dtypes, bucket_bytes, expected):
    grads = [torch.zeros(n, dtype=getattr(torch, d)) for n, d in zip(sizes, dtypes)]
    assert distributed_optimizer.bucket_plan(grads, bucket_bytes) == expected


@pytest.mark.parametrize('compression, wire_dtype', [
    (hvd.Compression.none, torch.float32), (hvd.Compression.fp16, torch.float16)])
def test_compression_round_trip(compression, wire_dtype):
    values = torch.tensor([1.0, 1.0 / 3.0, -2.5])
    wire = compression.compress(values)
    assert wire.dtype == wire_dtype
    back = compression.decompress(wire, torch.float32)
    assert back.dtype == torch.float32
    np.testing.assert_allclose(back.numpy(), values.numpy(), rtol=1e-3)


def test_average_gradients_records_one_node_for_all_gradients():
    from keras import backend as K
    a, b = K.placeholder((2, 3)), K.placeholder((4,))
    averaged = hvd.average_gradients([a * 2, b + 1])
    assert [x.shape for x in averaged] == [(2, 3), (4,)]
    assert averaged[0].node is averaged[1].node
    assert averaged[0].node.name == 'average_gradients'
