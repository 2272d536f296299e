"""`tf.keras.saving.save_model` (also `tf.keras.models.save_model` and `Model.save`).

`save_model` writes HDF5 (Keras 2.3.1's format, which tf.keras 2 reads too) for a `.h5` or
`.hdf5` path and for a path without extension, where TF 2 would write a SavedModel
directory: there torchk writes one HDF5 file and says so, and `load_model` on that path
reads it back. `.keras` files are not written yet.
"""
import os
import warnings

from keras import models as _keras_models

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
