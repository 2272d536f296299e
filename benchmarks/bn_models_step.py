"""Batch-norm-heavy models on torchk against the same models in raw PyTorch, in one process.

Two models, each as a training step (`train_on_batch`, Adam, batch 32) and as inference
(`predict_on_batch`, batch 64):
- `mobilenet`: the shared scoreboard's keras.applications.MobileNetV2 (alpha 0.35, 96x96 RGB,
  10 classes): batch norm, depthwise convolutions, ReLU6. The torch side is the same
  architecture written with nn.Conv2d / nn.BatchNorm2d(eps=1e-3) / nn.ReLU6, NCHW.
- `resnet`: a small ResNet (32x32 RGB; conv-BN-relu stem, three stages of two residual blocks
  of conv-BN-relu-conv-BN + add + relu, 32/64/128 filters, global average pooling, Dense(10)).

torch trains in train() mode and predicts in eval() mode under `torch.inference_mode()`.
Each line prints torchk's median time, torch's and the ratio; then a torch profile of the
mobilenet steps lists the kernels taking the most self CPU time per step on either side.

Run:  python benchmarks/bn_models_step.py [--profile-rows N] [--no-profile]
"""
import argparse
import collections

import numpy as np
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from common import interleaved_seconds, report, torch_classifier_step

import keras  # noqa: E402
from keras import layers  # noqa: E402
from torchk import config  # noqa: E402

TRAIN_BATCH, PREDICT_BATCH, CLASSES = 32, 64, 10
MOBILENET_ALPHA, MOBILENET_SIZE, RESNET_SIZE = 0.35, 96, 32
PROFILED_STEPS = 3


def _divisible(value, divisor=8):
    """Keras' and torchvision's channel rounding for MobileNetV2 widths."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def torch_mobilenet():
    """MobileNetV2 as keras.applications builds it (eps 1e-3, ReLU6, no dropout), NCHW."""
    def conv_bn(cin, cout, size, stride=1, groups=1, act=True):
        block = [nn.Conv2d(cin, cout, size, stride, (size - 1) // 2, groups=groups, bias=False),
                 nn.BatchNorm2d(cout, eps=1e-3, momentum=0.001)]
        return block + [nn.ReLU6()] if act else block

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expansion):
            super().__init__()
            hidden = cin * expansion
            body = conv_bn(cin, hidden, 1) if expansion != 1 else []
            body += conv_bn(hidden, hidden, 3, stride, groups=hidden)
            body += conv_bn(hidden, cout, 1, act=False)
            self.body = nn.Sequential(*body)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    cin = _divisible(32 * MOBILENET_ALPHA)
    modules = conv_bn(3, cin, 3, 2)
    for expansion, channels, repeats, stride in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2),
                                                 (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                                                 (6, 320, 1, 1)]:
        cout = _divisible(channels * MOBILENET_ALPHA)
        for i in range(repeats):
            modules.append(Inverted(cin, cout, stride if i == 0 else 1, expansion))
            cin = cout
    modules += conv_bn(cin, 1280, 1) + [nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                        nn.Linear(1280, CLASSES)]
    return nn.Sequential(*modules)


def keras_mobilenet():
    return keras.applications.MobileNetV2(
        weights=None, alpha=MOBILENET_ALPHA, classes=CLASSES,
        input_shape=(MOBILENET_SIZE, MOBILENET_SIZE, 3))


RESNET_STAGES = (32, 64, 128)


def torch_resnet():
    class Residual(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout, eps=1e-3),
                nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                nn.BatchNorm2d(cout, eps=1e-3))
            self.shortcut = (nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout, eps=1e-3)))

        def forward(self, x):
            return torch.relu(self.body(x) + self.shortcut(x))

    modules = [nn.Conv2d(3, RESNET_STAGES[0], 3, 1, 1, bias=False),
               nn.BatchNorm2d(RESNET_STAGES[0], eps=1e-3), nn.ReLU()]
    cin = RESNET_STAGES[0]
    for stage, cout in enumerate(RESNET_STAGES):
        for block in range(2):
            modules.append(Residual(cin, cout, 2 if stage and not block else 1))
            cin = cout
    modules += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, CLASSES)]
    return nn.Sequential(*modules)


def keras_resnet():
    def conv_bn(x, filters, size, stride=1):
        x = layers.Conv2D(filters, size, strides=stride, padding='same', use_bias=False)(x)
        return layers.BatchNormalization()(x)

    inputs = layers.Input((RESNET_SIZE, RESNET_SIZE, 3))
    x = layers.Activation('relu')(conv_bn(inputs, RESNET_STAGES[0], 3))
    for stage, filters in enumerate(RESNET_STAGES):
        for block in range(2):
            stride = 2 if stage and not block else 1
            body = layers.Activation('relu')(conv_bn(x, filters, 3, stride))
            body = conv_bn(body, filters, 3)
            shortcut = x if stride == 1 and x.shape[-1] == filters else conv_bn(
                x, filters, 1, stride)
            x = layers.Activation('relu')(layers.add([body, shortcut]))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.models.Model(inputs, layers.Dense(CLASSES, activation='softmax')(x))


MODELS = {'mobilenet': (keras_mobilenet, torch_mobilenet, MOBILENET_SIZE),
          'resnet': (keras_resnet, torch_resnet, RESNET_SIZE)}


def steps(name, rng):
    """Returns {(side, kind): step function} for one model: side 'torchk' or 'torch', kind
    'train' or 'predict'."""
    make_keras, make_torch, size = MODELS[name]
    device = config.device()
    x = rng.rand(PREDICT_BATCH, size, size, 3).astype('float32')
    labels = rng.randint(0, CLASSES, PREDICT_BATCH)
    y = keras.utils.to_categorical(labels, CLASSES)
    model = make_keras()
    model.compile(optimizer=keras.optimizers.Adam(epsilon=1e-7),
                  loss='categorical_crossentropy')
    net = make_torch().to(device)
    images = torch.as_tensor(np.ascontiguousarray(np.moveaxis(x, -1, 1)), device=device)
    torch_train = torch_classifier_step(net, images[:TRAIN_BATCH].cpu().numpy(),
                                        labels[:TRAIN_BATCH], device)

    def torch_predict():
        net.eval()
        with torch.inference_mode():
            result = net(images).mean().item()
        net.train()
        return result

    return {('torchk', 'train'): lambda: model.train_on_batch(x[:TRAIN_BATCH],
                                                              y[:TRAIN_BATCH]),
            ('torch', 'train'): torch_train,
            ('torchk', 'predict'): lambda: float(np.mean(model.predict_on_batch(x))),
            ('torch', 'predict'): torch_predict}


def kernel_table(named_steps, rows):
    """Prints the aten kernels with the most self CPU ms per step on any side."""
    totals = []
    for _, step in named_steps:
        step()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(PROFILED_STEPS):
                step()
        counter = collections.Counter()
        for event in prof.key_averages():
            if event.key.startswith('aten::'):
                counter[event.key[len('aten::'):]] += (event.self_cpu_time_total / 1e3
                                                       / PROFILED_STEPS)
        totals.append(counter)
    kernels = sorted(set().union(*totals), key=lambda k: -max(t[k] for t in totals))[:rows]
    print('%-40s' % 'kernel (self CPU ms/step)' + ''.join('%18s' % n for n, _ in named_steps))
    for kernel in kernels:
        print('%-40s' % kernel + ''.join('%18.2f' % t[kernel] for t in totals))
    print('%-40s' % 'all aten kernels' + ''.join('%18.2f' % sum(t.values()) for t in totals))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--models', default='mobilenet,resnet')
    parser.add_argument('--profile-rows', type=int, default=20)
    parser.add_argument('--no-profile', action='store_true')
    parser.add_argument('--repeats', type=int, default=5)
    args = parser.parse_args()
    device = config.device()
    sync = torch.cuda.synchronize if device.type == 'cuda' else None
    print('device: %s, torch threads: %d' % (device, torch.get_num_threads()))
    rng = np.random.RandomState(0)
    all_steps = {name: steps(name, rng) for name in args.models.split(',')}
    for name, model_steps in all_steps.items():
        for kind in ('train', 'predict'):
            ours, theirs = interleaved_seconds(
                [model_steps['torchk', kind], model_steps['torch', kind]],
                repeats=args.repeats, number=3, sync=sync)
            batch = TRAIN_BATCH if kind == 'train' else PREDICT_BATCH
            report('%s %s (batch %d)' % (name, kind, batch), ours, theirs)
    if args.no_profile or device.type != 'cpu' or 'mobilenet' not in all_steps:
        return
    mobilenet = all_steps['mobilenet']
    for kind in ('train', 'predict'):
        print('\nmobilenet %s, torch profiler (%d steps)' % (kind, PROFILED_STEPS))
        kernel_table([('torchk', mobilenet['torchk', kind]),
                      ('torch', mobilenet['torch', kind])], args.profile_rows)


if __name__ == '__main__':
    main()
