"""Training steps of the scoreboard's `mlp` and `cnn` models (Keras 2.3.1 `train_on_batch`) in
float32 and under `torchk.mixed_precision` policies, timed interleaved in one process.

Each model is built once per policy (the policy is read when layers are created); the mixed
ones end in the tf.keras guide's float32 softmax. Ratios are to the float32 step. Where bfloat16
helps: CPUs with AMX or AVX512-BF16 (oneDNN's bfloat16 convolutions and matmuls), and GPUs.

Run:  python benchmarks/mixed_precision_step.py [--threads N] [--policies mixed_bfloat16 ...]
(`TORCHK_DEVICE=cuda` for a GPU)
"""
import argparse

import numpy as np
import torch

from common import interleaved_seconds

import keras  # noqa: E402
from keras import layers  # noqa: E402
from torchk import config  # noqa: E402
from torchk import mixed_precision  # noqa: E402


def build(workload, policy):
    """The scoreboard's model of `workload` built under `policy`, compiled, with one batch."""
    mixed_precision.set_global_policy(policy)
    if policy == 'float32':
        head = [layers.Dense(10, activation='softmax')]
    else:
        head = [layers.Dense(10), layers.Activation('softmax', dtype='float32')]
    rng = np.random.RandomState(0)
    if workload == 'cnn':
        body = [layers.Conv2D(32, 3, activation='relu', input_shape=(28, 28, 1)),
                layers.Conv2D(64, 3, activation='relu'), layers.MaxPooling2D(),
                layers.Flatten(), layers.Dense(128, activation='relu')]
        x = rng.rand(64, 28, 28, 1).astype('float32')
    else:
        body = [layers.Dense(512, activation='relu', input_shape=(784,)),
                layers.Dense(512, activation='relu')]
        x = rng.rand(128, 784).astype('float32')
    y = np.eye(10, dtype='float32')[rng.randint(0, 10, len(x))]
    model = keras.models.Sequential(body + head)
    model.compile(keras.optimizers.Adam(learning_rate=1e-3, epsilon=1e-7),
                  'categorical_crossentropy')
    mixed_precision.set_global_policy('float32')
    return lambda: model.train_on_batch(x, y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--policies', nargs='+', default=['mixed_bfloat16'])
    parser.add_argument('--workloads', nargs='+', default=['mlp', 'cnn'])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sync = torch.cuda.synchronize if config.device().type == 'cuda' else None
    print('device %s, %d threads, native bfloat16: %s'
          % (config.device(), args.threads, mixed_precision.native_bfloat16()))
    for workload in args.workloads:
        policies = ['float32'] + args.policies
        steps = [build(workload, policy) for policy in policies]
        seconds = interleaved_seconds(steps, repeats=5, number=10, sync=sync)
        for policy, s in zip(policies, seconds):
            print('%-4s %-15s %8.2f ms/step   %.2fx float32'
                  % (workload, policy, s * 1e3, s / seconds[0]))


if __name__ == '__main__':
    main()
