"""EfficientNet B0-B7 (Tan & Le, "EfficientNet: Rethinking Model Scaling for Convolutional
Neural Networks", ICML 2019), as tf.keras 2.15 builds them.

A stem convolution, seven stages of mobile inverted bottleneck blocks (MBConv) with
squeeze-and-excitation, and a 1x1 head convolution; the variants scale the width, the depth
and the input size of B0 by compound coefficients. The models rescale their inputs
themselves: they take pixels in [0, 255].
"""
import math

from keras import layers
from keras import models

from . import model_parts
from .model_parts import (CONV_KERNEL_INITIALIZER, DENSE_KERNEL_INITIALIZER, channel_axis,
                          decode_predictions, preprocess_input)

__all__ = ['EfficientNetB0', 'EfficientNetB1', 'EfficientNetB2', 'EfficientNetB3',
           'EfficientNetB4', 'EfficientNetB5', 'EfficientNetB6', 'EfficientNetB7',
           'preprocess_input', 'decode_predictions']

WEIGHTS_URL = 'https://storage.googleapis.com/keras-applications/'

# The MD5 of each variant's ImageNet weights: (with the classifier, without).
WEIGHTS_HASHES = {
    'b0': ('902e53a9f72be733fc0bcb005b3ebbac', '50bc09e76180e00e4465e1a485ddc09d'),
    'b1': ('1d254153d4ab51201f1646940f018540', '74c4e6b3e1f6a1eea24c589628592432'),
    'b2': ('b15cce36ff4dcbd00b6dd88e7857a6ad', '111f8e2ac8aa800a7a99e3239f7bfb39'),
    'b3': ('ffd1fdc53d0ce67064dc6a9c7960ede0', 'af6d107764bb5b1abb91932881670226'),
    'b4': ('18c95ad55216b8f92d7e70b3a046e2fc', 'ebc24e6d6c33eaebbd558eafbeedf1ba'),
    'b5': ('ace28f2a6363774853a83a0b21b9421a', '38879255a25d3c92d5e44e04ae6cec6f'),
    'b6': ('165f6e37dce68623721b423839de8be5', '9ecce42647a20130c1f39a5d4cb75743'),
    'b7': ('8c03f828fec3ef71311cd463b6759d99', 'cbcfe4450ddf6f3ad90b1b398090fe4a'),
}

HEAD = model_parts.Head(dropout='top_dropout', kernel_initializer=DENSE_KERNEL_INITIALIZER)

# B0's stages: (kernel size, repeats, input filters, output filters, expansion, stride).
# Every block has squeeze-and-excitation to a quarter of its input filters.
STAGES = (
    (3, 1, 32, 16, 1, 1),
    (3, 2, 16, 24, 6, 2),
    (5, 2, 24, 40, 6, 2),
    (3, 3, 40, 80, 6, 2),
    (5, 3, 80, 112, 6, 1),
    (5, 4, 112, 192, 6, 2),
    (3, 1, 192, 320, 6, 1),
)
SE_RATIO = 0.25

# The standard deviations of ImageNet's RGB channels; with ImageNet weights tf.keras scales
# the normalized input by 1 / sqrt(std) (its weights file holds the variance as the std).
IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)


def _round_filters(filters, width, divisor):
    """`filters * width` to a multiple of `divisor`, never less than 90 % of it."""
    scaled = filters * width
    rounded = max(divisor, int(scaled + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * scaled:
        rounded += divisor
    return int(rounded)


def _round_repeats(repeats, depth):
    return int(math.ceil(depth * repeats))


def _conv(filters, kernel_size, name, **kwargs):
    return layers.Conv2D(filters, kernel_size, padding='same', use_bias=False,
                         kernel_initializer=CONV_KERNEL_INITIALIZER, name=name, **kwargs)


def _mbconv(x, name, activation, drop_rate, kernel_size, filters_in, filters_out, expansion,
            strides):
    """One MBConv block: 1x1 expansion, depthwise convolution, squeeze-and-excitation, 1x1
    projection, and the residual connection (with stochastic depth) where shapes allow."""
    axis = channel_axis()
    inputs = x
    filters = filters_in * expansion
    if expansion != 1:
        x = _conv(filters, 1, name + 'expand_conv')(x)
        x = layers.BatchNormalization(axis=axis, name=name + 'expand_bn')(x)
        x = layers.Activation(activation, name=name + 'expand_activation')(x)
    padding = 'same'
    if strides == 2:
        x = layers.ZeroPadding2D(model_parts.correct_pad(x, kernel_size),
                                 name=name + 'dwconv_pad')(x)
        padding = 'valid'
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding=padding, use_bias=False,
                               depthwise_initializer=CONV_KERNEL_INITIALIZER,
                               name=name + 'dwconv')(x)
    x = layers.BatchNormalization(axis=axis, name=name + 'bn')(x)
    x = layers.Activation(activation, name=name + 'activation')(x)
    x = model_parts.squeeze_excite(x, filters, max(1, int(filters_in * SE_RATIO)), activation,
                                   name)
    x = _conv(filters_out, 1, name + 'project_conv')(x)
    x = layers.BatchNormalization(axis=axis, name=name + 'project_bn')(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + 'drop')(x)
        x = layers.add([x, inputs], name=name + 'add')
    return x


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                 drop_connect_rate=0.2, depth_divisor=8, activation='swish',
                 model_name='efficientnet', include_top=True, weights='imagenet',
                 input_tensor=None, input_shape=None, pooling=None, classes=1000,
                 classifier_activation='softmax'):
    """Builds an EfficientNet of the given compound scaling (see the variants' doc).

    # Arguments
        width_coefficient: float, the factor of every stage's filters.
        depth_coefficient: float, the factor of every stage's blocks.
        default_size: int, the input size of the variant (with ImageNet weights and the top).
        dropout_rate: float, the dropout before the classifier.
        drop_connect_rate: float, the largest stochastic depth rate (of the last block).
        depth_divisor: int, filters are rounded to multiples of it.
        activation: the activation of the convolutions.
        model_name: the model's name ('efficientnetb0', ...), also its weights files'.
        include_top, weights, input_tensor, input_shape, pooling, classes,
        classifier_activation: as the variants take them.

    # Returns
        A Keras `Model`.
    """
    model_parts.check_weights(weights, include_top, classes)
    image, inputs, input_shape = model_parts.image_input(input_tensor, input_shape,
                                                         default_size, include_top, weights)
    axis = channel_axis()
    x = layers.Rescaling(1. / 255.)(image)
    x = layers.Normalization(axis=axis)(x)
    if weights == 'imagenet':
        scale = [1. / math.sqrt(std) for std in IMAGENET_STDDEV_RGB]
        x = layers.Rescaling([[[s]] for s in scale] if axis == 1 else scale)(x)
    x = layers.ZeroPadding2D(model_parts.correct_pad(x, 3), name='stem_conv_pad')(x)
    x = layers.Conv2D(_round_filters(32, width_coefficient, depth_divisor), 3, strides=2,
                      padding='valid', use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      name='stem_conv')(x)
    x = layers.BatchNormalization(axis=axis, name='stem_bn')(x)
    x = layers.Activation(activation, name='stem_activation')(x)

    total_blocks = float(sum(_round_repeats(stage[1], depth_coefficient) for stage in STAGES))
    block = 0
    for index, (kernel_size, repeats, filters_in, filters_out, expansion,
                strides) in enumerate(STAGES):
        filters_in = _round_filters(filters_in, width_coefficient, depth_divisor)
        filters_out = _round_filters(filters_out, width_coefficient, depth_divisor)
        for repeat in range(_round_repeats(repeats, depth_coefficient)):
            x = _mbconv(x, 'block%d%s_' % (index + 1, chr(ord('a') + repeat)), activation,
                        drop_connect_rate * block / total_blocks, kernel_size,
                        filters_in if repeat == 0 else filters_out, filters_out, expansion,
                        strides if repeat == 0 else 1)
            block += 1

    x = _conv(_round_filters(1280, width_coefficient, depth_divisor), 1, 'top_conv')(x)
    x = layers.BatchNormalization(axis=axis, name='top_bn')(x)
    x = layers.Activation(activation, name='top_activation')(x)
    x = model_parts.top(x, HEAD, include_top, pooling, classes, classifier_activation,
                        weights, dropout_rate)
    model = models.Model(inputs, x, name=model_name)
    model_parts.load_model_weights(model, weights, include_top, WEIGHTS_URL,
                                   WEIGHTS_HASHES.get(model_name[-2:]))
    return model


_DOC = """Builds {name}, optionally with its ImageNet weights.

    The model rescales and normalizes its inputs itself: give it pixels in [0, 255]
    (`preprocess_input` of this module returns its input unchanged). Default input size:
    {size}x{size}.

    # Arguments
        include_top: whether to end with the classifier (global pooling, dropout, `Dense`).
        weights: None (random initialization), 'imagenet' (downloaded once into
            `~/.keras/models`), or the path of a weights file (a tf.keras one loads).
        input_tensor: a Keras tensor to use as the model's input image.
        input_shape: the input shape, channels included (without the top: at least 32x32,
            3 channels with ImageNet weights).
        pooling: without the top, None (the last feature map), 'avg' or 'max' (global
            pooling to a vector).
        classes: the classes of the classifier (1000 with ImageNet weights).
        classifier_activation: the classifier's activation, a name or a function (None:
            logits); with ImageNet weights only None or 'softmax'.
        **kwargs: `drop_connect_rate`, `depth_divisor`, `activation` of `EfficientNet`.

    # Returns
        A Keras `Model` named '{model_name}'.

    # Raises
        ValueError: for invalid `weights`, `classes`, `input_shape` or
            `classifier_activation`.
    """


def _variant(suffix, width, depth, size, dropout):
    model_name = 'efficientnet' + suffix

    def build(include_top=True, weights='imagenet', input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation='softmax', **kwargs):
        return EfficientNet(width, depth, size, dropout, model_name=model_name,
                            include_top=include_top, weights=weights,
                            input_tensor=input_tensor, input_shape=input_shape,
                            pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, **kwargs)
    build.__name__ = build.__qualname__ = 'EfficientNet' + suffix.upper()
    build.__doc__ = _DOC.format(name=build.__name__, size=size, model_name=model_name)
    return build


# (width, depth, input size, dropout) of each variant, from the paper.
EfficientNetB0 = _variant('b0', 1.0, 1.0, 224, 0.2)
EfficientNetB1 = _variant('b1', 1.0, 1.1, 240, 0.2)
EfficientNetB2 = _variant('b2', 1.1, 1.2, 260, 0.3)
EfficientNetB3 = _variant('b3', 1.2, 1.4, 300, 0.3)
EfficientNetB4 = _variant('b4', 1.4, 1.8, 380, 0.4)
EfficientNetB5 = _variant('b5', 1.6, 2.2, 456, 0.4)
EfficientNetB6 = _variant('b6', 1.8, 2.6, 528, 0.5)
EfficientNetB7 = _variant('b7', 2.0, 3.1, 600, 0.5)
