"""`tf.keras.applications`: tf.keras 2.15's image models. Keras 2.3.1's (keras_applications
1.0.8: VGG, ResNet, ResNetV2, Inception, Xception, MobileNet, MobileNetV2, DenseNet, NASNet)
and torchk.applications' (EfficientNet, EfficientNetV2, MobileNetV3, ConvNeXt, RegNet,
ResNet-RS), their submodules (`applications.efficientnet.preprocess_input`, ...) importable
under this package's name.

The builders return this facade's `Model` (which fits `tf.data` datasets) over the layers
they made; Keras 2.3.1's take tf.keras' `classifier_activation` too. `ResNet50` is tf.keras'
(keras_applications' `resnet` model, whose layer names tf.keras' weights files have), in
`applications.resnet50` as well. Pretrained weights come from Keras' cache
(`~/.keras/models`) or a download.
"""
import functools
import importlib
import inspect
import sys
import types

from keras import activations
from keras import applications as _keras_applications
from keras.applications import resnet as _keras_resnet

from ... import applications as _torchk_applications
from ...applications import model_parts
from .._facade import reexport
from ..engine import Model as _Model

_KERAS_SUBMODULES = ('densenet', 'imagenet_utils', 'inception_resnet_v2', 'inception_v3',
                     'mobilenet', 'mobilenet_v2', 'nasnet', 'resnet', 'resnet_v2', 'vgg16',
                     'vgg19', 'xception')


def _tf_keras_model(model):
    """This facade's `Model` over the inputs, outputs and layers of the Keras `model`."""
    return _Model(model.inputs, model.outputs, name=model.name)


def _with_classifier_activation(model, classifier_activation):
    """`model` whose softmax classifier (the last layer with a softmax activation) has
    `classifier_activation` instead: that layer and the ones after it, copied with their
    weights, on the classifier's input."""
    index = max(i for i, layer in enumerate(model.layers)
                if getattr(layer, 'activation', None) is activations.softmax)
    x = model.layers[index].input
    for position, layer in enumerate(model.layers[index:]):
        config = layer.get_config()
        if position == 0:
            config['activation'] = classifier_activation
        copy = type(layer).from_config(config)
        x = copy(x)
        copy.set_weights(layer.get_weights())
    return _Model(model.inputs, x, name=model.name)


def _keras_builder(builder, module_name, name):
    """Keras 2.3.1's builder `name` of `keras.applications.<module_name>` returning this
    facade's `Model` and taking tf.keras' `classifier_activation` (2.3+), checked as tf.keras
    checks it."""
    source = getattr(importlib.import_module('keras_applications.' + module_name), name)
    signature = inspect.signature(source)

    @functools.wraps(source)
    def build(*args, classifier_activation='softmax', **kwargs):
        arguments = signature.bind(*args, **kwargs)
        arguments.apply_defaults()
        model = builder(*args, **kwargs)
        if not arguments.arguments['include_top']:
            return _tf_keras_model(model)
        model_parts.check_classifier_activation(classifier_activation,
                                                arguments.arguments['weights'])
        if activations.get(classifier_activation) is activations.softmax:
            return _tf_keras_model(model)
        return _with_classifier_activation(model, classifier_activation)
    return build


def _torchk_builder(builder, module_name, name):
    @functools.wraps(builder)
    def build(*args, **kwargs):
        return _tf_keras_model(builder(*args, **kwargs))
    return build


def _facade_module(name, source, wrap, extra=None):
    """The submodule `name` of this package: `source`'s public names, its builders wrapped
    by `wrap`, and `extra` names."""
    module = types.ModuleType('%s.%s' % (__name__, name), source.__doc__)
    names = dict(extra or {})
    for attribute in getattr(source, '__all__', dir(source)):
        value = getattr(source, attribute)
        if attribute.startswith('_') or attribute in names or isinstance(value,
                                                                          types.ModuleType):
            continue
        if attribute[0].isupper() and inspect.isfunction(value):
            if value not in _BUILDERS:
                _BUILDERS[value] = wrap(value, source.__name__.split('.')[-1], attribute)
            value = _BUILDERS[value]
        names[attribute] = value
    vars(module).update(names)
    reexport(vars(module), None)
    sys.modules[module.__name__] = module
    return module


_BUILDERS = {}
for _name in _KERAS_SUBMODULES:
    globals()[_name] = _facade_module(
        _name, getattr(_keras_applications, _name), _keras_builder)
for _module in _torchk_applications.FAMILIES:
    globals()[_module.__name__.split('.')[-1]] = _facade_module(
        _module.__name__.split('.')[-1], _module, _torchk_builder)
resnet50 = _facade_module('resnet50', _keras_applications.resnet50, _keras_builder,
                          extra={'ResNet50': _BUILDERS[_keras_resnet.ResNet50]})

globals().update((wrapped.__name__, wrapped) for wrapped in _BUILDERS.values())

reexport(globals(), _keras_applications, exclude=('keras_applications', 'backend', 'layers',
                                                  'models', 'utils',
                                                  'keras_modules_injection'))
