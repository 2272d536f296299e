"""Data-parallel training on torch.distributed, with the API of `horovod.keras`.

A Horovod Keras script ports by changing its import:

```python
import torchk.distributed as hvd

hvd.init()
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())),
              loss='mse')
model.fit(hvd.shard(x), hvd.shard(y), callbacks=[
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    hvd.callbacks.MetricAverageCallback()])
```

launched with `torchrun --nproc_per_node N script.py`. Run without torchrun, the script is
a world of one process and nothing is communicated.
"""
from . import callbacks
from .callbacks import (BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
                        LearningRateWarmupCallback, MetricAverageCallback)
from .data import ShardedSequence, shard
from .optimizer import Compression, DistributedOptimizer, average_gradients, load_model
from .runtime import (allgather, allreduce, broadcast, broadcast_variables, init,
                      is_initialized, local_rank, local_size, rank, shutdown, size)
