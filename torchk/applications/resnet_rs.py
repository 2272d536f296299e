"""ResNet-RS 50 to 420 (Bello et al., "Revisiting ResNets: Improved Training and Scaling
Strategies", 2021), as tf.keras 2.15 builds them.

ResNets with a deep stem of four 3x3 convolutions, squeeze-and-excitation in every
bottleneck block, average-pooled projection shortcuts and stochastic depth. With
`include_preprocessing` the models normalize their inputs themselves (pixels in [0, 255]).
"""
import sys

from keras import backend as K
from keras import layers
from keras import models

from . import model_parts
from .model_parts import CONV_KERNEL_INITIALIZER, decode_predictions, preprocess_input

__all__ = ['ResNetRS50', 'ResNetRS101', 'ResNetRS152', 'ResNetRS200', 'ResNetRS270',
           'ResNetRS350', 'ResNetRS420', 'preprocess_input', 'decode_predictions']

WEIGHTS_URL = 'https://storage.googleapis.com/tensorflow/keras-applications/resnet_rs/'

# The MD5 of each ImageNet weights file.
WEIGHTS_HASHES = {
    'resnet-rs-50-i160.h5': '69d9d925319f00a8bdd4af23c04e4102',
    'resnet-rs-50-i160_notop.h5': '90daa68cd26c95aa6c5d25451e095529',
    'resnet-rs-101-i160.h5': '544b3434d00efc199d66e9058c7f3379',
    'resnet-rs-101-i160_notop.h5': '82d5b90c5ce9d710da639d6216d0f979',
    'resnet-rs-101-i192.h5': 'eb285be29ab42cf4835ff20a5e3b5d23',
    'resnet-rs-101-i192_notop.h5': 'f9a0f6b85faa9c3db2b6e233c4eebb5b',
    'resnet-rs-152-i192.h5': '8d72a301ed8a6f11a47c4ced4396e338',
    'resnet-rs-152-i192_notop.h5': '5fbf7ac2155cb4d5a6180ee9e3aa8704',
    'resnet-rs-152-i224.h5': '31a46a92ab21b84193d0d71dd8c3d03b',
    'resnet-rs-152-i224_notop.h5': 'dc8b2cba2005552eafa3167f00dc2133',
    'resnet-rs-152-i256.h5': 'ba6271b99bdeb4e7a9b15c05964ef4ad',
    'resnet-rs-152-i256_notop.h5': 'fa79794252dbe47c89130f65349d654a',
    'resnet-rs-200-i256.h5': 'a76930b741884e09ce90fa7450747d5f',
    'resnet-rs-200-i256_notop.h5': 'bbdb3994718dfc0d1cd45d7eff3f3d9c',
    'resnet-rs-270-i256.h5': '20d575825ba26176b03cb51012a367a8',
    'resnet-rs-270-i256_notop.h5': '2c42ecb22e35f3e23d2f70babce0a2aa',
    'resnet-rs-350-i256.h5': 'f4a039dc3c421321b7fc240494574a68',
    'resnet-rs-350-i256_notop.h5': '6e44b55025bbdff8f51692a023143d66',
    'resnet-rs-350-i320.h5': '7ccb858cc738305e8ceb3c0140bee393',
    'resnet-rs-350-i320_notop.h5': 'ab0c1f9079d2f85a9facbd2c88aa6079',
    'resnet-rs-420-i320.h5': 'ae0eb9bed39e64fc8d7e0db4018dc7e8',
    'resnet-rs-420-i320_notop.h5': 'fe6217c32be8305b1889657172b98884',
}

HEAD = model_parts.Head(dropout='top_dropout')

# Depths: (blocks of each of the four groups, input sizes of the ImageNet weights).
DEPTHS = {
    50: ((3, 4, 6, 3), (160,)),
    101: ((3, 4, 23, 3), (160, 192)),
    152: ((3, 8, 36, 3), (192, 224, 256)),
    200: ((3, 24, 36, 3), (256,)),
    270: ((4, 29, 53, 4), (256,)),
    350: ((4, 36, 72, 4), (256, 320)),
    420: ((4, 44, 87, 4), (320,)),
}
GROUP_FILTERS = (64, 128, 256, 512)


def _fixed_padding_conv(x, filters, kernel_size, strides, name=None):
    """A convolution whose strided form pads the input explicitly (`kernel_size - 1` zeros,
    the odd one after) and then runs 'valid'."""
    if strides > 1:
        before = (kernel_size - 1) // 2
        after = kernel_size - 1 - before
        x = layers.ZeroPadding2D(((before, after), (before, after)))(x)
    return layers.Conv2D(filters, kernel_size, strides=strides,
                         padding='same' if strides == 1 else 'valid', use_bias=False,
                         kernel_initializer=CONV_KERNEL_INITIALIZER, name=name)(x)


def _batch_norm(name, momentum, epsilon):
    return layers.BatchNormalization(axis=model_parts.channel_axis(), momentum=momentum,
                                     epsilon=epsilon, name=name)


def _stem(x, momentum, epsilon, activation):
    name = 'stem_%d' % K.get_uid('stem_')
    for index, (filters, strides) in enumerate(((32, 2), (32, 1), (64, 1), (64, 2)), 1):
        x = _fixed_padding_conv(x, filters, 3, strides, name='%s_stem_conv_%d' % (name, index))
        x = _batch_norm('%s_stem_batch_norm_%d' % (name, index), momentum, epsilon)(x)
        x = layers.Activation(activation, name='%s_stem_act_%d' % (name, index))(x)
    return x


def _bottleneck(x, filters, strides, projection, momentum, epsilon, activation, se_ratio,
                drop_rate, name):
    """A bottleneck block (1x1, 3x3, 1x1 to `4 * filters`) with squeeze-and-excitation,
    stochastic depth and, for the first block of a group, a projection shortcut."""
    shortcut = x
    if projection:
        if strides == 2:
            shortcut = layers.AveragePooling2D((2, 2), strides=(2, 2), padding='same',
                                               name=name + '_projection_pooling')(x)
            shortcut = _fixed_padding_conv(shortcut, 4 * filters, 1, 1,
                                           name=name + '_projection_conv')
        else:
            shortcut = _fixed_padding_conv(x, 4 * filters, 1, strides,
                                           name=name + '_projection_conv')
        shortcut = _batch_norm(name + '_projection_batch_norm', momentum, epsilon)(shortcut)
    x = _fixed_padding_conv(x, filters, 1, 1, name=name + '_conv_1')
    # tf.keras names the first batch normalization without the underscore.
    x = _batch_norm(name + 'batch_norm_1', momentum, epsilon)(x)
    x = layers.Activation(activation, name=name + '_act_1')(x)
    x = _fixed_padding_conv(x, filters, 3, strides, name=name + '_conv_2')
    x = _batch_norm(name + '_batch_norm_2', momentum, epsilon)(x)
    x = layers.Activation(activation, name=name + '_act_2')(x)
    x = _fixed_padding_conv(x, 4 * filters, 1, 1, name=name + '_conv_3')
    x = _batch_norm(name + '_batch_norm_3', momentum, epsilon)(x)
    if 0 < se_ratio < 1:
        x = model_parts.squeeze_excite(x, 4 * filters, max(1, int(4 * filters * se_ratio)),
                                       'relu', name + '_se_')
    if drop_rate:
        x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + '_drop')(x)
    x = layers.Add()([x, shortcut])
    return layers.Activation(activation, name=name + '_output_act')(x)


def _imagenet_weights(weights, depth):
    """`weights` with 'imagenet' resolved to the largest input size's weights, and the names
    of the pretrained weights of `depth`."""
    sizes = DEPTHS[depth][1]
    if weights == 'imagenet':
        weights = 'imagenet-i%d' % max(sizes)
    return weights, tuple('imagenet-i%d' % size for size in sizes)


def ResNetRS(depth, input_shape=None, bn_momentum=0.0, bn_epsilon=1e-5, activation='relu',
             se_ratio=0.25, dropout_rate=0.25, drop_connect_rate=0.2, include_top=True,
             block_args=None, model_name='resnet-rs', pooling=None, weights='imagenet',
             input_tensor=None, classes=1000, classifier_activation='softmax',
             include_preprocessing=True):
    """Builds the ResNet-RS of `depth` (50, 101, 152, 200, 270, 350, 420).

    # Arguments
        depth: the depth, which picks the blocks per group and the ImageNet weights.
        bn_momentum, bn_epsilon: the batch normalizations'.
        activation: the activation of the convolutions.
        se_ratio: the squeeze-and-excitation ratio (0: none).
        dropout_rate: the dropout before the classifier.
        drop_connect_rate: the stochastic depth rate of the last group.
        block_args: a list of `{'input_filters': f, 'num_repeats': n}` per group (None: the
            depth's).
        model_name: the model's name and its weights files'.
        weights: None, 'imagenet' (the weights of the largest input size), 'imagenet-i<size>'
            (the weights trained at that size), or a weights file's path.
        input_shape, include_top, pooling, input_tensor, classes, classifier_activation,
        include_preprocessing: as the variants take them.

    # Returns
        A Keras `Model`.
    """
    weights, pretrained = _imagenet_weights(weights, depth)
    model_parts.check_weights(weights, include_top, classes, allowed=pretrained)
    image, inputs, input_shape = model_parts.image_input(input_tensor, input_shape, 224,
                                                         include_top, weights)
    axis = model_parts.channel_axis()
    x = image
    if include_preprocessing:
        x = layers.Rescaling(1. / 255)(x)
        if input_shape[axis - 1] == 3:
            x = layers.Normalization(mean=[0.485, 0.456, 0.406],
                                     variance=[0.229 ** 2, 0.224 ** 2, 0.225 ** 2],
                                     axis=axis)(x)
    x = _stem(x, bn_momentum, bn_epsilon, activation)
    if block_args is None:
        block_args = [dict(input_filters=filters, num_repeats=repeats)
                      for filters, repeats in zip(GROUP_FILTERS, DEPTHS[depth][0])]
    for index, group in enumerate(block_args):
        drop_rate = drop_connect_rate * float(index + 2) / (len(block_args) + 1)
        name = 'BlockGroup%d_' % (index + 2)
        for block in range(group['num_repeats']):
            x = _bottleneck(x, group['input_filters'], 2 if index and not block else 1,
                            block == 0, bn_momentum, bn_epsilon, activation, se_ratio,
                            drop_rate, '%s_block_%d_' % (name, block))
    x = model_parts.top(x, HEAD, include_top, pooling, classes, classifier_activation,
                        weights, dropout_rate)
    model = models.Model(inputs, x, name=model_name)
    model_parts.load_model_weights(model, weights, include_top, WEIGHTS_URL, WEIGHTS_HASHES,
                                   pretrained, '%s-%s' % (model_name, weights.split('-')[-1])
                                   if weights in pretrained else None)
    return model


_DOC = """Builds ResNetRS{depth}, optionally with its ImageNet weights.

    With `include_preprocessing` the model normalizes its inputs itself: give it pixels in
    [0, 255] (`preprocess_input` of this module returns its input unchanged). Default input
    size: 224x224.

    # Arguments
        include_top: whether to end with the classifier (global pooling, dropout, `Dense`).
        weights: None (random initialization), 'imagenet' (the ImageNet weights of the
            largest input size, downloaded once into `~/.keras/models`), one of {sizes}, or
            the path of a weights file (a tf.keras one loads).
        classes: the classes of the classifier (1000 with ImageNet weights).
        input_shape: the input shape, channels included (without the top: at least 32x32).
        input_tensor: a Keras tensor to use as the model's input image.
        pooling: without the top, None (the last feature map), 'avg' or 'max'.
        classifier_activation: the classifier's activation, a name or a function (None:
            logits); with ImageNet weights only None or 'softmax'.
        include_preprocessing: whether the model starts by normalizing its inputs.

    # Returns
        A Keras `Model` named 'resnet-rs-{depth}'.

    # Raises
        ValueError: for invalid `weights`, `classes`, `input_shape` or
            `classifier_activation`.
    """


def _variant(depth, dropout_rate, drop_connect_rate):
    def build(include_top=True, weights='imagenet', classes=1000, input_shape=None,
              input_tensor=None, pooling=None, classifier_activation='softmax',
              include_preprocessing=True):
        if depth >= 270:
            # The deepest models' graphs are walked recursively when the model is made.
            sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000 + 2 * depth))
        return ResNetRS(depth, include_top=include_top, drop_connect_rate=drop_connect_rate,
                        dropout_rate=dropout_rate, weights=weights, classes=classes,
                        input_shape=input_shape, input_tensor=input_tensor, pooling=pooling,
                        classifier_activation=classifier_activation,
                        model_name='resnet-rs-%d' % depth,
                        include_preprocessing=include_preprocessing)
    build.__name__ = build.__qualname__ = 'ResNetRS%d' % depth
    build.__doc__ = _DOC.format(depth=depth, sizes=', '.join(
        "'imagenet-i%d'" % size for size in DEPTHS[depth][1]))
    return build


# (dropout, stochastic depth rate) of each depth.
ResNetRS50 = _variant(50, 0.25, 0.0)
ResNetRS101 = _variant(101, 0.25, 0.0)
ResNetRS152 = _variant(152, 0.25, 0.0)
ResNetRS200 = _variant(200, 0.25, 0.1)
ResNetRS270 = _variant(270, 0.25, 0.1)
ResNetRS350 = _variant(350, 0.4, 0.1)
ResNetRS420 = _variant(420, 0.4, 0.1)
