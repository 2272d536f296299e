"""tf.keras 2.15's image models that Keras 2.3.1 (keras_applications 1.0.8) lacks, as Keras
2.3.1 functional models: EfficientNet B0-B7, EfficientNetV2 B0-B3/S/M/L, MobileNetV3
Small/Large, ConvNeXt Tiny to XLarge, RegNetX/RegNetY 002-320 and ResNet-RS 50-420.

Each family is a module (`efficientnet`, `efficientnet_v2`, `mobilenet_v3`, `convnext`,
`regnet`, `resnet_rs`) with its builders, `preprocess_input` and `decode_predictions`; the
builders take tf.keras' arguments (`include_top`, `weights` None, 'imagenet' or a file's path,
`input_tensor`, `input_shape`, `pooling`, `classes`, `classifier_activation`, ...) and name
their layers and order their weights as tf.keras does, so that tf.keras' weights files load
by topology and by name. `torchk.keras.applications` serves them to tf.keras scripts.

Importing this package imports Keras (on the torchk backend).
"""
import inspect

from . import convnext, efficientnet, efficientnet_v2, mobilenet_v3, regnet, resnet_rs

FAMILIES = (convnext, efficientnet, efficientnet_v2, mobilenet_v3, regnet, resnet_rs)


def _builders():
    """The model builders of the families (functions with a capital: `EfficientNetB0`)."""
    return {name: getattr(module, name) for module in FAMILIES for name in module.__all__
            if name[0].isupper() and inspect.isfunction(getattr(module, name))}


globals().update(_builders())
__all__ = sorted(_builders()) + [module.__name__.split('.')[-1] for module in FAMILIES]
