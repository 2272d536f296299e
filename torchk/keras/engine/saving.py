"""The writing of `tf.keras.saving.save_model` (also `tf.keras.models.save_model` and
`Model.save`).

`save_model` writes a `.keras` zip (tf.keras 2.13+'s format, `torchk.saving.keras_zip_writer`)
for a `.keras` path or `save_format='keras'`, HDF5 (Keras 2.3.1's format, which tf.keras 2
reads too) for a `.h5` or `.hdf5` path or `save_format='h5'`, and, as TF 2 does, a SavedModel
folder for another path (`save_saved_model`): `tf.saved_model.save`'s folder (the model's
call as a function, the `serving_default` signature) with `keras_metadata.pb`, each Keras
object's configuration as tf.keras writes it, which `load_model` reads back (the model, its
weights and its optimizer's state). As tf.keras does, saving (a model, or
`Model.save_weights`) into a folder that does not exist yet makes it (`make_parent_folder`).
"""
import json
import os
import warnings

import numpy as np

from keras import models as _keras_models
from keras.engine.base_layer import Layer
from keras.engine.sequential import Sequential

from ...saving import keras_zip_writer
from .._facade import VERSION

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
            another path (a SavedModel folder).
        overwrite: False to ask before replacing an existing file.
        include_optimizer: whether to save the optimizer's configuration and state.
        save_format: `'keras'`, `'h5'`, `'tf'` (a SavedModel) or None (by the extension).

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
        save_saved_model(model, path, include_optimizer)
        return
    _keras_models.save_model(model, path, overwrite=overwrite,
                             include_optimizer=include_optimizer)


def _json_default(value):
    """JSON of the objects a Keras configuration holds (as Keras 2.3.1's HDF5 writer)."""
    if hasattr(value, 'get_config'):
        return {'class_name': type(value).__name__, 'config': value.get_config()}
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if callable(value) or isinstance(value, type):
        return value.__name__
    raise TypeError('Cannot write %r (%s) into a SavedModel\'s Keras metadata.'
                    % (value, type(value).__name__))


def _keras_identifier(layer):
    if isinstance(layer, Sequential):
        return '_tf_keras_sequential'
    if getattr(layer, '_is_graph_network', False):
        return '_tf_keras_network'
    return '_tf_keras_model' if hasattr(layer, 'compile') else '_tf_keras_layer'


def _keras_metadata(model, include_optimizer, objects):
    """`[(node id, identifier, JSON)]` of the Keras objects of a SavedModel's nodes: each
    layer's name and class; the model's configuration (if it has one: not a subclassed
    model's), training configuration and Keras version."""
    entries = []
    for node_id, obj in enumerate(objects):
        if not isinstance(obj, Layer):
            continue
        metadata = {'name': obj.name, 'class_name': type(obj).__name__,
                    'trainable': obj.trainable}
        if obj is model:
            try:
                metadata['model_config'] = {'class_name': type(model).__name__,
                                            'config': model.get_config()}
            except NotImplementedError:
                pass  # a subclassed model: its architecture is Python code
            metadata['keras_version'] = VERSION
            metadata['backend'] = 'tensorflow'
            if include_optimizer and getattr(model, 'optimizer', None) is not None:
                metadata['training_config'] = {
                    'optimizer_config': {'class_name': type(model.optimizer).__name__,
                                         'config': model.optimizer.get_config()},
                    'loss': model.loss, 'metrics': getattr(model, '_compile_metrics', None),
                    'weighted_metrics': getattr(model, '_compile_weighted_metrics', None),
                    'loss_weights': model.loss_weights}
        entries.append((node_id, _keras_identifier(obj),
                        json.dumps(metadata, default=_json_default)))
    return entries


def save_saved_model(model, path, include_optimizer=True):
    """Writes `model` as a SavedModel folder (see the module docstring). A model whose call
    torch cannot trace (text inputs, recurrent layers' scans) is saved without functions, with
    a warning: `load_model` reads it, `tf.saved_model.load` has no function to call."""
    from ...tf import saved_model
    optimizer = getattr(model, 'optimizer', None)
    exclude = {id(optimizer)} if optimizer is not None and not include_optimizer else set()

    def metadata(objects):
        return _keras_metadata(model, include_optimizer, objects)
    try:
        saved_model._save(model, path, exclude=exclude, keras_metadata=metadata)
    except (ValueError, TypeError, RuntimeError) as error:
        warnings.warn('The call of model %s could not be traced into a torch program (%s: %s): '
                      'its SavedModel %r holds its variables and Keras metadata (which '
                      'tf.keras.models.load_model reads), no function or signature.' % (
                          model.name, type(error).__name__, str(error).split('\n')[0][:300],
                          path))
        saved_model._save(model, path, exclude=exclude, keras_metadata=metadata,
                          trace_keras=False)
