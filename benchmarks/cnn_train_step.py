"""One small-CNN training step on torchk (Keras 2.3.1 `train_on_batch`) against the same model
written by hand in PyTorch (nn.Conv2d etc., channels-first, Adam), measured in the same process.

The model: Conv2D(32, 3, relu) - MaxPooling2D - Conv2D(64, 3, relu) - MaxPooling2D - Flatten -
Dense(10, softmax), on 28x28x1 images, batch 64, Adam, categorical crossentropy. torchk runs it
in both Keras data formats: channels_last (Keras' default; torchk permutes to torch's NCHW
around each conv/pool) and channels_first (torch's own layout).

Run:  python benchmarks/cnn_train_step.py
"""
import numpy as np
import torch

from common import interleaved_seconds, report, torch_classifier_step

import keras  # noqa: E402
from keras import layers  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import config  # noqa: E402

BATCH, SIZE, CLASSES = 64, 28, 10


def keras_step(x, y, data_format):
    shape = (SIZE, SIZE, 1) if data_format == 'channels_last' else (1, SIZE, SIZE)
    model = Sequential([
        layers.Conv2D(32, 3, activation='relu', input_shape=shape, data_format=data_format),
        layers.MaxPooling2D(data_format=data_format),
        layers.Conv2D(64, 3, activation='relu', data_format=data_format),
        layers.MaxPooling2D(data_format=data_format),
        layers.Flatten(data_format=data_format),
        layers.Dense(CLASSES, activation='softmax'),
    ])
    model.compile(optimizer=keras.optimizers.Adam(), loss='categorical_crossentropy',
                  metrics=['accuracy'])
    if data_format == 'channels_first':
        x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    return lambda: model.train_on_batch(x, y)


def torch_step(x, y):
    device = config.device()
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 5 * 5, CLASSES)).to(device)
    images = np.ascontiguousarray(np.moveaxis(x, -1, 1))  # NCHW, torch's own layout
    return torch_classifier_step(model, images, np.argmax(y, axis=1), device)


def main():
    rng = np.random.RandomState(0)
    x = rng.rand(BATCH, SIZE, SIZE, 1).astype('float32')
    y = keras.utils.to_categorical(rng.randint(0, CLASSES, BATCH), CLASSES)
    device = config.device()
    sync = torch.cuda.synchronize if device.type == 'cuda' else None
    print('device: %s, torch threads: %d' % (device, torch.get_num_threads()))
    formats = ('channels_last', 'channels_first')
    seconds = interleaved_seconds([torch_step(x, y)] + [keras_step(x, y, f) for f in formats],
                                  repeats=7, number=10, sync=sync)
    for data_format, keras_seconds in zip(formats, seconds[1:]):
        report('CNN train_on_batch %s (batch %d)' % (data_format, BATCH), keras_seconds,
               seconds[0])


if __name__ == '__main__':
    main()
