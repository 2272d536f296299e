"""One small-CNN training step on torchk (Keras 2.3.1 `train_on_batch`) against the same model
written by hand in PyTorch (nn.Conv2d etc., channels-first, Adam), measured in the same process.

The model is the shared scoreboard's `cnn` workload: Conv2D(32, 3, relu) - Conv2D(64, 3, relu) -
MaxPooling2D - Flatten - Dense(128, relu) - Dense(10, softmax), on 28x28x1 images, batch 64,
Adam, categorical crossentropy. torchk runs it in both Keras data formats: channels_last (Keras'
default; torchk views it as torch's channels_last NCHW) and channels_first (torch's own layout).

Then a torch profile of each step splits it into the convolution path (every kernel over the
batch's 4D images: convolutions, bias, relu, pooling, forward and backward) and the rest
(dense layers, loss, optimizer), in ms per step.

Run:  python benchmarks/cnn_train_step.py
"""
import collections

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from common import interleaved_seconds, report, torch_classifier_step

import keras  # noqa: E402
from keras import layers  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import config  # noqa: E402

BATCH, SIZE, CLASSES = 64, 28, 10
PROFILED_STEPS = 5


def keras_step(x, y, data_format):
    shape = (SIZE, SIZE, 1) if data_format == 'channels_last' else (1, SIZE, SIZE)
    model = Sequential([
        layers.Conv2D(32, 3, activation='relu', input_shape=shape, data_format=data_format),
        layers.Conv2D(64, 3, activation='relu', data_format=data_format),
        layers.MaxPooling2D(data_format=data_format),
        layers.Flatten(data_format=data_format),
        layers.Dense(128, activation='relu'),
        layers.Dense(CLASSES, activation='softmax'),
    ])
    model.compile(optimizer=keras.optimizers.Adam(epsilon=1e-7),
                  loss='categorical_crossentropy')
    if data_format == 'channels_first':
        x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    return lambda: model.train_on_batch(x, y)


def torch_step(x, y):
    device = config.device()
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 12 * 12, 128),
                          nn.ReLU(), nn.Linear(128, CLASSES)).to(device)
    images = np.ascontiguousarray(np.moveaxis(x, -1, 1))  # NCHW, torch's own layout
    return torch_classifier_step(model, images, np.argmax(y, axis=1), device)


def _is_image_batch(shape):
    """True for a batch of feature maps (batch, two spatial axes >= the pooled size, channels)
    in either layout; false for kernels such as torch's (64, 32, 3, 3)."""
    return len(shape) == 4 and shape[0] == BATCH and sum(n >= SIZE // 4 for n in shape[1:]) >= 2


def breakdown(step):
    """Self CPU ms per step of `step`'s aten kernels: the convolution path (kernels whose first
    input is a batch of 4D images) by kernel name, and the total of everything else."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(PROFILED_STEPS):
            step()
    conv, rest = collections.Counter(), 0.
    for event in prof.key_averages(group_by_input_shape=True):
        if not event.key.startswith('aten::'):
            continue
        ms = event.self_cpu_time_total / 1e3 / PROFILED_STEPS
        shapes = event.input_shapes
        if shapes and _is_image_batch(shapes[0]):
            conv[event.key[len('aten::'):]] += ms
        else:
            rest += ms
    return conv, rest


def main():
    rng = np.random.RandomState(0)
    x = rng.rand(BATCH, SIZE, SIZE, 1).astype('float32')
    y = keras.utils.to_categorical(rng.randint(0, CLASSES, BATCH), CLASSES)
    device = config.device()
    sync = torch.cuda.synchronize if device.type == 'cuda' else None
    print('device: %s, torch threads: %d' % (device, torch.get_num_threads()))
    formats = ('channels_last', 'channels_first')
    steps = [torch_step(x, y)] + [keras_step(x, y, f) for f in formats]
    seconds = interleaved_seconds(steps, repeats=7, number=5, sync=sync)
    for data_format, keras_seconds in zip(formats, seconds[1:]):
        report('CNN train_on_batch %s (batch %d)' % (data_format, BATCH), keras_seconds,
               seconds[0])
    if device.type != 'cpu':
        return
    print('\nself CPU ms per step (torch profiler, %d steps)' % PROFILED_STEPS)
    names = ['torch NCHW'] + ['torchk ' + f for f in formats]
    splits = [breakdown(step) for step in steps]
    kernels = sorted((k for k in set().union(*(conv for conv, _ in splits))
                      if max(conv[k] for conv, _ in splits) >= 0.05),
                     key=lambda k: -max(conv[k] for conv, _ in splits))
    print('%-34s' % 'conv path kernel' + ''.join('%24s' % n for n in names))
    for kernel in kernels:
        print('%-34s' % kernel + ''.join('%24.2f' % conv[kernel] for conv, _ in splits))
    print('%-34s' % 'conv path total' + ''.join('%24.2f' % sum(c.values()) for c, _ in splits))
    print('%-34s' % 'everything else' + ''.join('%24.2f' % rest for _, rest in splits))


if __name__ == '__main__':
    main()
