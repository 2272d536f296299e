"""`tf.data.Options` and `tf.data.experimental.AutoShardPolicy`: the settings TF's input
pipelines take (`Dataset.with_options`). torchk's datasets iterate in Python, so they are
recorded and read back (`Dataset.options()`), and change nothing in how elements are computed;
a distributed dataset gives each replica its share of every global batch whatever the
sharding policy (see `torchk.tf.distribute`)."""
import enum


class AutoShardPolicy(enum.IntEnum):
    """How TF shards a dataset between workers (`tf.data.experimental.AutoShardPolicy`)."""
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class _Group:
    """A group of options (`options.experimental_distribute`, ...): attributes set on it are
    kept; those never set read as None, as in TF. Names outside the group raise."""

    _names = ()

    def __init__(self):
        object.__setattr__(self, '_values', {})

    def __getattr__(self, name):
        if name.startswith('_') or name not in self._names:
            raise AttributeError('%s has no option %r; it has %s.'
                                 % (type(self).__name__, name, ', '.join(self._names)))
        return self._values.get(name)

    def __setattr__(self, name, value):
        if name not in self._names:
            raise AttributeError('%s has no option %r; it has %s.'
                                 % (type(self).__name__, name, ', '.join(self._names)))
        self._values[name] = value


class DistributeOptions(_Group):
    """`tf.data.experimental.DistributeOptions`: `auto_shard_policy`, `num_devices`."""
    _names = ('auto_shard_policy', 'num_devices')


class OptimizationOptions(_Group):
    """`tf.data.experimental.OptimizationOptions` (graph rewrites of TF's input pipelines)."""
    _names = ('apply_default_optimizations', 'filter_fusion', 'filter_parallelization',
              'inject_prefetch', 'map_and_batch_fusion', 'map_and_filter_fusion',
              'map_fusion', 'map_parallelization', 'noop_elimination',
              'parallel_batch', 'shuffle_and_repeat_fusion')


class ThreadingOptions(_Group):
    """`tf.data.ThreadingOptions`: `max_intra_op_parallelism`, `private_threadpool_size`."""
    _names = ('max_intra_op_parallelism', 'private_threadpool_size')


class Options(_Group):
    """`tf.data.Options`: the groups `experimental_distribute`, `experimental_optimization`,
    `threading`, and `deterministic`, `experimental_deterministic`, `experimental_slack`,
    `experimental_external_state_policy`."""
    _names = ('experimental_distribute', 'experimental_optimization', 'threading',
              'deterministic', 'experimental_deterministic', 'experimental_slack',
              'experimental_external_state_policy', 'autotune',
              'experimental_warm_start', 'experimental_symbolic_checkpoint')

    def __init__(self):
        super().__init__()
        self._values.update(experimental_distribute=DistributeOptions(),
                            experimental_optimization=OptimizationOptions(),
                            threading=ThreadingOptions())
