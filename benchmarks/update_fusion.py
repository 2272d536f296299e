"""Keras' optimizer updates with and without the fusion pass (torchk/passes/fusion.py), against the
same MLP trained by hand in PyTorch (torch.optim, single-tensor path), all in one process with
interleaved rounds; plus the per-call overhead of a 1-op `K.function` against the raw torch
call.

The model is the shared scoreboard's mlp: 784-512-512-10, batch 128, categorical
crossentropy. `TORCHK_COMPILE=1` also times the whole-program compile (see README, Speed).

Run:  python benchmarks/update_fusion.py [optimizer ...]   (default: adam sgd rmsprop)
"""
import sys

import numpy as np
import torch

from common import interleaved_seconds, torch_classifier_step

import keras  # noqa: E402
from keras.layers import Dense  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import config  # noqa: E402
from torchk.passes import fusion  # noqa: E402

from dense_train_step import function_overhead  # noqa: E402

BATCH, FEATURES, HIDDEN, CLASSES = 128, 784, 512, 10
KERAS_OPTIMIZERS = {'adam': lambda: keras.optimizers.Adam(1e-3, epsilon=1e-7),
                    'sgd': lambda: keras.optimizers.SGD(1e-2, momentum=0.9),
                    'rmsprop': lambda: keras.optimizers.RMSprop(1e-3)}
TORCH_OPTIMIZERS = {'adam': lambda p: torch.optim.Adam(p, 1e-3, eps=1e-7, foreach=False),
                    'sgd': lambda p: torch.optim.SGD(p, 1e-2, momentum=0.9, foreach=False),
                    'rmsprop': lambda p: torch.optim.RMSprop(p, 1e-3, eps=1e-7, foreach=False)}


def keras_step(name, fused, x, y):
    fusion.set_enabled(fused)
    model = Sequential([Dense(HIDDEN, activation='relu', input_shape=(FEATURES,)),
                        Dense(HIDDEN, activation='relu'), Dense(CLASSES, activation='softmax')])
    model.compile(KERAS_OPTIMIZERS[name](), 'categorical_crossentropy')
    model.train_on_batch(x, y)  # builds the train function while the switch is set
    fusion.set_enabled(None)
    return lambda: model.train_on_batch(x, y)


def torch_step(name, x, labels):
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, CLASSES))
    optimizer = TORCH_OPTIMIZERS[name](model.parameters())
    inputs, targets = torch.as_tensor(x), torch.as_tensor(labels)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def main():
    names = sys.argv[1:] or ['adam', 'sgd', 'rmsprop']
    rng = np.random.RandomState(0)
    x = rng.rand(BATCH, FEATURES).astype('float32')
    labels = rng.randint(0, CLASSES, BATCH)
    y = np.eye(CLASSES, dtype='float32')[labels]
    print('device: %s, torch threads: %d; median of interleaved rounds, ms per step'
          % (config.device(), torch.get_num_threads()))
    print('%-10s %10s %10s %10s %12s %12s' % ('optimizer', 'fused', 'unfused', 'torch',
                                              'fused/torch', 'unfused/torch'))
    for name in names:
        fused, unfused, raw = interleaved_seconds(
            [keras_step(name, True, x, y), keras_step(name, False, x, y),
             torch_step(name, x, labels)], repeats=7, number=10)
        print('%-10s %10.2f %10.2f %10.2f %11.2fx %11.2fx' % (
            name, fused * 1e3, unfused * 1e3, raw * 1e3, fused / raw, unfused / raw))
    fn, raw = function_overhead()
    ours, theirs = interleaved_seconds([fn, raw], repeats=7, number=1000)
    print('K.function 1-op call: %.1f us, raw torch %.1f us, ratio %.2fx'
          % (ours * 1e6, theirs * 1e6, ours / theirs))


if __name__ == '__main__':
    main()
