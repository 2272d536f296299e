"""`tf.keras.applications`: Keras 2.3.1's (keras_applications 1.0.8: VGG, ResNet, ResNetV2,
Inception, Xception, MobileNet, MobileNetV2, DenseNet, NASNet), their submodules
(`applications.vgg16.preprocess_input`, ...) importable under this package's name.

Pretrained weights come from Keras' cache (`~/.keras/models`) or a download.
"""
import importlib
import sys

from keras import applications as _keras_applications

from .._facade import reexport

_SUBMODULES = ('densenet', 'imagenet_utils', 'inception_resnet_v2', 'inception_v3',
               'mobilenet', 'mobilenet_v2', 'nasnet', 'resnet', 'resnet50', 'resnet_v2',
               'vgg16', 'vgg19', 'xception')

for _name in _SUBMODULES:
    _module = importlib.import_module('keras.applications.' + _name)
    sys.modules[__name__ + '.' + _name] = _module
    globals()[_name] = _module

reexport(globals(), _keras_applications, exclude=('keras_applications', 'backend', 'layers',
                                                  'models', 'utils',
                                                  'keras_modules_injection'))
