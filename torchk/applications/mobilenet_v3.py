"""MobileNetV3 Small and Large (Howard et al., "Searching for MobileNetV3", ICCV 2019), as
tf.keras 2.15 builds them.

Inverted residual blocks found by architecture search, some with squeeze-and-excitation
and the hard-swish activation (`x * relu6(x + 3) / 6`); the minimalistic variants use 3x3
kernels, ReLU and no squeeze-and-excitation. With `include_preprocessing` the models
rescale their inputs themselves (pixels in [0, 255] to [-1, 1]).
"""
import warnings

from keras import backend as K
from keras import layers
from keras import models
from keras.utils import layer_utils

from . import model_parts
from .model_parts import decode_predictions, preprocess_input

__all__ = ['MobileNetV3Small', 'MobileNetV3Large', 'preprocess_input', 'decode_predictions']

WEIGHTS_URL = 'https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/'

# The MD5 of each ImageNet weights file: (with the classifier, without).
WEIGHTS_HASHES = {
    'large_224_0.75_float': ('765b44a33ad4005b3ac83185abf1d0eb',
                             '40af19a13ebea4e2ee0c676887f69a2e'),
    'large_224_1.0_float': ('59e551e166be033d707958cf9e29a6a7',
                            '07fb09a5933dd0c8eaafa16978110389'),
    'large_minimalistic_224_1.0_float': ('675e7b876c45c57e9e63e6d90a36599c',
                                         'ec5221f64a2f6d1ef965a614bdae7973'),
    'small_224_0.75_float': ('cb65d4e5be93758266aa0a7f2c6708b7',
                             'ebdb5cc8e0b497cd13a7c275d475c819'),
    'small_224_1.0_float': ('8768d4c2e7dee89b9d02b2d03d65d862',
                            'd3e8ec802a04aa4fc771ee12a9a9b836'),
    'small_minimalistic_224_1.0_float': ('99cd97fb2fcdad2bf028eb838de69e37',
                                         'cde8136e733e811080d9fcd8a252f7e4'),
}

# Blocks: (expansion, output filters, kernel size, stride, squeeze-and-excitation,
# hard-swish). A kernel size of None is the model's (5, or 3 when minimalistic); the
# squeeze-and-excitation and hard-swish flags hold unless minimalistic.
SMALL_BLOCKS = (
    (1, 16, 3, 2, True, False),
    (72. / 16, 24, 3, 2, False, False),
    (88. / 24, 24, 3, 1, False, False),
    (4, 40, None, 2, True, True),
    (6, 40, None, 1, True, True),
    (6, 40, None, 1, True, True),
    (3, 48, None, 1, True, True),
    (3, 48, None, 1, True, True),
    (6, 96, None, 2, True, True),
    (6, 96, None, 1, True, True),
    (6, 96, None, 1, True, True),
)
LARGE_BLOCKS = (
    (1, 16, 3, 1, False, False),
    (4, 24, 3, 2, False, False),
    (3, 24, 3, 1, False, False),
    (3, 40, None, 2, True, False),
    (3, 40, None, 1, True, False),
    (3, 40, None, 1, True, False),
    (6, 80, 3, 2, False, True),
    (2.5, 80, 3, 1, False, True),
    (2.3, 80, 3, 1, False, True),
    (2.3, 80, 3, 1, False, True),
    (6, 112, 3, 1, True, True),
    (6, 112, 3, 1, True, True),
    (6, 160, None, 2, True, True),
    (6, 160, None, 1, True, True),
    (6, 160, None, 1, True, True),
)
SE_RATIO = 0.25


def _depth(value, divisor=8):
    """`value` to the nearest multiple of `divisor` (at least `divisor`), never below 90 %."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _batch_norm(name):
    return layers.BatchNormalization(axis=model_parts.channel_axis(), epsilon=1e-3,
                                     momentum=0.999, name=name)


def _relu(x):
    return layers.ReLU()(x)


def _hard_sigmoid(x):
    """`relu6(x + 3) / 6`, computed in TF's order."""
    x = layers.Rescaling(1., offset=3.)(x)
    x = layers.ReLU(6.)(x)
    return layers.Rescaling(1. / 6.)(x)


def _hard_swish(x):
    return layers.Multiply()([x, _hard_sigmoid(x)])


def _squeeze_excite(x, filters, prefix):
    se = layers.GlobalAveragePooling2D(keepdims=True, name=prefix + 'squeeze_excite/AvgPool')(x)
    se = layers.Conv2D(_depth(filters * SE_RATIO), 1, padding='same',
                       name=prefix + 'squeeze_excite/Conv')(se)
    se = layers.ReLU(name=prefix + 'squeeze_excite/Relu')(se)
    se = layers.Conv2D(filters, 1, padding='same', name=prefix + 'squeeze_excite/Conv_1')(se)
    se = _hard_sigmoid(se)
    return layers.Multiply(name=prefix + 'squeeze_excite/Mul')([x, se])


def _inverted_residual(x, index, expansion, filters, kernel_size, stride, squeeze_excite,
                       activation):
    shortcut = x
    filters_in = K.int_shape(x)[model_parts.channel_axis()]
    expanded = _depth(filters_in * expansion)
    prefix = 'expanded_conv/'
    if index:
        prefix = 'expanded_conv_%d/' % index
        x = layers.Conv2D(expanded, 1, padding='same', use_bias=False, name=prefix + 'expand')(x)
        x = _batch_norm(prefix + 'expand/BatchNorm')(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(model_parts.correct_pad(x, kernel_size),
                                 name=prefix + 'depthwise/pad')(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding='same' if stride == 1 else 'valid', use_bias=False,
                               name=prefix + 'depthwise')(x)
    x = _batch_norm(prefix + 'depthwise/BatchNorm')(x)
    x = activation(x)
    if squeeze_excite:
        x = _squeeze_excite(x, expanded, prefix)
    x = layers.Conv2D(filters, 1, padding='same', use_bias=False, name=prefix + 'project')(x)
    x = _batch_norm(prefix + 'project/BatchNorm')(x)
    if stride == 1 and filters_in == filters:
        x = layers.Add(name=prefix + 'Add')([shortcut, x])
    return x


def _image_input(input_shape, input_tensor):
    """`(image, inputs)` of the model; the input size is free (at least 32x32)."""
    channels_last = K.image_data_format() == 'channels_last'
    if input_tensor is not None:
        if not (K.is_tensor(input_tensor) and K.is_keras_tensor(input_tensor)):
            raise ValueError('`input_tensor` should be a Keras tensor; got %r.'
                             % (input_tensor,))
        tensor_shape = tuple(K.int_shape(input_tensor)[1:])
        if input_shape is not None and tuple(input_shape) != tensor_shape:
            raise ValueError('`input_shape` %s differs from the shape %s of `input_tensor`.'
                             % (tuple(input_shape), tensor_shape))
        input_shape = tensor_shape
    elif input_shape is None:
        input_shape = (None, None, 3) if channels_last else (3, None, None)
    rows, cols = input_shape[:2] if channels_last else input_shape[1:]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError('Input size must be at least 32x32; got input_shape=%s.'
                         % (tuple(input_shape),))
    if input_tensor is None:
        image = layers.Input(shape=input_shape)
        return image, image, rows, cols
    return input_tensor, layer_utils.get_source_inputs(input_tensor), rows, cols


def MobileNetV3(blocks, last_point_filters, input_shape=None, alpha=1.0, model_type='large',
                minimalistic=False, include_top=True, weights='imagenet', input_tensor=None,
                classes=1000, pooling=None, dropout_rate=0.2, classifier_activation='softmax',
                include_preprocessing=True):
    """Builds a MobileNetV3 of `blocks` (`SMALL_BLOCKS` or `LARGE_BLOCKS`) whose top has
    `last_point_filters` channels before the classifier; the other arguments are the
    variants'. `model_type` ('small' or 'large') names the model and its weights files."""
    model_parts.check_weights(weights, include_top, classes)
    image, inputs, rows, cols = _image_input(input_shape, input_tensor)
    if weights == 'imagenet':
        if alpha not in ((1.0,) if minimalistic else (0.75, 1.0)):
            raise ValueError('ImageNet weights exist for alpha=0.75 and 1.0 (1.0 only when '
                             'minimalistic); got alpha=%r, minimalistic=%r.'
                             % (alpha, minimalistic))
        if rows != cols or rows != 224:
            warnings.warn('`input_shape` is undefined, not square or not 224x224: the '
                          'weights for 224x224 inputs are loaded.', stacklevel=3)
    kernel, activation = (3, _relu) if minimalistic else (5, _hard_swish)
    axis = model_parts.channel_axis()

    x = image
    if include_preprocessing:
        x = layers.Rescaling(1. / 127.5, offset=-1.)(x)
    x = layers.Conv2D(16, 3, strides=2, padding='same', use_bias=False, name='Conv')(x)
    x = _batch_norm('Conv/BatchNorm')(x)
    x = activation(x)
    for index, (expansion, filters, kernel_size, stride, squeeze_excite,
                hard_swish) in enumerate(blocks):
        x = _inverted_residual(x, index, expansion, _depth(filters * alpha),
                               kernel_size or kernel, stride,
                               squeeze_excite and not minimalistic,
                               activation if hard_swish else _relu)
    x = layers.Conv2D(_depth(K.int_shape(x)[axis] * 6), 1, padding='same', use_bias=False,
                      name='Conv_1')(x)
    x = _batch_norm('Conv_1/BatchNorm')(x)
    x = activation(x)
    if include_top:
        if alpha > 1.0:
            last_point_filters = _depth(last_point_filters * alpha)
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_filters, 1, padding='same', name='Conv_2')(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, 1, padding='same', name='Logits')(x)
        x = layers.Flatten()(x)
        model_parts.check_classifier_activation(classifier_activation, weights)
        x = layers.Activation(classifier_activation, name='Predictions')(x)
    else:
        x = model_parts.global_pooling(x, pooling)
    model = models.Model(inputs, x, name='MobilenetV3' + model_type)
    if weights == 'imagenet':
        weights_name = '%s%s_224_%s_float' % (model_type, '_minimalistic' if minimalistic
                                              else '', alpha)
        file_name = 'weights_mobilenet_v3_%s%s' % (weights_name, '.h5' if include_top
                                                   else '_no_top_v2.h5')
        model_parts.load_weights(model, weights, file_name, WEIGHTS_URL + file_name,
                                 WEIGHTS_HASHES[weights_name][0 if include_top else 1])
    else:
        model_parts.load_weights(model, weights)
    return model


_DOC = """Builds MobileNetV3{size}, optionally with its ImageNet weights.

    With `include_preprocessing` the model rescales its inputs itself: give it pixels in
    [0, 255] (`preprocess_input` of this module returns its input unchanged). The input size
    is free (at least 32x32); the ImageNet weights were trained on 224x224.

    # Arguments
        input_shape: the input shape, channels included (default: any size, 3 channels).
        alpha: the width multiplier of every layer's filters (ImageNet weights: 0.75 or
            1.0, 1.0 when minimalistic).
        minimalistic: 3x3 kernels, ReLU and no squeeze-and-excitation.
        include_top: whether to end with the classifier.
        weights: None (random initialization), 'imagenet' (downloaded once into
            `~/.keras/models`), or the path of a weights file (a tf.keras one loads).
        input_tensor: a Keras tensor to use as the model's input image.
        classes: the classes of the classifier (1000 with ImageNet weights).
        pooling: without the top, None (the last feature map), 'avg' or 'max'.
        dropout_rate: the dropout before the classifier.
        classifier_activation: the classifier's activation, a name or a function (None:
            logits); with ImageNet weights only None or 'softmax'.
        include_preprocessing: whether the model starts by rescaling its inputs.

    # Returns
        A Keras `Model` named 'MobilenetV3{model_type}'.

    # Raises
        ValueError: for invalid `weights`, `classes`, `alpha`, `input_shape`,
            `input_tensor` or `classifier_activation`.
    """


def _variant(size, blocks, last_point_filters):
    def build(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,
              weights='imagenet', input_tensor=None, classes=1000, pooling=None,
              dropout_rate=0.2, classifier_activation='softmax', include_preprocessing=True):
        return MobileNetV3(blocks, last_point_filters, input_shape, alpha, size.lower(),
                           minimalistic, include_top, weights, input_tensor, classes, pooling,
                           dropout_rate, classifier_activation, include_preprocessing)
    build.__name__ = build.__qualname__ = 'MobileNetV3' + size
    build.__doc__ = _DOC.format(size=size, model_type=size.lower())
    return build


MobileNetV3Small = _variant('Small', SMALL_BLOCKS, 1024)
MobileNetV3Large = _variant('Large', LARGE_BLOCKS, 1280)
