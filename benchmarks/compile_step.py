"""Keras training steps (`train_on_batch`) and MobileNetV2's predict, plain and under
`TORCHK_COMPILE` (torchk/passes/compiled.py), alternating in one process so that a load
change on a shared machine hits both sides alike.

Workloads (the shared scoreboard's): `mlp` (Dense 512-512-10, batch 128), `cnn` (Conv2D 32 and
64, pooling, Dense 128-10 on 28x28x1, batch 64), `mobilenet` (keras.applications
MobileNetV2, alpha 0.35, 96x96x3, 10 classes, batch 32), all with Adam; and
`predict_mobilenet` (that model's `predict_on_batch`, batch 64, plain against
`TORCHK_COMPILE=predict`). Prints the first compile time (in the first compiled call),
then the wall and CPU milliseconds per step of each side (CPU time, summed over threads, is
the steadier figure on a loaded machine).

Run:  python benchmarks/compile_step.py WORKLOAD [--threads N] [--steps N] [--rounds N]
      (TORCHINDUCTOR_CACHE_DIR set to a fresh directory times a first compile; run twice
      with the same directory to time a cached one)
"""
import argparse
import statistics
import time

import numpy as np
import torch

import common  # noqa: F401  (puts the checkout first on sys.path, sets KERAS_BACKEND)
import keras  # noqa: E402
from keras import layers  # noqa: E402
from torchk.passes import compiled  # noqa: E402

BATCHES = {'mlp': 128, 'cnn': 64, 'mobilenet': 32, 'predict_mobilenet': 64}
SHAPES = {'mlp': (784,), 'cnn': (28, 28, 1), 'mobilenet': (96, 96, 3),
          'predict_mobilenet': (96, 96, 3)}


def build(workload):
    """The workload's compiled Keras model."""
    if workload == 'mlp':
        model = keras.models.Sequential([
            layers.Dense(512, activation='relu', input_shape=(784,)),
            layers.Dense(512, activation='relu'),
            layers.Dense(10, activation='softmax')])
    elif workload == 'cnn':
        model = keras.models.Sequential([
            layers.Conv2D(32, (3, 3), activation='relu', input_shape=(28, 28, 1)),
            layers.Conv2D(64, (3, 3), activation='relu'),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dense(128, activation='relu'),
            layers.Dense(10, activation='softmax')])
    else:
        model = keras.applications.MobileNetV2(weights=None, alpha=0.35, classes=10,
                                               input_shape=SHAPES[workload])
    model.compile(keras.optimizers.Adam(learning_rate=1e-3, epsilon=1e-7),
                  'categorical_crossentropy')
    return model


def stepper(workload, mode, batches):
    """A function running one step of a new model on the next batch, compiling per `mode`."""
    compiled.set_enabled(mode)
    np.random.seed(0)
    model = build(workload)
    position = [0]

    def step():
        x, y = batches[position[0] % len(batches)]
        position[0] += 1
        compiled.set_enabled(mode)  # programs are built on first use
        if workload == 'predict_mobilenet':
            return model.predict_on_batch(x)
        return model.train_on_batch(x, y)
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('workload', choices=sorted(BATCHES))
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.RandomState(0)
    batch = BATCHES[args.workload]
    batches = [(rng.rand(batch, *SHAPES[args.workload]).astype('float32'),
                np.eye(10, dtype='float32')[rng.randint(0, 10, batch)]) for _ in range(4)]
    compiled_mode = 'predict' if args.workload == 'predict_mobilenet' else True
    sides = {'plain': stepper(args.workload, False, batches),
             'compiled': stepper(args.workload, compiled_mode, batches)}
    for name, step in sides.items():
        for call in range(2):
            start = time.perf_counter()
            step()
            print('%-8s call %d: %.1f s' % (name, call + 1, time.perf_counter() - start),
                  flush=True)
    wall = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, step in sides.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                step()
            wall[name].append((time.perf_counter() - start) / args.steps * 1e3)
            cpu[name].append((time.process_time() - start_cpu) / args.steps * 1e3)
    for name in sides:
        print('%-8s %s: wall %.2f ms/step (rounds %s), cpu %.2f ms/step'
              % (name, args.workload, statistics.median(wall[name]),
                 ' '.join('%.1f' % t for t in wall[name]), statistics.median(cpu[name])))
    print('compiled/plain: wall %.2fx, cpu %.2fx' % (
        statistics.median(wall['compiled']) / statistics.median(wall['plain']),
        statistics.median(cpu['compiled']) / statistics.median(cpu['plain'])))


if __name__ == '__main__':
    main()
