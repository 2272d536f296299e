"""What the application builders share: the `weights` argument, the input image, the
classifier and pooling at the top (`Head`, `top`), the ImageNet weights download
(`load_model_weights`), squeeze-and-excitation.

tf.keras 2.15's models keep their arguments, layer names and weight order here, so that a
weights file tf.keras saved (or its ImageNet weights) loads by topology and by name.
"""
import os
import typing

from keras import activations
from keras import backend as K
from keras import layers
from keras.applications import imagenet_utils
from keras.utils import data_utils, layer_utils
import keras_applications
from keras_applications.imagenet_utils import _obtain_input_shape

CONV_KERNEL_INITIALIZER = {'class_name': 'VarianceScaling', 'config': {
    'scale': 2.0, 'mode': 'fan_out', 'distribution': 'normal'}}
"""He initialization by the output fan, truncated (Keras 2.3.1's 'normal' is truncated: it
is tf.keras' 'truncated_normal'), as EfficientNet and ResNet-RS initialize convolutions."""

DENSE_KERNEL_INITIALIZER = {'class_name': 'VarianceScaling', 'config': {
    'scale': 1. / 3., 'mode': 'fan_out', 'distribution': 'uniform'}}


def channel_axis():
    """The channel axis of images in the configured data format (3 or 1)."""
    return 3 if K.image_data_format() == 'channels_last' else 1


def check_weights(weights, include_top, classes, allowed=('imagenet',)):
    """Checks the `weights` and `classes` arguments of a builder.

    # Arguments
        weights: None, one of `allowed`, or the path of a weights file.
        include_top: whether the model has its classifier.
        classes: the classifier's classes.
        allowed: the names of the pretrained weights.

    # Raises
        ValueError: for weights that are none of those, or pretrained weights with a
            classifier of other than 1000 classes.
    """
    named = isinstance(weights, str) and weights in allowed
    if not (weights is None or named or (isinstance(weights, (str, os.PathLike))
                                         and os.path.exists(weights))):
        raise ValueError('The `weights` argument should be None (random initialization), '
                         '%s, or the path to a weights file that exists; got weights=%r.'
                         % (' or '.join(repr(name) for name in allowed), weights))
    if named and include_top and classes != 1000:
        raise ValueError('With weights=%r and include_top=True, `classes` should be 1000 '
                         '(the ImageNet classes); got classes=%r.' % (weights, classes))


def image_input(input_tensor, input_shape, default_size, include_top, weights, min_size=32):
    """The input of a builder, from its `input_tensor` and `input_shape` arguments.

    # Returns
        `(image, inputs, input_shape)`: the image tensor the network starts from, the
        model's inputs (the Keras inputs `input_tensor` comes from, or `image`), and the
        checked input shape (channels included).
    """
    input_shape = _obtain_input_shape(input_shape, default_size=default_size,
                                      min_size=min_size, data_format=K.image_data_format(),
                                      require_flatten=include_top, weights=weights)
    if input_tensor is None:
        image = layers.Input(shape=input_shape)
        return image, image, input_shape
    if not K.is_keras_tensor(input_tensor):
        image = layers.Input(tensor=input_tensor, shape=input_shape)
    else:
        image = input_tensor
    return image, layer_utils.get_source_inputs(input_tensor), input_shape


def correct_pad(inputs, kernel_size):
    """The zero padding before a strided 'valid' convolution that centres its window as
    TF-slim's models did: `((top, bottom), (left, right))`."""
    return keras_applications.correct_pad(K, inputs, kernel_size)


def check_classifier_activation(classifier_activation, weights):
    """Pretrained (or file) weights admit only a softmax or linear classifier.

    # Raises
        ValueError: for another activation with weights other than None.
    """
    if weights is None:
        return
    if activations.get(classifier_activation) not in (activations.get('softmax'),
                                                       activations.get(None)):
        raise ValueError('Only None and "softmax" are allowed as `classifier_activation` with '
                         'pretrained weights and include_top=True; got '
                         'classifier_activation=%r.' % (classifier_activation,))


def global_pooling(x, pooling, names=('avg_pool', 'max_pool')):
    """`x` pooled over its spatial axes as `pooling` says ('avg', 'max', or None: not pooled),
    by a layer named from `names` (None: Keras' default name)."""
    if pooling == 'avg':
        return layers.GlobalAveragePooling2D(name=names[0])(x)
    if pooling == 'max':
        return layers.GlobalMaxPooling2D(name=names[1])(x)
    return x


class Head(typing.NamedTuple):
    """The classifier at the top of a family's models, as tf.keras names its layers: global
    average pooling, a dropout (EfficientNet, ResNet-RS), a layer normalization (ConvNeXt),
    the `Dense` classifier."""
    pool: str = 'avg_pool'
    dense: str = 'predictions'
    dropout: str = None
    layer_norm: str = None
    layer_norm_epsilon: float = 1e-3
    kernel_initializer: object = 'glorot_uniform'
    activate: bool = True
    """Whether the `Dense` takes `classifier_activation` (RegNet's is linear whatever it is,
    as in tf.keras)."""
    pooling_names: tuple = ('avg_pool', 'max_pool')
    """The global pooling's names without the top (None: Keras' default names)."""


def top(x, head, include_top, pooling, classes, classifier_activation, weights,
        dropout_rate=0.):
    """The top of a model from its last feature map `x`: with `include_top`, the classifier
    `head` (its dropout at `dropout_rate`, if above 0), else the pooling `pooling` says
    (followed by the head's layer normalization, if it has one).

    # Raises
        ValueError: for a `classifier_activation` that weights other than None do not admit
            (`check_classifier_activation`).
    """
    if not include_top:
        x = global_pooling(x, pooling, names=head.pooling_names)
        if head.layer_norm is not None:
            x = layers.LayerNormalization(epsilon=head.layer_norm_epsilon)(x)
        return x
    check_classifier_activation(classifier_activation, weights)
    x = layers.GlobalAveragePooling2D(name=head.pool)(x)
    if head.dropout is not None and dropout_rate > 0:
        x = layers.Dropout(dropout_rate, name=head.dropout)(x)
    if head.layer_norm is not None:
        x = layers.LayerNormalization(epsilon=head.layer_norm_epsilon, name=head.layer_norm)(x)
    return layers.Dense(classes, activation=classifier_activation if head.activate else None,
                        kernel_initializer=head.kernel_initializer, name=head.dense)(x)


def squeeze_excite(x, filters, reduced_filters, activation, prefix):
    """EfficientNet's squeeze-and-excitation (also ResNet-RS'): the channels of `x` scaled by
    a sigmoid gate computed from their spatial means through `reduced_filters` channels.

    Layers are named `prefix` + `se_squeeze`, `se_reshape`, `se_reduce`, `se_expand`,
    `se_excite`; `filters` is the channels of `x`.
    """
    shape = (filters, 1, 1) if channel_axis() == 1 else (1, 1, filters)
    se = layers.GlobalAveragePooling2D(name=prefix + 'se_squeeze')(x)
    se = layers.Reshape(shape, name=prefix + 'se_reshape')(se)
    se = layers.Conv2D(reduced_filters, 1, padding='same', activation=activation,
                       kernel_initializer=CONV_KERNEL_INITIALIZER, name=prefix + 'se_reduce')(se)
    se = layers.Conv2D(filters, 1, padding='same', activation='sigmoid',
                       kernel_initializer=CONV_KERNEL_INITIALIZER, name=prefix + 'se_expand')(se)
    return layers.multiply([x, se], name=prefix + 'se_excite')


def load_weights(model, weights, file_name=None, origin=None, file_hash=None):
    """Loads `weights` into `model`: a file's path, or 'imagenet'-like names whose file
    `file_name` is taken from Keras' cache (`~/.keras/models`) or downloaded from `origin`.

    # Raises
        IOError: if the file cannot be downloaded (offline, say), naming its URL.
        ValueError: if a downloaded file does not have the expected hash.
    """
    if weights is None:
        return
    if file_name is None:
        model.load_weights(weights)
        return
    try:
        path = data_utils.get_file(file_name, origin, cache_subdir='models',
                                   file_hash=file_hash)
    except Exception as error:  # Keras' get_file raises a bare Exception on a failed fetch.
        raise IOError('%s: the %s weights could not be downloaded from %s (%s). Download the '
                      'file by hand and pass its path as `weights`.'
                      % (model.name, weights, origin, error)) from error
    if file_hash is not None and not data_utils.validate_file(path, file_hash):
        raise ValueError('%s: the downloaded weights file %s does not have the hash %s of %s.'
                         % (model.name, path, file_hash, origin))
    model.load_weights(path)


def load_model_weights(model, weights, include_top, weights_url, weights_hashes,
                       pretrained=('imagenet',), stem=None):
    """`load_weights` for the families whose ImageNet files are named after the model
    (`<stem>.h5` with the top, `<stem>_notop.h5` without; the stem is the model's name unless
    given) under `weights_url`.

    # Arguments
        weights_hashes: the files' hashes, `(with the top, without)` or by file name; None:
            the model has no ImageNet weights.
        pretrained: the names of the pretrained weights; other `weights` are None or a
            file's path.
    """
    if weights not in pretrained:
        load_weights(model, weights)
        return
    if weights_hashes is None:
        raise ValueError('%s has no ImageNet weights; pass weights=None or a file\'s path.'
                         % model.name)
    file_name = (stem or model.name) + ('.h5' if include_top else '_notop.h5')
    file_hash = (weights_hashes[file_name] if isinstance(weights_hashes, dict)
                 else weights_hashes[0 if include_top else 1])
    load_weights(model, weights, file_name, weights_url + file_name, file_hash)


def preprocess_input(x, data_format=None):
    """Returns `x` unchanged: this model rescales its inputs itself (the pixel values it
    expects are in [0, 255]); kept for tf.keras' API.

    # Arguments
        x: a numpy array or tensor of images.
        data_format: unused (tf.keras' argument).

    # Returns
        `x`.
    """
    return x


def decode_predictions(preds, top=5):
    """The `top` ImageNet classes of each prediction: lists of `(class_id, name, score)`
    (Keras' `imagenet_utils.decode_predictions`, which downloads the class index once).

    # Arguments
        preds: a numpy array of shape `(samples, 1000)`.
        top: how many classes to return per sample.

    # Returns
        A list of lists of `(class_id, class_name, score)` tuples.
    """
    return imagenet_utils.decode_predictions(preds, top=top)
