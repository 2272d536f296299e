"""Keras' HDF5 model files of every dialect, loaded through Keras 2.3.1's own loaders.

Its overrides of `keras.engine.saving` (`torchk.overrides`) make `load_model`,
`model_from_config`, `model_from_json` and `model_from_yaml` translate the configuration
(`torchk.saving.dialects`), and `load_model(..., compile=True)` compile from the translated
training configuration, restoring the optimizer's state where it maps onto Keras 2.3.1's
optimizer.
"""
import functools
import json
import re
import sys
import warnings

import h5py
import numpy as np

from . import safe_mode, vocabulary
from .dialects import translate_model_config
from .optimizer_state import restore_optimizer_state
from .training_config import compile_arguments
from .errors import CONFIGURATION, ModelFileError, source
from .validation import check_nesting, check_weight_datasets


def _text(value):
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode('utf8')
    return str(value)


def translating_model_from_config(model_from_config):
    """Override of `model_from_config` (which `load_model` calls): the configuration translated
    (`torchk.saving.dialects`)."""
    @functools.wraps(model_from_config)
    def wrapper(config, custom_objects=None):
        return model_from_config(translate_model_config(config, custom_objects),
                                 custom_objects=custom_objects)
    return wrapper


def _translating_model_from_text(model_from_text, parse):
    """`model_from_json` or `model_from_yaml` reading the translated configuration (as
    JSON, which YAML reads too)."""
    @functools.wraps(model_from_text)
    def wrapper(text, custom_objects=None):
        config = parse(text)
        check_nesting(config)
        config = translate_model_config(config, custom_objects)
        return model_from_text(json.dumps(config), custom_objects=custom_objects)
    return wrapper


def compiling_from_translation(deserialize_model):
    """Override of `_deserialize_model(h5dict, custom_objects, compile)`: builds and loads the
    model with Keras (compile=False), then compiles it from the translated training
    configuration and restores the optimizer state where it maps (else warns: a fresh
    optimizer)."""
    @functools.wraps(deserialize_model)
    def wrapper(h5dict, custom_objects=None, compile=True):
        if 'model_config' not in h5dict and 'layer_names' in h5dict:
            raise ValueError('The file holds weights only (written by save_weights), not a '
                             'model: build the model in code and call '
                             'model.load_weights(path) (by_name=True matches layer names).')
        if isinstance(getattr(h5dict, 'data', None), h5py.Group) and 'model_weights' in h5dict:
            check_weight_datasets(h5dict.data['model_weights'])
        if _saved_by_multi_backend_keras(h5dict):
            return deserialize_model(h5dict, custom_objects=custom_objects, compile=compile)
        model = deserialize_model(h5dict, custom_objects=custom_objects, compile=False)
        if not compile:
            return model
        training_config = h5dict.get('training_config')
        if training_config is None:
            warnings.warn('No training configuration found in save file: the model was *not* '
                          'compiled. Compile it manually.')
            return model
        model.compile(**compile_arguments(json.loads(_text(training_config)), model,
                                          custom_objects))
        if 'optimizer_weights' in h5dict:
            _restore_optimizer_state(model, h5dict['optimizer_weights'])
        return model
    return wrapper


def _saved_by_multi_backend_keras(h5dict):
    """Whether the file's `keras_version` is multi-backend Keras' (2.0.0-2.3.1); tf.keras
    writes '2.1.6-tf' ... '2.3.0-tf', then 2.4.0 and later versions."""
    weights = h5dict['model_weights']
    if 'keras_version' not in weights:
        return True  # Keras 1
    version = _text(weights['keras_version'])
    if version.endswith('-tf'):
        return False
    numbers = tuple(int(n) for n in re.findall(r'\d+', version)[:3])
    return numbers <= (2, 3, 1)


def _restore_optimizer_state(model, group):
    names = [_text(n) for n in group['weight_names']]
    if names:
        restore_optimizer_state(model, names, [np.asarray(group[n]) for n in names])


def _yaml_parser(yaml):
    """Parses a model's YAML: in safe mode with PyYAML's safe loader, which builds plain
    values only, plus the `!!python/tuple` tag that `model.to_yaml()` writes for tuples;
    else with `FullLoader`, as Keras 2.3.1 (saving.py:643)."""
    class TupleSafeLoader(yaml.SafeLoader):
        pass
    TupleSafeLoader.add_constructor(
        'tag:yaml.org,2002:python/tuple',
        lambda loader, node: tuple(loader.construct_sequence(node)))

    def parse(text):
        loader = TupleSafeLoader if safe_mode.in_safe_mode() else yaml.FullLoader
        try:
            return yaml.load(text, Loader=loader)
        except yaml.YAMLError as e:
            raise ModelFileError(source() or CONFIGURATION, 'invalid YAML (%s)' % e) from e
    return parse


def translating_model_from_json(model_from_json):
    """Override of `model_from_json`: the configuration translated (`torchk.saving.dialects`)."""
    return _translating_model_from_text(model_from_json, json.loads)


def translating_model_from_yaml(model_from_yaml):
    """Override of `model_from_yaml`, where `keras.engine.saving` has PyYAML: the configuration
    parsed (`_yaml_parser`) and translated."""
    yaml = getattr(sys.modules['keras.engine.saving'], 'yaml', None)
    if yaml is None:
        return model_from_yaml
    return _translating_model_from_text(model_from_yaml, _yaml_parser(yaml))


def inlining_layer_state(serialize_model):
    """Override of `_serialize_model` (which writes HDF5 files): with the text and categorical
    layers' adapted state in their configurations (`vocabulary.inlining_state`)."""
    @functools.wraps(serialize_model)
    def wrapper(*args, **kwargs):
        with vocabulary.inlining_state():
            return serialize_model(*args, **kwargs)
    return wrapper
