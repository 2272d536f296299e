"""The writing of `tf.keras.saving.save_model` (also `tf.keras.models.save_model` and
`Model.save`).

`save_model` writes a `.keras` zip (tf.keras 2.13+'s format, `torchk.saving.keras_zip_writer`)
for a `.keras` path or `save_format='keras'`, and HDF5 (Keras 2.3.1's format, which tf.keras 2
reads too) for a `.h5` or `.hdf5` path and for a path without extension, where TF 2 would
write a SavedModel directory: there torchk writes one HDF5 file and says so, and `load_model`
on that path reads it back. As tf.keras does, saving (a model, or `Model.save_weights`) into
a folder that does not exist yet makes it (`make_parent_folder`).
"""
import os
import warnings

from keras import models as _keras_models

from ...saving import keras_zip_writer

_HDF5 = ('.h5', '.hdf5')


def make_parent_folder(filepath):
    """Makes the folder that `filepath` (a string or path-like) is to be written in, if it
    does not exist yet, as tf.keras' savers do; Keras 2.3.1's fail there."""
    if isinstance(filepath, (str, os.PathLike)):
        folder = os.path.dirname(os.fspath(filepath))
        if folder:
            os.makedirs(folder, exist_ok=True)


def save_model(model, filepath, overwrite=True, include_optimizer=True, save_format=None,
               **kwargs):
    """Saves a model to `filepath` as a `.keras` zip or as HDF5.

    # Arguments
        model: the model.
        filepath: `.keras` (the zip that tf.keras 2.13+ and torchk load), `.h5`/`.hdf5`, or
            a path without extension (an HDF5 file, not a TF SavedModel directory: a warning
            says so).
        overwrite: False to ask before replacing an existing file.
        include_optimizer: whether to save the optimizer's configuration and state.
        save_format: `'keras'`, `'h5'`, `'tf'` (HDF5 in place of a SavedModel, with the
            warning) or None (by the extension).

    # Raises
        ValueError: for another format, a `.keras` path with another `save_format`, or
            (`.keras`) a layer that tf.keras has no class for.
    """
    path = os.fspath(filepath)
    make_parent_folder(path)
    extension = os.path.splitext(path)[1].lower()
    if save_format not in (None, 'h5', 'tf', 'keras'):
        raise ValueError("save_format must be 'keras', 'h5', 'tf' or None; got %r."
                         % (save_format,))
    if extension == '.keras' and save_format not in (None, 'keras'):
        raise ValueError("%r ends in '.keras', the zip format, but save_format=%r: save HDF5 to "
                         "a '.h5' path." % (path, save_format))
    if save_format == 'keras' or extension == '.keras':
        keras_zip_writer.save(model, path, include_optimizer=include_optimizer,
                              overwrite=overwrite)
        return
    if extension not in _HDF5 and save_format != 'h5':
        warnings.warn("torchk saved %r as one HDF5 model file, not a TensorFlow SavedModel "
                      "directory: load_model (torchk's, or TF's Keras given the file) reads it "
                      "back; TF Serving and tf.saved_model.load do not." % path)
    _keras_models.save_model(model, path, overwrite=overwrite,
                             include_optimizer=include_optimizer)
