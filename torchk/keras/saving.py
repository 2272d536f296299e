"""`tf.keras.saving`: `save_model` (also `tf.keras.models.save_model` and `Model.save`;
written by `engine/saving.py`), `load_model` (`tf.keras.models.load_model`), and the object
registration of `tf.keras.utils` (`register_keras_serializable`, `custom_object_scope`, ...)
that tf.keras 2.13+ exports here."""
from keras.utils import (custom_object_scope, deserialize_keras_object,  # noqa: F401
                         get_custom_objects, serialize_keras_object)

from ._facade import reexport
from .engine.saving import make_parent_folder, save_model  # noqa: F401
from .utils.object_registration import (get_registered_name, get_registered_object,  # noqa: F401
                                        register_keras_serializable)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=None, **kwargs):
    """See `torchk.keras.models.load_model`."""
    from .models import load_model as load
    return load(filepath, custom_objects=custom_objects, compile=compile,
                safe_mode=safe_mode, **kwargs)


reexport(globals(), None, exclude=('make_parent_folder',))
