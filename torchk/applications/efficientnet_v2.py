"""EfficientNetV2 B0-B3, S, M and L (Tan & Le, "EfficientNetV2: Smaller Models and Faster
Training", ICML 2021), as tf.keras 2.15 builds them.

The early stages are Fused-MBConv blocks (one regular convolution in place of the expansion
and the depthwise convolution), the later ones MBConv blocks with squeeze-and-excitation.
With `include_preprocessing` the models rescale their inputs themselves (pixels in
[0, 255]): B0-B3 to ImageNet's mean and deviation, S, M and L to [-1, 1].
"""
import math

from keras import layers
from keras import models

from . import model_parts
from .model_parts import (CONV_KERNEL_INITIALIZER, DENSE_KERNEL_INITIALIZER, channel_axis,
                          decode_predictions, preprocess_input)

__all__ = ['EfficientNetV2B0', 'EfficientNetV2B1', 'EfficientNetV2B2', 'EfficientNetV2B3',
           'EfficientNetV2S', 'EfficientNetV2M', 'EfficientNetV2L', 'preprocess_input',
           'decode_predictions']

WEIGHTS_URL = 'https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/'

# The MD5 of each variant's ImageNet weights: (with the classifier, without).
WEIGHTS_HASHES = {
    'b0': ('21ecbf6da12460d5c40bb2f29ceb2188', '893217f2bb855e2983157299931e43ff'),
    'b1': ('069f0534ff22adf035c89e2d9547a9dc', '0e80663031ca32d657f9caa404b6ec37'),
    'b2': ('424e49f28180edbde1e94797771950a7', '1dfe2e7a5d45b6632553a8961ea609eb'),
    'b3': ('1f1fc43bd98a6e4fd8fdfd551e02c7a0', 'f6abf7b5849ac99a89b50dd3fd532856'),
    '-s': ('e1d88a8495beba45748fedd0cecbe016', 'af0682fb74e8c54910f2d4393339c070'),
    '-m': ('a3bf6aa3276309f4fc6a34aa114c95cd', '1b8dc055df72dde80d614482840fe342'),
    '-l': ('27e6d408b53c7ebc868fefa357689935', 'b0b66b5c863aef5b46e8608fe1711615'),
}

HEAD = model_parts.Head(dropout='top_dropout', kernel_initializer=DENSE_KERNEL_INITIALIZER)

FUSED, MBCONV = 'fused', 'mbconv'

# Stages: (block, kernel size, repeats, input filters, output filters, expansion,
# squeeze-and-excitation ratio, stride). B1-B3 scale B0's.
STAGES = {
    'b': (
        (FUSED, 3, 1, 32, 16, 1, 0, 1),
        (FUSED, 3, 2, 16, 32, 4, 0, 2),
        (FUSED, 3, 2, 32, 48, 4, 0, 2),
        (MBCONV, 3, 3, 48, 96, 4, 0.25, 2),
        (MBCONV, 3, 5, 96, 112, 6, 0.25, 1),
        (MBCONV, 3, 8, 112, 192, 6, 0.25, 2),
    ),
    's': (
        (FUSED, 3, 2, 24, 24, 1, 0, 1),
        (FUSED, 3, 4, 24, 48, 4, 0, 2),
        (FUSED, 3, 4, 48, 64, 4, 0, 2),
        (MBCONV, 3, 6, 64, 128, 4, 0.25, 2),
        (MBCONV, 3, 9, 128, 160, 6, 0.25, 1),
        (MBCONV, 3, 15, 160, 256, 6, 0.25, 2),
    ),
    'm': (
        (FUSED, 3, 3, 24, 24, 1, 0, 1),
        (FUSED, 3, 5, 24, 48, 4, 0, 2),
        (FUSED, 3, 5, 48, 80, 4, 0, 2),
        (MBCONV, 3, 7, 80, 160, 4, 0.25, 2),
        (MBCONV, 3, 14, 160, 176, 6, 0.25, 1),
        (MBCONV, 3, 18, 176, 304, 6, 0.25, 2),
        (MBCONV, 3, 5, 304, 512, 6, 0.25, 1),
    ),
    'l': (
        (FUSED, 3, 4, 32, 32, 1, 0, 1),
        (FUSED, 3, 7, 32, 64, 4, 0, 2),
        (FUSED, 3, 7, 64, 96, 4, 0, 2),
        (MBCONV, 3, 10, 96, 192, 4, 0.25, 2),
        (MBCONV, 3, 19, 192, 224, 6, 0.25, 1),
        (MBCONV, 3, 25, 224, 384, 6, 0.25, 2),
        (MBCONV, 3, 7, 384, 640, 6, 0.25, 1),
    ),
}

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STDDEV = (0.229, 0.224, 0.225)


def _round_filters(filters, width, divisor, min_depth):
    """`filters * width` to the nearest multiple of `divisor`, at least `min_depth`."""
    return int(max(min_depth or divisor,
                   int(filters * width + divisor / 2) // divisor * divisor))


def _batch_norm(name, momentum):
    return layers.BatchNormalization(axis=channel_axis(), momentum=momentum, name=name)


def _conv(filters, kernel_size, name, strides=1):
    return layers.Conv2D(filters, kernel_size, strides=strides, padding='same', use_bias=False,
                         kernel_initializer=CONV_KERNEL_INITIALIZER, name=name)


def _block(x, kind, name, activation, momentum, drop_rate, kernel_size, filters_in,
           filters_out, expansion, se_ratio, strides):
    """One MBConv or Fused-MBConv block, with its residual connection (and stochastic depth)
    where the shapes allow."""
    inputs = x
    filters = filters_in * expansion
    if expansion != 1:
        x = _conv(filters, 1 if kind == MBCONV else kernel_size, name + 'expand_conv',
                  strides=1 if kind == MBCONV else strides)(x)
        x = _batch_norm(name + 'expand_bn', momentum)(x)
        x = layers.Activation(activation, name=name + 'expand_activation')(x)
    if kind == MBCONV:
        x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding='same',
                                   use_bias=False, depthwise_initializer=CONV_KERNEL_INITIALIZER,
                                   name=name + 'dwconv2')(x)
        x = _batch_norm(name + 'bn', momentum)(x)
        x = layers.Activation(activation, name=name + 'activation')(x)
    if 0 < se_ratio <= 1:
        x = model_parts.squeeze_excite(x, filters, max(1, int(filters_in * se_ratio)),
                                       activation, name)
    # A Fused-MBConv block without expansion projects with its one full convolution.
    fused_alone = kind == FUSED and expansion == 1
    x = _conv(filters_out, kernel_size if fused_alone else 1, name + 'project_conv',
              strides=strides if fused_alone else 1)(x)
    x = _batch_norm(name + 'project_bn', momentum)(x)
    if fused_alone:
        x = layers.Activation(activation, name=name + 'project_activation')(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + 'drop')(x)
        x = layers.add([x, inputs], name=name + 'add')
    return x


def EfficientNetV2(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                   drop_connect_rate=0.2, depth_divisor=8, min_depth=8, bn_momentum=0.9,
                   activation='swish', model_name='efficientnetv2', include_top=True,
                   weights='imagenet', input_tensor=None, input_shape=None, pooling=None,
                   classes=1000, classifier_activation='softmax', include_preprocessing=True):
    """Builds an EfficientNetV2 of the given scaling (see the variants' doc).

    # Arguments
        width_coefficient: float, the factor of every stage's filters.
        depth_coefficient: float, the factor of every stage's blocks.
        default_size: int, the input size of the variant (with ImageNet weights and the top).
        dropout_rate: float, the dropout before the classifier.
        drop_connect_rate: float, the stochastic depth rate at the last block.
        depth_divisor: int, filters are rounded to multiples of it.
        min_depth: int, the fewest filters of a convolution.
        bn_momentum: float, the batch normalizations' momentum.
        activation: the activation of the convolutions.
        model_name: 'efficientnetv2-b0', ..., 'efficientnetv2-l': the model's name, which
            picks the stages and the weights files.
        include_top, weights, input_tensor, input_shape, pooling, classes,
        classifier_activation, include_preprocessing: as the variants take them.

    # Returns
        A Keras `Model`.
    """
    variant = model_name.split('-')[-1]
    if variant[:1] not in STAGES:
        raise ValueError("`model_name` should end in '-b0' to '-b3', '-s', '-m' or '-l' (it "
                         "picks the stages); got model_name=%r." % (model_name,))
    stages = STAGES[variant[0]]
    model_parts.check_weights(weights, include_top, classes)
    image, inputs, input_shape = model_parts.image_input(input_tensor, input_shape,
                                                         default_size, include_top, weights)
    axis = channel_axis()
    x = image
    if include_preprocessing:
        if variant.startswith('b') and input_shape[axis - 1] == 3:
            x = layers.Rescaling(1. / 255)(x)
            x = layers.Normalization(mean=list(IMAGENET_MEAN),
                                     variance=[std ** 2 for std in IMAGENET_STDDEV],
                                     axis=axis)(x)
        else:
            x = layers.Rescaling(1. / 128., offset=-1)(x)

    def filters(count):
        return _round_filters(count, width_coefficient, depth_divisor, min_depth)

    x = _conv(filters(stages[0][3]), 3, 'stem_conv', strides=2)(x)
    x = _batch_norm('stem_bn', bn_momentum)(x)
    x = layers.Activation(activation, name='stem_activation')(x)

    # tf.keras spreads the stochastic depth over the unscaled count of blocks.
    total_blocks = float(sum(stage[2] for stage in stages))
    block = 0
    for index, (kind, kernel_size, repeats, filters_in, filters_out, expansion, se_ratio,
                strides) in enumerate(stages):
        filters_in, filters_out = filters(filters_in), filters(filters_out)
        for repeat in range(int(math.ceil(depth_coefficient * repeats))):
            x = _block(x, kind, 'block%d%s_' % (index + 1, chr(ord('a') + repeat)), activation,
                       bn_momentum, drop_connect_rate * block / total_blocks, kernel_size,
                       filters_in if repeat == 0 else filters_out, filters_out, expansion,
                       se_ratio, strides if repeat == 0 else 1)
            block += 1

    x = _conv(filters(1280), 1, 'top_conv')(x)
    x = _batch_norm('top_bn', bn_momentum)(x)
    x = layers.Activation(activation, name='top_activation')(x)
    x = model_parts.top(x, HEAD, include_top, pooling, classes, classifier_activation,
                        weights, dropout_rate)
    model = models.Model(inputs, x, name=model_name)
    model_parts.load_model_weights(model, weights, include_top, WEIGHTS_URL,
                                   WEIGHTS_HASHES.get(model_name[-2:]))
    return model


_DOC = """Builds {name}, optionally with its ImageNet weights.

    With `include_preprocessing` the model rescales its inputs itself: give it pixels in
    [0, 255] (`preprocess_input` of this module returns its input unchanged). Default input
    size: {size}x{size}.

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
        include_preprocessing: whether the model starts by rescaling its inputs.

    # Returns
        A Keras `Model` named '{model_name}'.

    # Raises
        ValueError: for invalid `weights`, `classes`, `input_shape` or
            `classifier_activation`.
    """


def _variant(suffix, width, depth, size):
    model_name = 'efficientnetv2-' + suffix

    def build(include_top=True, weights='imagenet', input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation='softmax',
              include_preprocessing=True):
        return EfficientNetV2(width, depth, size, model_name=model_name,
                              include_top=include_top, weights=weights,
                              input_tensor=input_tensor, input_shape=input_shape,
                              pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation,
                              include_preprocessing=include_preprocessing)
    build.__name__ = build.__qualname__ = 'EfficientNetV2' + suffix.upper()
    build.__doc__ = _DOC.format(name=build.__name__, size=size, model_name=model_name)
    return build


# (width, depth, input size) of each variant.
EfficientNetV2B0 = _variant('b0', 1.0, 1.0, 224)
EfficientNetV2B1 = _variant('b1', 1.0, 1.1, 240)
EfficientNetV2B2 = _variant('b2', 1.1, 1.2, 260)
EfficientNetV2B3 = _variant('b3', 1.2, 1.4, 300)
EfficientNetV2S = _variant('s', 1.0, 1.0, 384)
EfficientNetV2M = _variant('m', 1.0, 1.0, 480)
EfficientNetV2L = _variant('l', 1.0, 1.0, 480)
