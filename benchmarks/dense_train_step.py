"""Dense-model training steps (a small and a larger MLP) on torchk (Keras 2.3.1 `train_on_batch`) against the same
model written by hand in PyTorch, measured in the same process; plus `K.function` per-call
overhead on a trivial graph.

Run:  python benchmarks/dense_train_step.py
"""
import numpy as np
import torch

from common import report, seconds_per_call, torch_classifier_step

import keras  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import Dense  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import config  # noqa: E402

FEATURES, CLASSES = 64, 10
SIZES = [(128, 256), (512, 1024)]  # (batch, hidden units)


def keras_step(x, y, hidden):
    model = Sequential([Dense(hidden, activation='relu', input_shape=(FEATURES,)),
                        Dense(hidden, activation='relu'),
                        Dense(CLASSES, activation='softmax')])
    model.compile(optimizer=keras.optimizers.Adam(), loss='categorical_crossentropy',
                  metrics=['accuracy'])
    return lambda: model.train_on_batch(x, y)


def torch_step(x, y, hidden):
    device = config.device()
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, CLASSES)).to(device)
    return torch_classifier_step(model, x, np.argmax(y, axis=1), device)


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
    print('device: %s, torch threads: %d' % (config.device(), torch.get_num_threads()))
    for batch, hidden in SIZES:
        x = rng.randn(batch, FEATURES).astype('float32')
        y = keras.utils.to_categorical(rng.randint(0, CLASSES, batch), CLASSES)
        report('Dense MLP train_on_batch (%d x %d)' % (batch, hidden),
               seconds_per_call(keras_step(x, y, hidden), number=20),
               seconds_per_call(torch_step(x, y, hidden), number=20))
    fn, raw = function_overhead()
    report('K.function call, 1-op graph', seconds_per_call(fn, number=500),
           seconds_per_call(raw, number=500))


if __name__ == '__main__':
    main()
