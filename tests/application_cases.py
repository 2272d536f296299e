"""What the keras.applications fixture tests share with the script that makes them
(`tests/fixtures/make_tf_keras_applications.py`, run under TensorFlow): the cases, the
families' variants and where the fixtures are. No TensorFlow, no torchk.
"""
import os

APPLICATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures',
                                'tf_keras', 'applications')

SMALL = (32, 32, 3)
_TOP = dict(classes=10, classifier_activation=None)

# case: (builder name, keyword arguments besides weights=None); small inputs, and classifiers
# of 10 logits.
CASES = {
    'efficientnet_b0': ('EfficientNetB0', dict(input_shape=SMALL, **_TOP)),
    'efficientnet_b3_notop': ('EfficientNetB3', dict(include_top=False, pooling='avg',
                                                     input_shape=(35, 33, 3))),
    'efficientnet_v2_b0': ('EfficientNetV2B0', dict(input_shape=SMALL, **_TOP)),
    'efficientnet_v2_s_notop': ('EfficientNetV2S', dict(include_top=False, pooling='max',
                                                        input_shape=SMALL)),
    'mobilenet_v3_small': ('MobileNetV3Small', dict(input_shape=SMALL, **_TOP)),
    'mobilenet_v3_large_minimalistic': ('MobileNetV3Large', dict(
        input_shape=(48, 40, 3), alpha=0.75, minimalistic=True, **_TOP)),
    'convnext_tiny': ('ConvNeXtTiny', dict(input_shape=SMALL, **_TOP)),
    'convnext_tiny_notop': ('ConvNeXtTiny', dict(include_top=False, pooling='avg',
                                                 input_shape=SMALL)),
    'regnetx002': ('RegNetX002', dict(input_shape=SMALL, **_TOP)),
    'regnety002': ('RegNetY002', dict(input_shape=SMALL, **_TOP)),
    'resnet_rs50': ('ResNetRS50', dict(input_shape=SMALL, **_TOP)),
}

# EfficientNetB0 with weights='imagenet' (without its top), the download replaced by the
# recipe's weights file: the ImageNet branch adds an input scaling.
IMAGENET_CASE = 'efficientnet_b0_imagenet'

# The variants of each family, the smallest first.
FAMILIES = {
    'efficientnet': ['EfficientNetB%d' % i for i in range(8)],
    'efficientnet_v2': ['EfficientNetV2B%d' % i for i in range(4)] + [
        'EfficientNetV2S', 'EfficientNetV2M', 'EfficientNetV2L'],
    'mobilenet_v3': ['MobileNetV3Small', 'MobileNetV3Large'],
    'convnext': ['ConvNeXt' + size for size in ('Tiny', 'Small', 'Base', 'Large', 'XLarge')],
    'regnet': ['RegNet%s%03d' % (kind, size) for kind in 'XY'
               for size in (2, 4, 6, 8, 16, 32, 40, 64, 80, 120, 160, 320)],
    'resnet_rs': ['ResNetRS%d' % depth for depth in (50, 101, 152, 200, 270, 350, 420)],
}


def images(shape, seed):
    """Two images of `shape` with pixels uniform in [0, 255] (float32)."""
    import numpy as np
    return np.random.default_rng(seed).uniform(0, 255, size=(2,) + tuple(shape)).astype(
        'float32')
