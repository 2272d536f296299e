"""`tf.keras.models`: `Model`, `Sequential`, saving and loading.

`save_model` writes HDF5 (Keras 2.3.1's format, which tf.keras 2 reads too) for a `.h5` or
`.hdf5` path and for a path without extension, where TF 2 would write a SavedModel
directory: there torchk writes one HDF5 file and says so, and `load_model` on that path
reads it back. `.keras` files are not written yet.
"""
import os
import warnings

from keras import models as _keras_models

from . import optimizers
from ._facade import reexport
from .engine import Model, Sequential

_HDF5 = ('.h5', '.hdf5')


def save_model(model, filepath, overwrite=True, include_optimizer=True, save_format=None,
               **kwargs):
    """Saves a model to `filepath` as HDF5.

    # Arguments
        model: the model.
        filepath: `.h5`/`.hdf5`, or a path without extension (an HDF5 file, not a TF
            SavedModel directory: a warning says so).
        save_format: `'h5'`, `'tf'` (HDF5 in place of a SavedModel, with the warning) or None.

    # Raises
        ValueError: for a `.keras` path (not written by torchk yet) or another format.
    """
    path = os.fspath(filepath)
    extension = os.path.splitext(path)[1].lower()
    if save_format not in (None, 'h5', 'tf', 'keras'):
        raise ValueError("save_format must be 'h5', 'tf' or None; got %r." % (save_format,))
    if extension == '.keras' or save_format == 'keras':
        raise ValueError("torchk does not write the '.keras' format yet (%r): save to a '.h5' "
                         "path instead." % path)
    if extension not in _HDF5 and save_format != 'h5':
        warnings.warn("torchk saved %r as one HDF5 model file, not a TensorFlow SavedModel "
                      "directory: load_model (torchk's, or TF's Keras given the file) reads it "
                      "back; TF Serving and tf.saved_model.load do not." % path)
    _keras_models.save_model(model, path, overwrite=overwrite,
                             include_optimizer=include_optimizer)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True, **kwargs):
    """Loads a model saved by `save_model` (or by tf.keras 2 as HDF5).

    Models come back as this package's `Model`/`Sequential`, their optimizers as this
    package's (a learning-rate schedule included).
    """
    objects = {'Model': Model, 'Sequential': Sequential}
    objects.update(optimizers._CLASSES)
    objects.update(custom_objects or {})
    return _keras_models.load_model(os.fspath(filepath), custom_objects=objects,
                                    compile=compile)


def model_from_json(json_string, custom_objects=None):
    """A model (uncompiled) from its JSON configuration."""
    objects = {'Model': Model, 'Sequential': Sequential}
    objects.update(custom_objects or {})
    return _keras_models.model_from_json(json_string, custom_objects=objects)


reexport(globals(), _keras_models)
