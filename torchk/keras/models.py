"""`tf.keras.models`: `Model`, `Sequential`, saving (`torchk.keras.saving`) and loading."""
import os

from keras import models as _keras_models

from . import optimizers
from ._facade import reexport
from .engine import Model, Sequential
from .engine.saving import save_model  # noqa: F401

def load_model(filepath, custom_objects=None, compile=True, safe_mode=None, **kwargs):
    """Loads a model saved by `save_model` or by any Keras 2 (`torchk.saving.load_model`:
    HDF5, `.keras` zips, SavedModel directories; `safe_mode` as there).

    Models come back as this package's `Model`/`Sequential`, their optimizers as this
    package's (a learning-rate schedule included).
    """
    objects = {'Model': Model, 'Sequential': Sequential}
    objects.update(optimizers._CLASSES)
    objects.update((c.__name__, c) for c in optimizers._CLASSES.values())
    objects.update(custom_objects or {})
    return _keras_models.load_model(os.fspath(filepath), custom_objects=objects,
                                    compile=compile, safe_mode=safe_mode)


def model_from_json(json_string, custom_objects=None, safe_mode=None):
    """A model (uncompiled) from its JSON configuration (`safe_mode` as for `load_model`)."""
    objects = {'Model': Model, 'Sequential': Sequential}
    objects.update(custom_objects or {})
    return _keras_models.model_from_json(json_string, custom_objects=objects,
                                         safe_mode=safe_mode)


reexport(globals(), _keras_models)
