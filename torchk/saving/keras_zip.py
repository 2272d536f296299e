"""`.keras` zips of tf.keras 2.13-2.15 and tf_keras ("saving v3"), and their `.weights.h5`.

A `.keras` file is a zip of `config.json` (the model's configuration, with its
`compile_config`), `metadata.json`, `model.weights.h5` (the weights in the per-layer `vars`
layout of `torchk.saving.weights_h5`, the optimizer's variables too) and `assets/` (the
vocabularies of text layers, read as data by `torchk.saving.vocabulary`). `load` builds the model
from the translated configuration (`keras.engine.saving.model_from_config`, which translates
every dialect), sets its weights and compiles it from the `compile_config`, restoring the
optimizer's state where it maps onto Keras 2.3.1's optimizer.

The zip is read in memory, never extracted: each member's declared size is checked before it
is read (a zip bomb declares gigabytes that a few bytes decompress into), the configuration is
bounded, and a damaged or hostile file raises `ModelFileError` naming it.

`reading_vars_layout` (an override, `torchk.overrides`) makes `Network.load_weights` read
tf.keras' weights files in the `vars` layout (`model.save_weights('x.weights.h5')`, and a
`.keras` zip's weights), recognised by their content; Keras 2's own weights files load as
before.
"""
import functools
import io
import json
import warnings
import zipfile
import zlib

import h5py

from . import optimizer_state, training_config, vocabulary, weights_h5
from .errors import CONFIGURATION, ModelFileError
from .signatures import HDF5_SIGNATURE, ZIP_SIGNATURES, starts_with

CONFIG_NAME = 'config.json'
WEIGHTS_NAME = 'model.weights.h5'
ASSETS_DIRECTORY = 'assets'

# The largest configuration read (a model's configuration is kilobytes to a few megabytes).
MAX_CONFIG_BYTES = 64 * 2 ** 20
# The largest ratio of a member's declared size to its compressed size: tf.keras stores its
# members uncompressed; deflated weights compress a few times, a zip bomb a million times.
MAX_COMPRESSION_RATIO = 200
# Members this small are read whatever their ratio.
SMALL_MEMBER_BYTES = 2 ** 20



def is_keras_zip(path):
    """Whether the file at `path` is a zip (by its first bytes), as `.keras` files are."""
    return starts_with(path, ZIP_SIGNATURES)


def load(path, custom_objects=None, compile=True):
    """Loads a model from a `.keras` zip written by tf.keras 2.13-2.15 or tf_keras.

    # Arguments
        path: the `.keras` file.
        custom_objects: dict of custom classes and functions, as for `load_model`.
        compile: whether to compile the model from its saved training configuration (and
            restore the optimizer's state where it maps).

    # Returns
        A Keras 2.3.1 model.

    # Raises
        ModelFileError: naming the file, for a damaged or hostile zip, a configuration that
            does not build a model, or weights that disagree with it (naming the layer).
        ValueError: for a setting Keras 2.3.1 cannot compute (naming the layer).
    """
    with _open_zip(path) as archive:
        config = _read_config(archive, path)
        weights = _read_member(archive, WEIGHTS_NAME, path)
        model = _build(config, custom_objects, path)
        with _open_h5(io.BytesIO(weights), path) as root:
            trainable = weights_h5.load_into(model, root, path, _class_names(config),
                                             assets=_assets_reader(archive, path))
            if compile:
                _compile(model, config, root, trainable, custom_objects, path)
    return model


def _assets_reader(archive, path):
    """A function of a layer's group path returning its asset files in the zip
    (`assets/<group>/<name>`) as `{name: lines}`, each read as vocabulary text."""
    names = archive.namelist()

    def assets(group):
        prefix = '%s/%s/' % (ASSETS_DIRECTORY, group)
        return {name[len(prefix):]: vocabulary.lines(_read_member(
                    archive, name, path, limit=vocabulary.MAX_BYTES), path)
                for name in names if name.startswith(prefix) and '/' not in name[len(prefix):]}
    return assets


def reading_vars_layout(load_weights):
    """Override of `Network.load_weights`: reads tf.keras' weights in the `vars` layout too (a
    `.weights.h5` file or a `.keras` zip)."""
    @functools.wraps(load_weights)
    def wrapper(self, filepath, by_name=False, skip_mismatch=False, reshape=False):
        if isinstance(filepath, str) and is_keras_zip(filepath):
            with _open_zip(filepath) as archive:
                weights = _read_member(archive, WEIGHTS_NAME, filepath)
            with _open_h5(io.BytesIO(weights), filepath) as root:
                _load_vars_layout(self, root, filepath, by_name)
            return
        if isinstance(filepath, str) and starts_with(filepath, (HDF5_SIGNATURE,)):
            with _open_h5(filepath, filepath) as root:
                if weights_h5.is_vars_layout(root, filepath):
                    _load_vars_layout(self, root, filepath, by_name)
                    return
        load_weights(self, filepath, by_name=by_name, skip_mismatch=skip_mismatch,
                     reshape=reshape)
    return wrapper


def _load_vars_layout(model, root, path, by_name):
    if by_name:
        raise ValueError('%s holds weights in tf.keras\' per-layer layout, which names no '
                         'layer: load it with by_name=False into the same architecture.'
                         % path)
    weights_h5.load_into(model, root, path)


class _open_zip(object):
    """A context manager opening a zip, raising ModelFileError for one that is damaged."""

    def __init__(self, path):
        self.path = path
        self.archive = None

    def __enter__(self):
        try:
            self.archive = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
            raise ModelFileError(self.path, 'it is not a readable zip (%s: %s)'
                                 % (type(e).__name__, e)) from e
        return self.archive

    def __exit__(self, *exc):
        self.archive.close()


class _open_h5(object):
    """A context manager opening an HDF5 file read-only, raising ModelFileError for one
    that is damaged."""

    def __init__(self, source, path):
        self.source = source
        self.path = path
        self.file = None

    def __enter__(self):
        try:
            self.file = h5py.File(self.source, 'r')
        except weights_h5.H5_ERRORS as e:
            raise ModelFileError(self.path, 'its weights are not a readable HDF5 file (%s)'
                                 % e) from e
        return self.file

    def __exit__(self, *exc):
        self.file.close()


def _read_member(archive, name, path, limit=None):
    """A member's bytes, after checking its declared size."""
    try:
        info = archive.getinfo(name)
    except KeyError as e:
        raise ModelFileError(path, 'the zip has no %s (it has %s)'
                             % (name, ', '.join(archive.namelist()[:10]) or 'nothing')) from e
    if limit is not None and info.file_size > limit:
        raise ModelFileError(path, 'its %s declares %d bytes, more than the %d a model '
                             'configuration may have' % (name, info.file_size, limit))
    if (info.file_size > SMALL_MEMBER_BYTES
            and info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1)):
        raise ModelFileError(path, 'its %s declares %d bytes compressed into %d (a zip bomb?)'
                             % (name, info.file_size, info.compress_size))
    try:
        with archive.open(info) as member:
            data = member.read(info.file_size + 1)
    except (zipfile.BadZipFile, EOFError, OSError, RuntimeError, ValueError,
            NotImplementedError, zlib.error) as e:
        raise ModelFileError(path, 'its %s cannot be read (%s: %s)'
                             % (name, type(e).__name__, e)) from e
    if len(data) != info.file_size:
        raise ModelFileError(path, 'its %s has %d bytes where the zip declares %d'
                             % (name, len(data), info.file_size))
    return data


def _read_config(archive, path):
    data = _read_member(archive, CONFIG_NAME, path, limit=MAX_CONFIG_BYTES)
    try:
        config = json.loads(data.decode('utf8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ModelFileError(path, 'its %s is not valid JSON (%s)' % (CONFIG_NAME, e)) from e
    if not isinstance(config, dict) or not isinstance(config.get('config'), dict) or (
            not isinstance(config.get('class_name'), str)):
        raise ModelFileError(path, 'its %s is not a model configuration (a class_name and '
                             'a config)' % CONFIG_NAME)
    return config


def _build(config, custom_objects, path):
    from keras.engine import saving
    try:
        model = saving.model_from_config(config, custom_objects=custom_objects)
    except ModelFileError as e:
        if e.path != CONFIGURATION:
            raise
        raise ModelFileError(path, 'its configuration does not build a model (%s)' % e.what
                             ) from e
    except (ValueError, TypeError, KeyError, AttributeError, IndexError,
            RecursionError) as e:
        raise ModelFileError(path, 'its configuration does not build a model (%s: %s)'
                             % (type(e).__name__, e)) from e
    if not model.built:
        input_shape = (config.get('build_config') or {}).get('input_shape')
        if input_shape is None:
            raise ModelFileError(path, 'its model has no input shape to build it with')
        model.build(tuple(input_shape))
    return model


def _class_names(config):
    """tf.keras' class name of every layer of a configuration, nested models' included, by
    layer name."""
    names = {}
    inner = config.get('config')
    if isinstance(inner, dict):
        if isinstance(inner.get('name'), str):
            names[inner['name']] = config['class_name']
        for layer in inner.get('layers') or ():
            if isinstance(layer, dict):
                names.update(_class_names(layer))
    return names


def _compile(model, config, root, trainable, custom_objects, path):
    compile_config = config.get('compile_config')
    if not compile_config:
        warnings.warn('No training configuration found in save file: the model was *not* '
                      'compiled. Compile it manually.')
        return
    try:
        saved = training_config.training_config_from_compile_config(compile_config)
        model.compile(**training_config.compile_arguments(saved, model, custom_objects))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise ModelFileError(path, 'its compile_config does not compile the model (%s: %s); '
                             'load it with compile=False and compile it yourself'
                             % (type(e).__name__, e)) from e
    from .. import mixed_precision
    optimizer = model.optimizer
    if isinstance(optimizer, mixed_precision.LossScaleOptimizer):  # the policy mixed_float16's
        optimizer = optimizer.inner_optimizer
    state = weights_h5.optimizer_weights(
        root, path, {'class_name': type(optimizer).__name__, 'config': optimizer.get_config()},
        trainable)
    if isinstance(state, str):
        warnings.warn('The saved optimizer state was not restored (%s): the model starts '
                      'training with a fresh optimizer.' % state)
        return
    names, values = state
    if names:
        optimizer_state.restore_optimizer_state(model, names, values)
