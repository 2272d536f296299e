"""Layers of TensorFlow's Keras 2 (`tf.keras` 2.x, `tf_keras`) that Keras 2.3.1 lacks.

They are ordinary Keras 2.3.1 layers written with the backend API, so they build graphs, train,
save and export like any other. Each module of this package lists its layers in `__all__`;
`register` puts every one of them into `keras.layers`, where `keras.layers.deserialize` (and so
`keras.models.load_model`) finds them by class name; its override (`torchk.overrides`) calls
it when `keras.layers` is imported. Importing this package imports Keras.
"""
import importlib
import pkgutil
import sys


def layer_classes():
    """Returns every layer class of the package.

    # Returns
        A dict from Keras class name to class.
    """
    classes = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module('.' + info.name, __name__)
        classes.update((name, getattr(module, name)) for name in module.__all__)
    return classes


def register(keras_layers):
    """Makes every layer of the package a name of the module `keras_layers` (`keras.layers`).

    A name Keras 2.3.1 already has (`CuDNNLSTM`) is replaced by torchk's layer, in
    `keras.layers` and in the module that defined Keras' class
    (`keras.layers.cudnn_recurrent`), where user code may import it from. A torchk layer
    that subclasses Keras' class (`GlobalAveragePooling2D` with `keepdims`) replaces it in
    `keras.layers` only: Keras' methods call `super(TheirClass, self)`, which looks the
    name up in the defining module, and would find the subclass again.
    """
    for name, layer_class in layer_classes().items():
        replaced = getattr(keras_layers, name, None)
        if replaced is not None and not issubclass(layer_class, replaced):
            setattr(sys.modules[replaced.__module__], name, layer_class)
        setattr(keras_layers, name, layer_class)


def __getattr__(name):
    classes = layer_classes()
    if name in classes:
        return classes[name]
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
