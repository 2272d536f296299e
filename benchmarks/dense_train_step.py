"""One dense-model training step on torchk (Keras 2.3.1 `train_on_batch`) against the same
model written by hand in PyTorch, measured in the same process; plus `K.function` per-call
overhead on a trivial graph.

Run:  python benchmarks/dense_train_step.py
"""
import numpy as np
import torch

from common import report, seconds_per_call

import keras  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import Dense  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import config  # noqa: E402

BATCH, FEATURES, HIDDEN, CLASSES = 128, 64, 256, 10


def keras_step(x, y):
    model = Sequential([Dense(HIDDEN, activation='relu', input_shape=(FEATURES,)),
                        Dense(HIDDEN, activation='relu'),
                        Dense(CLASSES, activation='softmax')])
    model.compile(optimizer=keras.optimizers.Adam(), loss='categorical_crossentropy',
                  metrics=['accuracy'])
    return lambda: model.train_on_batch(x, y)


def torch_step(x, y):
    device = config.device()
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, CLASSES)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    labels = np.argmax(y, axis=1)

    def step():
        inputs = torch.as_tensor(x, device=device)
        targets = torch.as_tensor(labels, device=device)
        optimizer.zero_grad()
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        accuracy = (logits.argmax(1) == targets).float().mean()
        return loss.item(), accuracy.item()
    return step


def function_overhead():
    x = K.placeholder(shape=(None, 4))
    f = K.function([x], [x + 1.])
    value = np.ones((2, 4), 'float32')
    device = config.device()

    def raw():
        return [(torch.as_tensor(value, device=device) + 1.).cpu().numpy()]
    return (lambda: f([value])), raw


def main():
    rng = np.random.RandomState(0)
    x = rng.randn(BATCH, FEATURES).astype('float32')
    y = keras.utils.to_categorical(rng.randint(0, CLASSES, BATCH), CLASSES)
    print('device: %s, torch threads: %d' % (config.device(), torch.get_num_threads()))
    report('Dense MLP train_on_batch (batch %d)' % BATCH,
           seconds_per_call(keras_step(x, y), number=30), seconds_per_call(torch_step(x, y),
                                                                            number=30))
    fn, raw = function_overhead()
    report('K.function call, 1-op graph', seconds_per_call(fn, number=500),
           seconds_per_call(raw, number=500))


if __name__ == '__main__':
    main()
