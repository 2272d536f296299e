"""`tf.distribute`: tf.keras 2's distribution strategies as data parallelism on
torch.distributed, a facade over `torchk.distributed` (the Horovod API's runtime).

A process is one replica. Run a script with `torchrun --nproc-per-node N -m torchk run
train.py` (`--nnodes` across machines): `MirroredStrategy()` and
`MultiWorkerMirroredStrategy()` join the processes torchrun started (`torchk.distributed.init`:
NCCL on GPUs, one GPU per process, gloo on CPUs) and `num_replicas_in_sync` is their number.
Run without torchrun, a script is a world of one process and one replica, and nothing is
communicated. `OneDeviceStrategy` and the default strategy (`get_strategy()` outside any
`scope()`) are one replica in their process.

What the strategies do, as in TF:
- `experimental_distribute_dataset(dataset)` gives each replica its share of every global
  batch (consecutive rows; every process must see the same global batches: seed shuffles
  the same on every process); `distribute_datasets_from_function(fn)` calls `fn` with an
  `InputContext` and gives each replica the dataset it returns.
- `run(fn, args)` calls `fn` in this process' replica; `reduce(ReduceOp.SUM/MEAN, value,
  axis)` combines the replicas' values.
- an optimizer's `apply_gradients` in a replica sums the replicas' gradients (the loss is
  scaled by the global batch: `tf.nn.compute_average_loss`); Keras' `fit` averages them
  (tf.keras scales its compiled loss by `1 / num_replicas_in_sync` and sums). Both are one
  bucketed all-reduce op inside the training step (`torchk.distributed.average_gradients`).
- variables made in `scope()` (or `run`) start with the first replica's values (each is
  broadcast from rank 0 as it is made, so every process must make the same variables in the
  same order, as TF's collective initialization needs too).
- `fit` and `evaluate` on a model built in `scope()` split each global batch between the
  replicas; checkpoints, TensorBoard logs and the progress bar are written by the chief
  (rank 0) only (`extended.should_checkpoint`).
"""
import contextlib
import enum
import json
import os
import threading

import numpy as np
import torch

from .. import config
from .. import distributed
from .. import variables
from ..distributed import runtime
from .. import structure
from .namespaces import Namespace, module_getattr
from .tensors import convert_to_tensor


class ReduceOp(enum.Enum):
    """How `Strategy.reduce` and `ReplicaContext.all_reduce` combine the replicas' values."""
    SUM = 'SUM'
    MEAN = 'MEAN'


def _reduce_op(reduce_op):
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    if isinstance(reduce_op, str) and reduce_op.upper() in ReduceOp.__members__:
        return ReduceOp[reduce_op.upper()]
    raise ValueError('reduce_op must be tf.distribute.ReduceOp.SUM or ReduceOp.MEAN (or '
                     '"SUM", "MEAN"); got %r.' % (reduce_op,))


class _Contexts(threading.local):
    """The strategies entered on this thread, innermost last: `(strategy, replica context
    or None)`."""

    def __init__(self):
        self.stack = []


_contexts = _Contexts()


def get_strategy():
    """The strategy whose `scope()` (or `run`) is entered, else the default strategy."""
    return _contexts.stack[-1][0] if _contexts.stack else _DEFAULT


def has_strategy():
    """True inside a (non-default) strategy's `scope()` or `run`."""
    return bool(_contexts.stack) and _contexts.stack[-1][0] is not _DEFAULT


def in_cross_replica_context():
    """True inside a strategy's `scope()` but not inside its `run`."""
    return bool(_contexts.stack) and _contexts.stack[-1][1] is None


def get_replica_context():
    """The `ReplicaContext` inside `run` (or outside any scope: the default strategy's);
    None in the cross-replica context."""
    if not _contexts.stack:
        return _DEFAULT._replica
    return _contexts.stack[-1][1]


@contextlib.contextmanager
def _entered(strategy, replica):
    unusable = getattr(strategy, '_unusable', None)
    if unusable is not None:
        raise ValueError(unusable)
    if _contexts.stack and _contexts.stack[-1][0] not in (strategy, _DEFAULT) \
            and strategy is not _DEFAULT:
        raise ValueError('Mixing different tf.distribute.Strategy objects: %s is entered '
                         'inside the scope of another, %s.'
                         % (type(strategy).__name__, type(_contexts.stack[-1][0]).__name__))
    _contexts.stack.append((strategy, replica))
    try:
        yield strategy
    finally:
        _contexts.stack.pop()


def _mirror(variable):
    """Gives a variable made in a data-parallel strategy's scope (or `run`) the first
    replica's value, as TF's mirrored variables start: every process makes the same
    variables in the same order, each one broadcast as it is made."""
    strategy = get_strategy()
    if strategy.num_replicas_in_sync > 1:
        runtime.broadcast_variables([variable], 0)


variables.creation_observers.append(_mirror)


class ReplicaContext:
    """Where `Strategy.run`'s function runs: this process' replica.

    # Attributes
        strategy: the strategy.
        num_replicas_in_sync: the number of replicas.
        replica_id_in_sync_group: this replica's index (the process' rank, or 0).
    """

    def __init__(self, strategy):
        self.strategy = strategy

    @property
    def num_replicas_in_sync(self):
        return self.strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self.strategy._rank

    def all_reduce(self, reduce_op, value, options=None):
        """`value` (a tensor or a structure of them) combined over the replicas, on every
        replica."""
        return self.strategy.reduce(reduce_op, value, axis=None)


class InputContext:
    """What `distribute_datasets_from_function` tells the dataset function: the number of
    input pipelines (processes), this one's index, and the number of replicas."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """`global_batch_size / num_replicas_in_sync`.

        # Raises
            ValueError: if `global_batch_size` does not divide by the number of replicas.
        """
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError('global_batch_size %d does not divide by num_replicas_in_sync %d.'
                             % (global_batch_size, self.num_replicas_in_sync))
        return global_batch_size // self.num_replicas_in_sync


class ValueContext:
    """What `experimental_distribute_values_from_function` tells the value function
    (`tf.distribute.experimental.ValueContext`)."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class DistributedDataset:
    """This replica's batches of a dataset (`experimental_distribute_dataset`,
    `distribute_datasets_from_function`): iterate it with `for`, pass its elements to
    `Strategy.run`, or give it to `fit`/`evaluate`."""

    def __init__(self, strategy, batches, split):
        self._strategy = strategy
        self._batches = batches
        self._split = split

    @property
    def element_spec(self):
        """The `TensorSpec`s of this replica's elements: the dataset's, with an unknown
        batch size when its batches are split between replicas."""
        spec = self._batches.element_spec
        if not self._split:
            return spec
        from .data import TensorSpec
        return structure.map_structure(
            lambda s: TensorSpec((None,) + tuple(s.shape[1:]), s.dtype, s.name), spec)

    def __iter__(self):
        return DistributedIterator(self._strategy.split_batch(batch) if self._split else batch
                                   for batch in self._batches)


class Optional:
    """An element that may be missing (`tf.experimental.Optional`, from
    `get_next_as_optional`)."""

    def __init__(self, value=None, has_value=False):
        self._value = value
        self._has_value = has_value

    def has_value(self):
        """A bool tensor: whether there is an element."""
        return torch.tensor(self._has_value)

    def get_value(self):
        """The element.

        # Raises
            InvalidArgumentError: if there is none.
        """
        if not self._has_value:
            from .op_errors import InvalidArgumentError
            raise InvalidArgumentError('Optional.get_value: the optional has no value.')
        return self._value


class DistributedIterator:
    """An iterator over a `DistributedDataset`: `next()`, `get_next()` and
    `get_next_as_optional()`, as TF's."""

    def __init__(self, batches):
        self._batches = iter(batches)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def get_next(self):
        """The next element; raises `tf.errors.OutOfRangeError` at the end."""
        try:
            return next(self._batches)
        except StopIteration:
            from .op_errors import OutOfRangeError
            raise OutOfRangeError('End of sequence') from None

    def get_next_as_optional(self):
        """The next element as an `Optional`, empty at the end."""
        try:
            return Optional(next(self._batches), True)
        except StopIteration:
            return Optional()


class StrategyExtended:
    """`strategy.extended`: which process writes what, and the devices of this process."""

    def __init__(self, strategy):
        self._strategy = strategy

    @property
    def should_checkpoint(self):
        """True on the process that writes checkpoints (rank 0)."""
        return self._strategy._rank == 0

    @property
    def should_save_summary(self):
        """True on the process that writes TensorBoard summaries (rank 0)."""
        return self._strategy._rank == 0

    @property
    def worker_devices(self):
        """This process' device, torchk's (`torchk.config.device()`)."""
        return (str(config.device()),)


class Strategy:
    """A distribution strategy: the base of `MirroredStrategy`,
    `MultiWorkerMirroredStrategy`, `OneDeviceStrategy` and the default strategy.

    # Arguments
        data_parallel: one replica per torchrun process (joining them), else one replica.
        bucket_bytes: the largest all-reduce of gradients (see
            `torchk.distributed.DistributedOptimizer`).
    """

    def __init__(self, data_parallel=False, bucket_bytes=None, timeout_seconds=None):
        if data_parallel and not runtime.is_initialized():
            runtime.init(timeout_seconds)
        self._replicas = runtime.size() if data_parallel else 1
        self._rank = runtime.rank() if data_parallel else 0
        self._bucket_bytes = bucket_bytes or distributed.optimizer.DEFAULT_BUCKET_BYTES
        self._replica = ReplicaContext(self)
        self.extended = StrategyExtended(self)

    @property
    def num_replicas_in_sync(self):
        """The number of replicas: processes for a data-parallel strategy, else 1."""
        return self._replicas

    def scope(self):
        """A context in which models and optimizers are made for this strategy (their
        `fit`, `evaluate` and `apply_gradients` are then distributed)."""
        return _entered(self, None)

    def run(self, fn, args=(), kwargs=None, options=None):
        """Calls `fn(*args, **kwargs)` in this process' replica; returns its result."""
        with _entered(self, self._replica):
            return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        """Combines the replicas' `value`s (a tensor, number or a structure of them).

        # Arguments
            reduce_op: `ReduceOp.SUM` or `ReduceOp.MEAN` (or `"SUM"`, `"MEAN"`).
            value: this replica's value (of `run`).
            axis: also reduce along this axis of each replica's value (`MEAN` then averages
                over all the replicas' elements); None: only across replicas.

        # Returns
            The result as a tensor (structure), the same on every replica.
        """
        op = _reduce_op(reduce_op)
        return structure.map_structure(lambda v: self._reduce_one(op, v, axis), value)

    def _reduce_one(self, op, value, axis):
        tensor = convert_to_tensor(value)
        if axis is None:
            return runtime.allreduce(tensor, average=op is ReduceOp.MEAN) \
                if self._replicas > 1 else tensor
        total = tensor.sum(axis)
        if self._replicas > 1:
            total = runtime.allreduce(total, average=False)
        if op is ReduceOp.SUM:
            return total
        count = tensor.shape[axis]
        if self._replicas > 1:
            count = int(runtime.allreduce(count, average=False))
        return total / count

    def experimental_local_results(self, value):
        """The values of this process' replicas: `(value,)`."""
        return (value,)

    def gather(self, value, axis):
        """The replicas' `value`s (tensors) concatenated along `axis`, in replica order."""
        def gather_one(v):
            tensor = convert_to_tensor(v)
            if self._replicas == 1:
                return tensor
            moved = torch.movedim(tensor, axis, 0)
            return torch.movedim(runtime.allgather(moved.contiguous()), 0, axis)
        return structure.map_structure(gather_one, value)

    def experimental_distribute_dataset(self, dataset, options=None):
        """A `DistributedDataset` giving this replica its share of each of `dataset`'s
        (global) batches."""
        return DistributedDataset(self, dataset, split=self._replicas > 1)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """A `DistributedDataset` of the dataset `dataset_fn(input_context)` returns, whose
        batches are this replica's as they are (`InputContext` says which pipeline this
        is: shard the data with it)."""
        context = InputContext(self._replicas, self._rank, self._replicas)
        return DistributedDataset(self, dataset_fn(context), split=False)

    def experimental_distribute_values_from_function(self, value_fn):
        """This replica's value: `value_fn(ValueContext)`, told the replica's index and the
        number of replicas."""
        return value_fn(ValueContext(self._rank, self._replicas))

    # torchk's hooks for the training loop.

    def split_batch(self, batch):
        """This replica's share of a global `batch` (`replica_share`)."""
        if self._replicas == 1:
            return batch
        return replica_share(batch, self._rank, self._replicas)

    def shuffle(self, order):
        """Shuffles the array `order` in place with numpy's generator to the first replica's
        order, the same on every replica (each replica shuffles, keeping numpy's generators
        in step)."""
        np.random.shuffle(order)
        if self._replicas > 1:
            order[...] = runtime.broadcast(order, 0)

    def aggregate_gradients(self, grads, average):
        """`grads` (tensors or Keras symbols) summed, or averaged, over the replicas: one
        bucketed all-reduce op (`torchk.distributed.average_gradients`)."""
        if self._replicas == 1:
            return list(grads)
        return distributed.average_gradients(grads, bucket_bytes=self._bucket_bytes,
                                             average=average)


def replica_share(batch, replica, replicas):
    """Replica `replica`'s share of a global `batch` (a structure of arrays or tensors of one
    length) split between `replicas`: consecutive rows, as even as they divide. A batch with
    fewer rows than replicas gives replica `i` row `i % rows` (every replica takes a step).

    # Raises
        ValueError: if the leaves' first dimensions differ, a leaf is a scalar or the batch
            is empty.
    """
    leaves = [leaf for leaf in structure.flatten(batch) if leaf is not None]
    lengths = {_rows(leaf) for leaf in leaves}
    if len(lengths) != 1 or None in lengths:
        raise ValueError('A batch to split between replicas needs arrays of one length along '
                         'their first axis; got lengths %s.' % sorted(lengths, key=str))
    rows = lengths.pop()
    if rows == 0:
        raise ValueError('An empty batch cannot be split between replicas.')
    if rows >= replicas:
        index = slice(replica * rows // replicas, (replica + 1) * rows // replicas)
    else:
        index = slice(replica % rows, replica % rows + 1)
    return structure.map_structure(lambda leaf: None if leaf is None else leaf[index], batch)


def _rows(leaf):
    shape = np.shape(leaf)
    return shape[0] if len(shape) else None


class _DefaultStrategy(Strategy):
    """The strategy outside any `scope()`: one replica, nothing communicated."""


_DEFAULT = _DefaultStrategy()


class OneDeviceStrategy(Strategy):
    """One replica on torchk's device (`torchk.config.device()`, as `tf.device` does, the
    `device` argument moves nothing); under torchrun each process trains on its own.

    # Arguments
        device: TF's device name (`'/gpu:0'`, `'/cpu:0'`).
    """

    def __init__(self, device):
        if not isinstance(device, str):
            raise TypeError('OneDeviceStrategy(device) takes a device name such as "/gpu:0"; '
                            'got %r.' % (device,))
        super().__init__()


class MirroredStrategy(Strategy):
    """Synchronous data parallelism with one replica per process that torchrun started (on
    one machine or several), a world of one process without torchrun.

    # Arguments
        devices: accepted for TF's scripts; torchrun gives each process one device, so a
            list of several devices needs as many processes.
        cross_device_ops: accepted (`NcclAllReduce()`, `HierarchicalCopyAllReduce()`,
            `ReductionToOneDevice()`); torch.distributed's all-reduce is used.

    # Raises
        ValueError: from `scope()` and `run()` of a strategy of several `devices` in a
            process not started by torchrun (made, as TF makes it, but not usable).
    """

    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__(data_parallel=True)
        if devices is not None and len(devices) > 1 and self._replicas == 1:
            self._unusable = (
                '%s(devices=%r): torchk runs one replica per process; launch %d processes '
                'with `torchrun --nproc-per-node %d -m torchk run SCRIPT`.'
                % (type(self).__name__, list(devices), len(devices), len(devices)))


class CentralStorageStrategy(MirroredStrategy):
    """`tf.distribute.experimental.CentralStorageStrategy`: TF keeps the variables on one
    device and computes on the others; torchk computes as `MirroredStrategy`, one replica
    per process, each holding its variables.

    # Arguments
        compute_devices: as `MirroredStrategy`'s `devices`.
        parameter_device: accepted (each process holds its variables).
    """

    def __init__(self, compute_devices=None, parameter_device=None):
        super().__init__(devices=compute_devices)


class _TorchrunClusterResolver:
    """`MultiWorkerMirroredStrategy.cluster_resolver`: this process as a worker, its rank
    the task id (rank 0 is the chief)."""

    task_type = 'worker'

    def __init__(self, rank, world):
        self.task_id = rank
        self._world = world

    def cluster_spec(self):
        return {'worker': ['rank %d' % rank for rank in range(self._world)]}


def _check_tf_config():
    """A `TF_CONFIG` naming several tasks in a process that torchrun did not start would
    train alone without saying so."""
    tf_config = os.environ.get('TF_CONFIG')
    if not tf_config or int(os.environ.get('WORLD_SIZE', '1')) > 1:
        return
    cluster = json.loads(tf_config).get('cluster', {})
    if sum(len(tasks) for tasks in cluster.values()) > 1:
        raise ValueError('TF_CONFIG describes a cluster of several tasks, but torchk takes '
                         'its cluster from torchrun: launch the script with `torchrun '
                         '--nnodes M --nproc-per-node N -m torchk run SCRIPT` on each machine '
                         '(TF_CONFIG is not read).')


class CommunicationImplementation(enum.Enum):
    """Accepted for `CommunicationOptions`: torch.distributed picks NCCL on GPUs and gloo on
    CPUs."""
    AUTO = 'AUTO'
    RING = 'RING'
    NCCL = 'NCCL'


class CommunicationOptions:
    """Options of `MultiWorkerMirroredStrategy`'s all-reduce.

    # Arguments
        bytes_per_pack: the largest all-reduce of gradients (0: torchk's default, 25 MiB).
        timeout_seconds: how long a collective waits for the other processes.
        implementation: a `CommunicationImplementation` (accepted; see its doc).
    """

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class MultiWorkerMirroredStrategy(Strategy):
    """`MirroredStrategy` across machines: one replica per process that torchrun started
    on every machine (`torchrun --nnodes M --nproc-per-node N ...`); TF_CONFIG is not read.

    # Arguments
        cluster_resolver: must be None: torchrun's environment gives the cluster.
        communication_options: a `CommunicationOptions`.

    # Raises
        ValueError: for a `cluster_resolver`, or a TF_CONFIG of several tasks without
            torchrun.
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        if cluster_resolver is not None:
            raise ValueError('MultiWorkerMirroredStrategy(cluster_resolver=...): torchk takes '
                             'the cluster from torchrun\'s environment; leave it None.')
        _check_tf_config()
        options = communication_options or CommunicationOptions()
        super().__init__(data_parallel=True, bucket_bytes=options.bytes_per_pack,
                         timeout_seconds=options.timeout_seconds)

    @property
    def cluster_resolver(self):
        """This process' task: `task_type` `'worker'`, `task_id` its rank."""
        return _TorchrunClusterResolver(self._rank, self._replicas)


class CrossDeviceOps:
    """Accepted as `MirroredStrategy(cross_device_ops=...)`; torch.distributed's all-reduce
    (NCCL on GPUs, gloo on CPUs) combines the gradients."""

    def __init__(self, *args, **kwargs):
        pass


class NcclAllReduce(CrossDeviceOps):
    """See `CrossDeviceOps`."""


class HierarchicalCopyAllReduce(CrossDeviceOps):
    """See `CrossDeviceOps`."""


class ReductionToOneDevice(CrossDeviceOps):
    """See `CrossDeviceOps`."""


experimental = Namespace('tf.distribute.experimental', {
    'MultiWorkerMirroredStrategy': MultiWorkerMirroredStrategy,
    'CentralStorageStrategy': CentralStorageStrategy,
    'CommunicationOptions': CommunicationOptions,
    'CommunicationImplementation': CommunicationImplementation,
    'CollectiveCommunication': CommunicationImplementation,
    'ValueContext': ValueContext,
})

__all__ = ['ReduceOp', 'get_strategy', 'has_strategy', 'in_cross_replica_context',
           'get_replica_context', 'ReplicaContext', 'InputContext', 'DistributedDataset',
           'StrategyExtended', 'Strategy', 'OneDeviceStrategy', 'MirroredStrategy',
           'MultiWorkerMirroredStrategy', 'CrossDeviceOps', 'NcclAllReduce',
           'HierarchicalCopyAllReduce', 'ReductionToOneDevice', 'experimental']
__getattr__ = module_getattr('tf.distribute')
