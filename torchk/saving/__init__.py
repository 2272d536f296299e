"""Keras model files: reading every Keras 2 format and dialect, safely.

`formats.load_model` recognises the format by content and is Keras' `load_model`;
`safe_mode` is the one gate between a file and the code it may carry; `validation` makes
damaged and hostile files fail fast; `dialects` translates tf.keras / tf_keras model
configurations into Keras 2.3.1's, `training_config` their training configurations and
`optimizer_state` their optimizer state; `h5` puts the translation into Keras' HDF5 loaders;
every reader raises `errors.ModelFileError`, naming the file. What these modules change in
Keras' own loaders is listed, with the rest, in `torchk.overrides`.
"""
from .errors import ModelFileError
from .formats import load_model

__all__ = ['ModelFileError', 'load_model']
