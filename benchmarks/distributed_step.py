"""Data-parallel training steps: one process against two (torchrun, gloo, CPU).

Each process runs `train_on_batch` of the same MLP with, interleaved: the plain optimizer
(no communication), `DistributedOptimizer` with the default buckets (a few all-reduces per
step), with one all-reduce per weight (`bucket_bytes=1`), and with fp16 compression. The
communication overhead per step is the distributed step minus the plain one, in the same
process. Prints the bytes all-reduced per step and the collective calls per step.

Run:  python benchmarks/distributed_step.py   (runs itself under torchrun for 2 processes)
"""
import os
import socket
import subprocess
import sys

import numpy as np
import torch

from common import ROOT, interleaved_seconds

import keras  # noqa: E402
import torchk.distributed as hvd  # noqa: E402
from torchk.distributed.optimizer import bucket_plan  # noqa: E402

FEATURES, HIDDEN, CLASSES, BATCH = 256, 512, 10, 64  # BATCH: per process


def _model():
    np.random.seed(0)
    torch.manual_seed(0)
    return keras.models.Sequential([
        keras.layers.Dense(HIDDEN, activation='relu', input_shape=(FEATURES,)),
        keras.layers.Dense(HIDDEN, activation='relu'),
        keras.layers.Dense(HIDDEN, activation='relu'),
        keras.layers.Dense(CLASSES, activation='softmax')])


def _step(optimizer, batch):
    model = _model()
    model.compile(optimizer, 'categorical_crossentropy')
    rng = np.random.RandomState(hvd.rank())
    x = rng.randn(batch, FEATURES).astype('float32')
    y = keras.utils.to_categorical(rng.randint(0, CLASSES, batch), CLASSES)
    return model, lambda: model.train_on_batch(x, y)


def measure():
    """Times the variants in this process; rank 0 prints them."""
    hvd.init()
    world = hvd.size()
    sgd = lambda: keras.optimizers.SGD(0.01)  # noqa: E731
    variants = {'plain optimizer, no communication': _step(sgd(), BATCH)}
    if world > 1:
        variants.update({
            'DistributedOptimizer, bucketed': _step(hvd.DistributedOptimizer(sgd()), BATCH),
            'DistributedOptimizer, one all-reduce per weight':
                _step(hvd.DistributedOptimizer(sgd(), bucket_bytes=1), BATCH),
            'DistributedOptimizer, bucketed, fp16':
                _step(hvd.DistributedOptimizer(sgd(), compression=hvd.Compression.fp16),
                      BATCH)})
    else:
        variants['plain optimizer, batch %d' % (2 * BATCH)] = _step(sgd(), 2 * BATCH)
    seconds = interleaved_seconds([fn for _, fn in variants.values()], repeats=7, number=20)
    if hvd.rank() != 0:
        return
    weights = variants['plain optimizer, no communication'][0].trainable_weights
    grads = [w.detach() for w in weights]
    print('\n%d process(es), per-process batch %d, %d weights, %d parameters'
          % (world, BATCH, len(weights), sum(g.numel() for g in grads)))
    if world > 1:
        print('all-reduced per step: %.2f MB (fp32), %.2f MB (fp16); collective calls per '
              'step: %d bucketed, %d per weight'
              % (sum(g.numel() * 4 for g in grads) / 1e6, sum(g.numel() * 2 for g in grads) / 1e6,
                 len(bucket_plan(grads, hvd.optimizer.DEFAULT_BUCKET_BYTES)),
                 len(bucket_plan(grads, 1))))
    plain = seconds[0]
    for name, s in zip(variants, seconds):
        print('  %-50s %8.2f ms/step   overhead %+7.2f ms' % (name, s * 1e3, (s - plain) * 1e3))
    hvd.shutdown()


def main():
    torch.set_num_threads(1)
    if 'WORLD_SIZE' in os.environ:
        measure()
        return
    measure()
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2',
                    '--master_addr', '127.0.0.1', '--master_port', str(port),
                    os.path.abspath(__file__)], env=env, check=True)


if __name__ == '__main__':
    main()
