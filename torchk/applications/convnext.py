"""ConvNeXt Tiny, Small, Base, Large and XLarge (Liu et al., "A ConvNet for the 2020s",
CVPR 2022), as tf.keras 2.15 builds them.

A 4x4 patchify stem and four stages of ConvNeXt blocks (7x7 depthwise convolution, layer
normalization, an inverted MLP with GELU, a learned per-channel scale, a residual connection)
separated by 2x2 strided downsampling convolutions. With `include_preprocessing` the models
normalize their inputs themselves (pixels in [0, 255]).
"""
import numpy as np

from keras import backend as K
from keras import initializers
from keras import layers
from keras import models
from keras.engine.base_layer import Layer

from . import model_parts
from .model_parts import decode_predictions, preprocess_input

__all__ = ['ConvNeXtTiny', 'ConvNeXtSmall', 'ConvNeXtBase', 'ConvNeXtLarge', 'ConvNeXtXLarge',
           'LayerScale', 'StochasticDepth', 'preprocess_input', 'decode_predictions']

WEIGHTS_URL = 'https://storage.googleapis.com/tensorflow/keras-applications/convnext/'

# The SHA-256 of each variant's ImageNet weights: (with the classifier, without).
WEIGHTS_HASHES = {
    'tiny': ('8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff',
             'd547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1'),
    'small': ('ce1277d8f1ee5a0ef0e171469089c18f5233860ceaf9b168049cb9263fd7483c',
              '6fc8009faa2f00c1c1dfce59feea9b0745eb260a7dd11bee65c8e20843da6eab'),
    'base': ('52cbb006d3dadd03f6e095a8ca1aca47aecdd75acb4bc74bce1f5c695d0086e6',
             '40a20c5548a5e9202f69735ecc06c990e6b7c9d2de39f0361e27baeb24cb7c45'),
    'large': ('070c5ed9ed289581e477741d3b34beffa920db8cf590899d6d2c67fba2a198a6',
              '96f02b6f0753d4f543261bc9d09bed650f24dd6bc02ddde3066135b63d23a1cd'),
    'xlarge': ('c1f5ccab661354fc3a79a10fa99af82f0fbf10ec65cb894a3ae0815f17a889ee',
               'de3f8a54174130e0cecdc71583354753d557fcf1f4487331558e2a16ba0cfe05'),
}

# Variants: (blocks per stage, channels per stage).
VARIANTS = {
    'tiny': ((3, 3, 9, 3), (96, 192, 384, 768)),
    'small': ((3, 3, 27, 3), (96, 192, 384, 768)),
    'base': ((3, 3, 27, 3), (128, 256, 512, 1024)),
    'large': ((3, 3, 27, 3), (192, 384, 768, 1536)),
    'xlarge': ((3, 3, 27, 3), (256, 512, 1024, 2048)),
}

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STDDEV = (0.229, 0.224, 0.225)
EPSILON = 1e-6


class StochasticDepth(Layer):
    """Drops its input for whole samples in training (Huang et al., 2016): each sample is
    zeroed with probability `drop_path_rate`, the others scaled by `1 / (1 - rate)`; the
    identity at inference.

    # Arguments
        drop_path_rate: float in [0, 1), the probability of dropping a sample's path.
    """

    def __init__(self, drop_path_rate, **kwargs):
        super(StochasticDepth, self).__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def call(self, inputs, training=None):
        noise_shape = (K.shape(inputs)[0],) + (1,) * (K.ndim(inputs) - 1)
        return K.in_train_phase(
            lambda: K.dropout(inputs, self.drop_path_rate, noise_shape=noise_shape), inputs,
            training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super(StochasticDepth, self).get_config()
        config['drop_path_rate'] = self.drop_path_rate
        return config


class LayerScale(Layer):
    """Multiplies its input's channels by learned scales (Touvron et al., 2021), initialized
    to `init_values`; its weight is `gamma`.

    # Arguments
        init_values: float, the scales' initial value.
        projection_dim: int, the channels (the last axis) of the input.
    """

    def __init__(self, init_values, projection_dim, **kwargs):
        super(LayerScale, self).__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(name='gamma', shape=(self.projection_dim,),
                                     initializer=initializers.Constant(self.init_values))
        super(LayerScale, self).build(input_shape)

    def call(self, inputs):
        return inputs * self.gamma

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super(LayerScale, self).get_config()
        config.update(init_values=self.init_values, projection_dim=self.projection_dim)
        return config


def _convnext_block(x, channels, drop_path_rate, layer_scale_init_value, name):
    inputs = x
    x = layers.Conv2D(channels, 7, padding='same', groups=channels,
                      name=name + '_depthwise_conv')(x)
    x = layers.LayerNormalization(epsilon=EPSILON, name=name + '_layernorm')(x)
    x = layers.Dense(4 * channels, name=name + '_pointwise_conv_1')(x)
    x = layers.Activation('gelu', name=name + '_gelu')(x)
    x = layers.Dense(channels, name=name + '_pointwise_conv_2')(x)
    if layer_scale_init_value is not None:
        x = LayerScale(layer_scale_init_value, channels, name=name + '_layer_scale')(x)
    if drop_path_rate:
        x = StochasticDepth(drop_path_rate, name=name + '_stochastic_depth')(x)
    else:
        x = layers.Activation('linear', name=name + '_identity')(x)
    return layers.Add()([inputs, x])


def _downsampling(model_name, index, channels):
    """The stem (`index` 0) or the downsampling between stages `index - 1` and `index`, a
    `Sequential` as tf.keras nests it (its weights are saved under its name)."""
    if index == 0:
        return models.Sequential([
            layers.Conv2D(channels, 4, strides=4, name=model_name + '_stem_conv'),
            layers.LayerNormalization(epsilon=EPSILON, name=model_name + '_stem_layernorm'),
        ], name=model_name + '_stem')
    suffix = '_%d' % (index - 1)
    return models.Sequential([
        layers.LayerNormalization(epsilon=EPSILON,
                                  name=model_name + '_downsampling_layernorm' + suffix),
        layers.Conv2D(channels, 2, strides=2, name=model_name + '_downsampling_conv' + suffix),
    ], name=model_name + '_downsampling_block' + suffix)


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0, layer_scale_init_value=1e-6,
             default_size=224, model_name='convnext', include_preprocessing=True,
             include_top=True, weights=None, input_tensor=None, input_shape=None, pooling=None,
             classes=1000, classifier_activation='softmax', weights_hashes=None):
    """Builds a ConvNeXt of `depths` blocks per stage with `projection_dims` channels.

    # Arguments
        depths: the blocks of each of the four stages.
        projection_dims: the channels of each stage.
        drop_path_rate: the stochastic depth rate of the last block (rising linearly from 0).
        layer_scale_init_value: the initial layer scale (None: no layer scale).
        default_size: the input size with ImageNet weights and the top.
        model_name: the model's name, the prefix of its layers' names and its weights files.
        weights_hashes: the hashes of the ImageNet weights files (with, without the top).
        include_preprocessing, include_top, weights, input_tensor, input_shape, pooling,
        classes, classifier_activation: as the variants take them.

    # Returns
        A Keras `Model`.
    """
    model_parts.check_weights(weights, include_top, classes)
    image, inputs, input_shape = model_parts.image_input(input_tensor, input_shape,
                                                         default_size, include_top, weights)
    # As tf.keras does, the network starts from the Keras input `input_tensor` comes from.
    x = inputs[0] if isinstance(inputs, list) else inputs
    if include_preprocessing and input_shape[model_parts.channel_axis() - 1] == 3:
        x = layers.Normalization(mean=[255 * mean for mean in IMAGENET_MEAN],
                                 variance=[(255 * std) ** 2 for std in IMAGENET_STDDEV],
                                 name=model_name + '_prestem_normalization')(x)
    drop_rates = [float(rate) for rate in np.linspace(0.0, drop_path_rate, sum(depths))]
    block = 0
    for stage, (depth, channels) in enumerate(zip(depths, projection_dims)):
        x = _downsampling(model_name, stage, channels)(x)
        for index in range(depth):
            x = _convnext_block(x, channels, drop_rates[block], layer_scale_init_value,
                                '%s_stage_%d_block_%d' % (model_name, stage, index))
            block += 1
    head = model_parts.Head(pool=model_name + '_head_gap', dense=model_name + '_head_dense',
                            layer_norm=model_name + '_head_layernorm', layer_norm_epsilon=EPSILON,
                            pooling_names=(None, None))
    x = model_parts.top(x, head, include_top, pooling, classes, classifier_activation, weights)
    model = models.Model(inputs, x, name=model_name)
    model_parts.load_model_weights(model, weights, include_top, WEIGHTS_URL, weights_hashes)
    return model


_DOC = """Builds ConvNeXt{size}, optionally with its ImageNet weights.

    With `include_preprocessing` the model normalizes its inputs itself: give it pixels in
    [0, 255] (`preprocess_input` of this module returns its input unchanged). Default input
    size: 224x224.

    # Arguments
        model_name: the model's name, the prefix of its layers' names.
        include_top: whether to end with the classifier (global pooling, layer
            normalization, `Dense`).
        include_preprocessing: whether the model starts by normalizing its inputs.
        weights: None (random initialization), 'imagenet' (downloaded once into
            `~/.keras/models`), or the path of a weights file (a tf.keras one loads).
        input_tensor: a Keras tensor to use as the model's input image (the network starts
            from the Keras input it comes from, as in tf.keras).
        input_shape: the input shape, channels included (without the top: at least 32x32,
            3 channels with ImageNet weights).
        pooling: without the top, None (the last feature map), 'avg' or 'max'; a layer
            normalization follows either way.
        classes: the classes of the classifier (1000 with ImageNet weights).
        classifier_activation: the classifier's activation, a name or a function (None:
            logits); with ImageNet weights only None or 'softmax'.

    # Returns
        A Keras `Model`.

    # Raises
        ValueError: for invalid `weights`, `classes`, `input_shape` or
            `classifier_activation`.
    """


def _variant(size):
    depths, projection_dims = VARIANTS[size.lower()]

    def build(model_name='convnext_' + size.lower(), include_top=True,
              include_preprocessing=True, weights='imagenet', input_tensor=None,
              input_shape=None, pooling=None, classes=1000, classifier_activation='softmax'):
        return ConvNeXt(depths, projection_dims, model_name=model_name,
                        include_preprocessing=include_preprocessing, include_top=include_top,
                        weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                        pooling=pooling, classes=classes,
                        classifier_activation=classifier_activation,
                        weights_hashes=WEIGHTS_HASHES[size.lower()])
    build.__name__ = build.__qualname__ = 'ConvNeXt' + size
    build.__doc__ = _DOC.format(size=size)
    return build


ConvNeXtTiny = _variant('Tiny')
ConvNeXtSmall = _variant('Small')
ConvNeXtBase = _variant('Base')
ConvNeXtLarge = _variant('Large')
ConvNeXtXLarge = _variant('XLarge')
