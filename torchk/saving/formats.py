"""`load_model`: one entry for every Keras 2 model format, recognised by content, and the
`safe_mode` keyword of every loader.

Its overrides (`torchk.overrides`) make this `load_model` Keras'
(`keras.engine.saving.load_model`, so `keras.models.load_model`) and give `model_from_config`,
`model_from_json`, `model_from_yaml`, `Model.from_config` and `Sequential.from_config` the
`safe_mode` keyword. Each runs as one load
(`validation.loading`): safe mode and the memory budget hold for everything it reads, and
every error names the file (or 'the configuration').
"""
import os

from . import op_layer_nodes
from . import safe_mode as safe_mode_gate
from .errors import CONFIGURATION, ModelFileError
from .signatures import HDF5_SIGNATURE, ZIP_SIGNATURES
from .validation import check_functional_config, check_nesting, loading

SAVED_MODEL_FILE = 'saved_model.pb'

RECOGNISED = ('an HDF5 model file (Keras 2 `model.save`, .h5)',
              'a .keras zip (tf.keras 2.13+, tf_keras)',
              'a SavedModel directory (holding %s)' % SAVED_MODEL_FILE)

_KERAS = {}  # Keras 2.3.1's own functions, replaced by `loading_every_format`.


def _not_a_model(path, what):
    return ModelFileError(path, '%s; the formats recognised are %s.'
                          % (what, ', '.join(RECOGNISED)))


def _hdf5_at_a_user_block_offset(f, size):
    """Whether the HDF5 signature is at 0, 512, 1024, 2048, ... (HDF5 allows a user block
    before the file proper)."""
    offset = 0
    while offset + len(HDF5_SIGNATURE) <= size:
        f.seek(offset)
        if f.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE:
            return True
        offset = 512 if offset == 0 else offset * 2
    return False


def recognise(path):
    """The format of the model at `path`: `'hdf5'`, `'keras_zip'` or `'saved_model'`.

    # Raises
        ModelFileError: for a missing path, an empty file, or content of no format
            recognised (the message lists them).
    """
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
            return 'saved_model'
        raise _not_a_model(path, 'a directory without %s' % SAVED_MODEL_FILE)
    if not os.path.exists(path):
        raise _not_a_model(path, 'no such file or directory')
    with open(path, 'rb') as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise _not_a_model(path, 'the file is empty')
        start = f.read(len(HDF5_SIGNATURE))
        if start.startswith(ZIP_SIGNATURES):
            return 'keras_zip'
        if _hdf5_at_a_user_block_offset(f, size):
            return 'hdf5'
    raise _not_a_model(path, 'not a model file (it starts with %r)' % start)


def _source(filepath):
    if isinstance(filepath, (str, os.PathLike)):
        return os.fspath(filepath)
    return getattr(filepath, 'filename', None) or getattr(filepath, 'name', None) or \
        '<%s>' % type(filepath).__name__


def load_model(filepath, custom_objects=None, compile=True, safe_mode=None):
    """Loads a Keras model saved by any Keras 2: the format is recognised by content.

    # Arguments
        filepath: the model's path: an HDF5 file (any Keras 2, `model.save`), a `.keras` zip
            (tf.keras 2.13-2.15, tf_keras) or a SavedModel directory (tf.keras 2.x
            `model.save(dir)`); or, as Keras allows for HDF5, an open `h5py.File` / `Group`
            or a binary file object holding an HDF5 image.
        custom_objects: dict of the names of custom classes and functions the model uses;
            a Lambda layer's function under the layer's name.
        compile: whether to compile the model from its saved training configuration.
        safe_mode: False to let this load run the Python code a Lambda layer stores (only
            for files you trust); None (default) follows the process setting, which is safe
            unless `torchk.config.enable_unsafe_deserialization()` was called or
            `TORCHK_UNSAFE_DESERIALIZATION=1`.

    # Returns
        The model, compiled if `compile` and the file holds a training configuration.

    # Raises
        ModelFileError: (an OSError and a ValueError) naming the file and what is wrong:
            a missing, empty, damaged or unrecognised file, an invalid configuration, or
            code refused in safe mode.
    """
    with safe_mode_gate.scope(safe_mode), loading(_source(filepath)):
        if isinstance(filepath, (str, os.PathLike)) and not _is_gcs(filepath):
            path = os.fspath(filepath)
            kind = recognise(path)
            if kind == 'saved_model':
                from . import saved_model
                return saved_model.load(path, custom_objects, compile)
            if kind == 'keras_zip':
                from . import keras_zip
                return keras_zip.load(path, custom_objects, compile)
            filepath = path
        return _keras_load_model()(filepath, custom_objects=custom_objects, compile=compile)


def _is_gcs(filepath):
    """A Google Cloud Storage path, which Keras' own loader copies to a local HDF5 file
    (saving.py:454 `allow_read_from_gcs`)."""
    return os.fspath(filepath).startswith('gs://')


def _keras_load_model():
    """Keras 2.3.1's own `load_model` (HDF5), which importing `keras.engine.saving` hands to
    `loading_every_format`."""
    import keras.engine.saving  # noqa: F401
    return _KERAS['load_model']


def _loading_configuration(load, check):
    """`load(config_or_text, custom_objects=None)` as one load of 'the configuration' that
    takes `safe_mode`; `check(config_or_text)` runs first."""
    def wrapper(config, custom_objects=None, safe_mode=None):
        with safe_mode_gate.scope(safe_mode), loading(CONFIGURATION):
            check(config)
            return load(config, custom_objects=custom_objects)
    wrapper.__name__ = load.__name__
    wrapper.__doc__ = load.__doc__
    return wrapper


def _no_check(config):
    return None


def loading_every_format(keras_load_model):
    """Override of `keras.engine.saving.load_model`: this module's `load_model`, which hands
    HDF5 files to Keras' own (`keras_load_model`)."""
    _KERAS['load_model'] = keras_load_model
    return load_model


def loading_model_from_config(keras_model_from_config):
    """Override of `model_from_config` (as `torchk.saving.h5` translates it): one load of 'the
    configuration', nesting limits checked first, taking `safe_mode`."""
    return _loading_configuration(keras_model_from_config, check_nesting)


def loading_model_from_text(keras_model_from_text):
    """Override of `model_from_json` and `model_from_yaml`: one load of 'the configuration',
    taking `safe_mode`."""
    return _loading_configuration(keras_model_from_text, _no_check)


def _model_from_config(keras_from_config, check):
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        with safe_mode_gate.scope(safe_mode), loading(CONFIGURATION):
            check(config)
            return keras_from_config(cls, config, custom_objects=custom_objects)
    from_config.__doc__ = keras_from_config.__doc__
    return from_config


def _check_functional(config):
    check_nesting(config)
    if isinstance(config.get('layers'), list) and all(isinstance(layer, dict)
                                                      for layer in config['layers']):
        # Op layers' nodes as Keras 2.3.1 reads them, so that the check holds alone (the
        # outer wrapper of `Network.from_config`, `op_layer_nodes.rewriting_op_layer_nodes`,
        # has rewritten them already in torchk's chain).
        config = op_layer_nodes.keras2_network_config(config)
    check_functional_config(config)


def checking_network_configs(keras_from_config):
    """Override of `Network.from_config` (so `Model.from_config`, for nested models too): the
    functional graph checks first, and `safe_mode`."""
    return _model_from_config(keras_from_config, _check_functional)


def checking_sequential_configs(keras_from_config):
    """Override of `Sequential.from_config`: nesting limits checked first, and `safe_mode`."""
    return _model_from_config(keras_from_config, check_nesting)


def trusting(rebuild):
    """`rebuild`, run with safe mode off: for Keras functions that rebuild through
    `from_config` a model that is no file's: `keras.models.clone_model` (models.py:106, 205)
    clones a model the program holds, and `unpickle_model` (saving.py:602, which
    `Network.__setstate__`, so `copy.deepcopy` and `pickle`, calls) rebuilds one from a pickle,
    which runs whatever code it holds anyway: refusing its Lambdas would protect nothing."""
    def wrapper(*args, **kwargs):
        with safe_mode_gate.scope(False):
            return rebuild(*args, **kwargs)
    wrapper.__name__ = rebuild.__name__
    wrapper.__doc__ = rebuild.__doc__
    return wrapper
