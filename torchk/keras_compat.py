"""Fixes that let unmodified Keras 2.3.1 (and 2.2.4/2.2.5) run on Python 3.11, numpy 2, h5py 3.

Keras 2.x is no longer maintained, and it fails on current Python whatever the backend: it
uses names that Python 3.10, 3.11 and numpy 2.0 removed, and h5py 3 reads the string
attributes of its save files as `str`, where Keras calls `.decode('utf8')`. `install()`
applies the narrow fixes below. Importing `torchk.core` calls it; set the
environment variable `TORCHK_KERAS_COMPAT=0` to turn them all off.

Where each fix is defined, a comment or docstring names the Keras lines it addresses (2.3.1
numbering unless stated):

- `collections.Container/Iterable/Mapping/Sequence`, removed in Python 3.10, become the
  `collections.abc` classes again.
- `np.Inf`, `np.string_` and `np.unicode_`, removed in numpy 2.0, become `np.inf`,
  `np.bytes_` and `np.str_` again.
- `inspect.getargspec` and `inspect.ArgSpec`, removed in Python 3.11, come back as they were
  in Python 3.10.
  These three fixes restore the removed names process-wide and only where they are missing,
  because Keras looks them up on those modules.
- h5py 3 stores the `bytes` that Keras writes as variable-length strings, and reads them back
  as `str`, or as object arrays of `str`. The functions of `keras.engine.saving` that read
  attributes are wrapped: they get a read view of their HDF5 group whose `attrs` give UTF-8
  `bytes` instead, as h5py 2 did, so their `.decode('utf8')` calls work. The view is a
  subclass of `h5py.Group`, so it also works inside `H5Dict`, the path of `load_model`.
  Keras' own code runs unchanged; files are written as before, and files written with h5py 2
  (fixed-length strings, which h5py 3 still reads as bytes) read as before.
- h5py 3 also opens files read-only by default: saving a model into a file object
  (`save_model(model, stream)`) opens its in-memory HDF5 file in mode 'w' explicitly.
- 2.2.4's `model_from_yaml` calls `yaml.load` without the `Loader` that PyYAML 6 requires;
  the module's `yaml` gets a `load` whose `Loader` defaults to `yaml.FullLoader`, as the
  2.2.5 and 2.3.1 calls pass it.
- The leftover debug `print('tracking', value, name)` of `Layer.__setattr__` is dropped.
- `keras.layers.wrappers` gets the module global `uses_learning_phase` its `TimeDistributed`
  step declares but never defines.
- A `Lambda` without `output_shape` infers its output shape as it does under TF, instead of
  assuming its input shape.
- `keras.backend` gets `clear_session`, `get_session`, `set_session` and
  `manual_variable_initialization`, which Keras imports from the backend only for TF.
- `keras.callbacks.TensorBoard` is `torchk.callbacks.TensorBoard` (Keras' own needs
  TensorFlow); `keras.utils.multi_gpu_model` (TensorFlow only) raises a ValueError that
  points to `torchk.distributed`; `Flatten` and `Reshape` report plain `int` output
  dimensions instead of numpy integers (`model.summary()` printed `np.int64(12)`);
  `Flatten` takes inputs of rank 1 and 2 as tf.keras' does (`(batch, n)` stays, `(batch,)`
  becomes `(batch, 1)`), where Keras 2.3.1 asks for rank 3 (layers/core.py:494): tf.keras
  models flatten the `(batch, classes)` encodings of the lookup layers.
- The numpy names of Keras 2 era user code that numpy 1.24 and 2.0 removed (`np.float`,
  `np.int`, `np.bool`, `np.object`, `np.str`, `np.long`, `np.unicode`, `np.complex`,
  `np.float_`, `np.NaN`, `np.alltrue`, ...; `_NUMPY_1_NAMES`) come back, where missing,
  with the other process-wide names.
- `model.save`, `keras.models.save_model`, `save_weights` and so `ModelCheckpoint` write a
  temporary file beside the target and rename it over the target when complete, so an
  exception or a kill mid-write leaves the previous file intact.
- `model.save`, `keras.models.save_model` and so `ModelCheckpoint` write a `.keras` zip
  (tf.keras 2.13+'s format, which TF's Keras and torchk load) for a path ending in `.keras`,
  where Keras 2.3.1 wrote HDF5 under that name (`torchk.saving.keras_zip_writer`).
- `keras.wrappers.scikit_learn`'s `KerasClassifier` and `KerasRegressor` get the
  `__sklearn_tags__` that scikit-learn >= 1.6 requires.
- `load_model`, `model_from_config`, `model_from_json` and `model_from_yaml` read the model
  files of every Keras 2 dialect (tf.keras 2.0-2.15, tf_keras 2.16+, multi-backend Keras):
  `torchk.saving` translates the configuration before Keras 2.3.1 deserializes it, and
  compiles from the translated training configuration. `load_model` is
  `torchk.saving.load_model`, which recognises the format by content (HDF5, `.keras` zip,
  SavedModel directory). Loading is safe by default: `Lambda.from_config` refuses a file's
  marshalled bytecode unless the load passes `safe_mode=False` (a keyword of these loaders
  and of `Model.from_config` / `Sequential.from_config`) or unsafe deserialization is on
  (`torchk.config.enable_unsafe_deserialization()`, `TORCHK_UNSAFE_DESERIALIZATION=1`);
  `clone_model` and `copy.deepcopy` / `pickle` of a model are not loads of a file. During a load,
  `Network.from_config` checks the graph first (a cycle would hang it) and `Layer.add_weight`
  checks each weight's size against a memory budget (`torchk.saving.validation`).
- `keras.layers` gets the layers of `torchk.layers` (TensorFlow's Keras 2 layers that 2.3.1
  lacks, and CuDNN layers that run on any device), so that `load_model` finds them;
  `keras.activations` gets `torchk.activations` (`gelu`, `swish`, `silu`, `mish`),
  `keras.losses` gets `torchk.losses` (the focal cross-entropies, `CosineSimilarity`, tf.keras'
  names `huber`, `kl_divergence`, `log_cosh`) and `keras.metrics` gets `torchk.metrics`
  (`MeanIoU`, and `Precision` and `Recall` that take `top_k`: Keras 2.3.1's are
  TensorFlow-only there, and tf.keras 2's other metrics); `keras.metrics.get` deserializes
  a metric's config (a saved model's compiled metric objects), where 2.3.1 failed.
- The loop around the step: `fit`, `evaluate` and `predict` on arrays cut batches of
  consecutive samples as views (Keras copied each through a list of indices), and the
  callback timing of each batch takes the median of ten floats without numpy; callbacks'
  `on_train_begin` and the other begin/end hooks get a dict of logs (empty), not None.
- A subclassed model whose class defines `build` is built before its first `fit`,
  `evaluate` or `predict` calls it on placeholders (`Model._set_inputs`), as `Layer.__call__`
  builds a layer; Keras 2.3.1 called it unbuilt, without its weights.
- Mixed precision: `torchk.mixed_precision.install` gives Keras' `Layer` its dtype policy
  (tf.keras' API, which Keras 2.3.1 lacks), losses float32 inputs, and `Model.compile` loss
  scaling under `mixed_float16`.

`install()` puts a finder on `sys.meta_path`: the process-wide names are restored when
`keras` is imported (or at once, if it already is), whether torchk or Keras is imported
first; the other fixes are `BACKEND` overrides of the registry (`torchk.overrides`), applied
to each Keras module as soon as it has run.
"""
import builtins
import collections
import collections.abc
import functools
import importlib.abc
import inspect
import os
import statistics
import sys
import time
import warnings

import numpy as np
import torch

from . import overrides

# callbacks/callbacks.py:19 (2.2.4 callbacks.py:20, 2.2.5 callbacks.py:19);
# engine/training_utils.py:639, 696, 811, 823, 857, 927 (2.2.5 training_utils.py:667).
_COLLECTIONS_ABC_NAMES = ('Container', 'Iterable', 'Mapping', 'Sequence')

_NUMPY_ALIASES = {
    # callbacks/callbacks.py:685, 688, 692, 695, 813, 1024, 1027
    # (2.2.4 callbacks.py:412-422, 536, 1091, 1094; 2.2.5 callbacks.py:685-695, 809, 1361, 1364).
    'Inf': np.inf,
    # utils/io_utils.py:296 (2.2.4 io_utils.py:280).
    'string_': np.bytes_,
    # keras_preprocessing/sequence.py:79 (Keras-Preprocessing 1.1.2).
    'unicode_': np.str_,
}

# Importing either restores the removed names first (keras_preprocessing can come alone).
_KERAS_PACKAGES = ('keras', 'keras_preprocessing')


def install():
    """Prepares the fixes; does nothing if `TORCHK_KERAS_COMPAT=0` or if already done.

    The process-wide names are restored when Keras is imported (at once if it already is),
    so importing torchk alone changes nothing outside torchk.
    """
    if os.environ.get('TORCHK_KERAS_COMPAT') == '0' or any(
            isinstance(finder, _PatchAfterImport) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _PatchAfterImport())
    if 'keras' in sys.modules:
        _restore_removed_names()
    overrides.apply_backend(name for name in overrides.backend_modules() if name in sys.modules)


def _restore_removed_names():
    """Restores the `collections`, numpy and `inspect` names Keras uses, where missing."""
    for name in _COLLECTIONS_ABC_NAMES:
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    for name, value in _NUMPY_ALIASES.items():
        if not hasattr(np, name):
            setattr(np, name, value)
    _restore_getargspec()
    _restore_numpy_1_names()


# Names that numpy 1.24 (the builtin type aliases, deprecated in 1.20) and 2.0 removed, which
# Keras 2 era user code uses (`dtype=np.float`, `np.NaN`, `np.alltrue`): each is what it was.
_NUMPY_1_NAMES = {
    'float': float, 'int': int, 'bool': bool, 'object': object, 'str': str, 'long': int,
    'unicode': str, 'complex': complex,
    'float_': np.float64, 'complex_': np.complex128, 'cfloat': np.complex128,
    'longfloat': np.longdouble, 'singlecomplex': np.complex64,
    'longcomplex': np.clongdouble, 'clongfloat': np.clongdouble,
    'int0': np.intp, 'uint0': np.uintp, 'bool8': np.bool_,
    'NaN': np.nan, 'NINF': -np.inf, 'PINF': np.inf, 'NZERO': -0.0, 'PZERO': 0.0,
    'infty': np.inf, 'Infinity': np.inf,
    'alltrue': np.all, 'sometrue': np.any, 'product': np.prod, 'cumproduct': np.cumprod,
    'round_': np.round,
}


def _restore_numpy_1_names():
    """Restores the `_NUMPY_1_NAMES` numpy no longer has. Looked up in the module's namespace,
    not with `hasattr`, which makes numpy warn about the names it removed."""
    for name, value in _NUMPY_1_NAMES.items():
        if name not in vars(np):
            setattr(np, name, value)


def _restore_getargspec():
    """Restores `inspect.getargspec` and `inspect.ArgSpec` as Python 3.10 had them.

    2.2.4 preprocessing/image.py:28, 43, 145, 213, 439 call `inspect.getargspec`;
    utils/generic_utils.py:265 (2.2.5 and 2.3.1) builds an `inspect.ArgSpec`, which
    2.2.5 preprocessing/image.py:28, 43, 146, 214, 440 reach.
    """
    if not hasattr(inspect, 'ArgSpec'):
        inspect.ArgSpec = collections.namedtuple('ArgSpec', 'args varargs keywords defaults')
    if not hasattr(inspect, 'getargspec'):
        inspect.getargspec = _getargspec


def _getargspec(func):
    """`inspect.getargspec` of Python 3.10."""
    spec = inspect.getfullargspec(func)
    if spec.kwonlyargs or spec.annotations:
        raise ValueError('Function has keyword-only parameters or annotations, '
                         'use inspect.signature() API which can support them')
    return inspect.ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)


def reading_string_attributes_as_bytes(load):
    """Override of the functions of `keras.engine.saving` that read string attributes
    (`_deserialize_model`, `load_attributes_from_hdf5_group`, `load_weights_from_hdf5_group`,
    `load_weights_from_hdf5_group_by_name`, which decode them at saving.py:273, 278, 282, 345,
    377, 722, 727, 1183, 1187, 1262, 1266; 2.2.4 saving.py:224, 229, 233, 296, 320, 550, 555,
    1004, 1008, 1083, 1087): they read through a bytes view. Keras without h5py reads no HDF5
    file."""
    h5py = sys.modules['keras.engine.saving'].h5py
    if h5py is None:
        return load
    return _reading_through(_bytes_attributes_view(h5py), load)


def _reading_through(view, load):
    """Returns `load`, called on `view(f)` instead of its first argument `f`."""
    @functools.wraps(load)
    def wrapper(f, *args, **kwargs):
        return load(view(f), *args, **kwargs)
    return wrapper


@functools.lru_cache(maxsize=None)
def _bytes_attributes_view(h5py):
    """Returns `view(f)`: `f` (an h5py group, or an `H5Dict` on one) with bytes attributes.

    Anything else, such as an `H5Dict` on a dict (`unpickle_model`), is returned as is.
    """
    class Attributes(h5py.AttributeManager):
        def __getitem__(self, name):
            value = super().__getitem__(name)
            if isinstance(value, np.ndarray) and value.size == 0:
                # Keras writes `[]` for a layer without weights, and 2.2.4 saving.py:251
                # tests it with `if weight_names:`, which numpy 2 refuses for an array.
                return []
            if isinstance(value, str):
                return value.encode('utf8', 'surrogateescape')
            if (isinstance(value, np.ndarray) and value.dtype == object
                    and h5py.check_string_dtype(value.dtype)):
                return np.array([v.encode('utf8', 'surrogateescape') for v in value.flat],
                                dtype=bytes).reshape(value.shape)
            return value

    class Group(h5py.Group):
        @property
        def attrs(self):
            return Attributes(self)

        def __getitem__(self, name):
            item = super().__getitem__(name)
            return Group(item.id) if isinstance(item, h5py.Group) else item

    def view(f):
        if isinstance(f, h5py.Group):
            return Group(f.id)
        if isinstance(getattr(f, 'data', None), h5py.Group):  # an `H5Dict`
            return type(f)(Group(f.data.id), mode='r' if f.read_only else 'a')
        return f
    return view


def save_to_binary_h5py(save_function, stream):
    """Override of `keras.utils.io_utils.save_to_binary_h5py` (io_utils.py:416), which
    saving.py:546 calls to save a model into a file object (`save_model(model, stream)`): it
    opened its in-memory HDF5 file with `h5py.File(name, driver='core',
    backing_store=False)` and no mode; h5py 3 made the default mode 'r' (it was 'a'), so the
    file did not open (`OSError: Unable to synchronously open file`). Here it opens in mode
    'w'."""
    import h5py
    with h5py.File('in-memory-h5py', mode='w', driver='core', backing_store=False) as h5file:
        result = save_function(h5file)
        h5file.flush()
        image = h5file.id.get_file_image()
    stream.write(image)
    return result


def yaml_load_with_a_loader(yaml):
    """Override of `keras.engine.saving.yaml` (the module): a `yaml` whose `load` defaults
    `Loader` to `yaml.FullLoader`: 2.2.4 saving.py:473 calls `yaml.load(yaml_string)`, which
    PyYAML 6 refuses (`Loader` became required). 2.2.5 saving.py:608 and 2.3.1 saving.py:643
    pass `Loader=yaml.FullLoader` themselves and get the same call. Only where PyYAML
    requires it."""
    if yaml is None or not hasattr(yaml, 'FullLoader'):
        return yaml
    if inspect.signature(yaml.load).parameters['Loader'].default is not inspect.Parameter.empty:
        return yaml

    class Yaml(object):
        def __getattr__(self, name):
            return getattr(yaml, name)

        @staticmethod
        def load(stream, Loader=None, **kwargs):
            return yaml.load(stream, Loader=Loader or yaml.FullLoader, **kwargs)
    return Yaml()


def print_without_tracking(*args, **kwargs):
    """Override of `print` in `keras.engine.base_layer` (a module global named `print` takes
    the builtin's place there): drops `print('tracking', value, name)` at
    engine/base_layer.py:1237 (2.3.x), the module's only `print`, and passes on every other
    call."""
    if not (args and isinstance(args[0], str) and args[0] == 'tracking'):
        builtins.print(*args, **kwargs)


def define_uses_learning_phase(wrappers):
    """Defines the module global `uses_learning_phase` that `TimeDistributed`'s step function
    declares `global` but never defines (layers/wrappers.py:220-225, 2.2.4 wrappers.py:
    205-210). Every backend tensor that has `_uses_learning_phase` reaches the undefined
    name: with torchk that is every tensor, so a fixed-batch `TimeDistributed` could not
    be built."""
    if not hasattr(wrappers, 'uses_learning_phase'):
        wrappers.uses_learning_phase = False


def inferring_lambda_output_shapes(keras_compute_output_shape):
    """Override of `Lambda.compute_output_shape`: a `Lambda` without `output_shape` infers
    its shape by calling itself on placeholders only for 'tensorflow' and 'cntk', and falls
    back to its input shape otherwise (layers/core.py:667-690; 2.2.4 core.py:640-662):
    `layer.output_shape` and `model.summary()` would be wrong. Under torchk the same
    inference works, so it is done for torchk too."""
    @functools.wraps(keras_compute_output_shape)
    def compute_output_shape(self, input_shape):
        backend = sys.modules['keras.backend']
        if self._output_shape is not None or backend.backend() != 'torchk.core':
            return keras_compute_output_shape(self, input_shape)
        several = isinstance(input_shape, list)
        shapes = input_shape if several else [input_shape]
        input_dtypes = getattr(self, '_input_dtypes', None)
        if not isinstance(input_dtypes, list):
            input_dtypes = [input_dtypes] * len(shapes)
        inputs = [backend.placeholder(shape=shape, dtype=dtype)
                  for shape, dtype in zip(shapes, input_dtypes)]
        outputs = self.call(inputs if several else inputs[0])
        if isinstance(outputs, list):
            return [backend.int_shape(output) for output in outputs]
        return backend.int_shape(outputs)
    return compute_output_shape


# TF-only in Keras' import list (backend/__init__.py:156-164; 2.2.5 the same), but called
# by users of every backend.
_SESSION_FUNCTIONS = ('clear_session', 'get_session', 'set_session',
                      'manual_variable_initialization')


def export_session_functions(backend):
    """`keras.backend` imports `clear_session`, `get_session`, `set_session` and
    `manual_variable_initialization` from the backend only for TensorFlow (backend/
    __init__.py:156-164): `K.clear_session()` would raise AttributeError. torchk's versions
    are added to `keras.backend` when torchk is its backend (also while `keras.backend` is
    still importing it: the attributes set then stay)."""
    core = sys.modules.get('torchk.core')
    loading = sys.modules.get('keras.backend.load_backend')
    if core is None or getattr(loading, '_BACKEND', None) != 'torchk.core':
        return
    for name in _SESSION_FUNCTIONS:
        if not hasattr(backend, name):
            setattr(backend, name, getattr(core, name))


def with_logs_dict(hook):
    """Override of `CallbackList`'s `on_train_begin`, `on_test_end` and the other begin and
    end hooks: the callbacks get a dict of logs, empty where Keras passed None (callbacks
    written for tf.keras, which passes a dict, call `logs.keys()`)."""
    @functools.wraps(hook)
    def with_logs_dict(self, logs=None):
        return hook(self, {} if logs is None else logs)
    return with_logs_dict


def slicing_batches_as_views(keras_slice_arrays):
    """Override of `keras.engine.training_arrays.slice_arrays`: `fit_loop`, `test_loop` and
    `predict_loop` cut each batch out of the arrays with
    `slice_arrays(arrays, batch_ids)` (engine/training_arrays.py:182, 185, 327, 441), which
    (utils/generic_utils.py:553-555) turns the index array into a list for h5py's sake and
    indexes with it: a copy through a Python list of ints, about as long as a small model's
    step. Here consecutive indices (every batch unless `shuffle=True`) become a slice, a view
    with no copy, and other index arrays index numpy arrays directly; anything else (h5py
    datasets) is cut as Keras cuts it."""
    def slice_arrays(arrays, start=None, stop=None):
        if not (isinstance(start, np.ndarray) and start.ndim == 1 and len(start)
                and stop is None):
            return keras_slice_arrays(arrays, start, stop)
        first = int(start[0])
        consecutive = (int(start[-1]) - first == len(start) - 1
                       and bool((start[1:] - start[:-1] == 1).all()))

        def cut(x):
            if x is None:
                return None
            if consecutive:
                return x[first:first + len(start)]
            if isinstance(x, np.ndarray):
                return x[start]
            return keras_slice_arrays(x, start)
        return [cut(x) for x in arrays] if isinstance(arrays, list) else cut(arrays)
    return slice_arrays


def call_batch_hook(self, mode, hook, batch, logs=None):
    """Override of Keras 2.3's `CallbackList._call_batch_hook` (callbacks/callbacks.py:70-101),
    which takes `np.median` of the last ten callback durations twice per batch, to warn about
    slow callbacks: an array conversion and a partition costing more than a small model's loop
    around its step. This one does what Keras' does (the same timings, the same warning) with
    `statistics.median` of those ten floats (Keras 2.2 has no batch timing)."""
    if not self.callbacks:
        return
    name = 'on_%s_batch_%s' % (mode, hook)
    if hook == 'end':
        if not hasattr(self, '_t_enter_batch'):
            self._t_enter_batch = time.time()
        self._delta_t_batch = time.time() - self._t_enter_batch
    logs = logs or {}
    started = time.time()
    for callback in self.callbacks:
        getattr(callback, name)(batch, logs)
    durations = self._delta_ts[name]
    durations.append(time.time() - started)
    median = statistics.median(durations)
    if 0. < 0.95 * self._delta_t_batch < median and median > 0.1:
        warnings.warn('Method (%s) is slow compared to the batch update (%f). Check your '
                      'callbacks.' % (name, median), RuntimeWarning)
    if hook == 'begin':
        self._t_enter_batch = time.time()


def multi_gpu_model(model, gpus=None, cpu_merge=True, cpu_relocation=False):
    """Override of `keras.utils.multi_gpu_model` (utils/multi_gpu_utils.py:24-258), which
    replicates a model on TensorFlow devices only; off TensorFlow it fails with an
    AttributeError on `K.tensorflow_backend` (:16). Under torchk it raises a ValueError (the
    type of Keras' own multi_gpu_model errors) that says what to use instead."""
    raise ValueError('keras.utils.multi_gpu_model replicates a model with TensorFlow '
                     'only; with the torchk backend, train on several GPUs (or '
                     'machines) with torchk.distributed, data parallel on '
                     'torch.distributed, launched with torchrun.')


def plain_int_output_shapes(keras_compute_output_shape):
    """Override of `Flatten.compute_output_shape` (layers/core.py:505) and `Reshape`'s
    (whose unknown dimension, :381-385, is computed): their numpy integers, which numpy 2
    prints as `np.int64(12)` (in `model.summary()`, `plot_model` and saved shapes), become
    plain `int`s."""
    @functools.wraps(keras_compute_output_shape)
    def compute_output_shape(self, input_shape):
        shape = keras_compute_output_shape(self, input_shape)
        return tuple(int(d) if isinstance(d, np.integer) else d for d in shape)
    return compute_output_shape


def flatten_any_rank(keras_init):
    """Override of `Flatten.__init__`: `Flatten` of inputs of rank 1 or 2 (tf.keras'), where
    Keras 2.3.1's input spec asks for rank 3 (layers/core.py:494); its computation already
    flattens any rank."""
    @functools.wraps(keras_init)
    def __init__(self, *args, **kwargs):
        keras_init(self, *args, **kwargs)
        self.input_spec = sys.modules['keras.layers.core'].InputSpec(min_ndim=1)
    return __init__


def metric_configs_deserialized(keras_get):
    """Override of `keras.metrics.get`: a metric's config (`{'class_name': ..., 'config':
    ...}`, how a saved model's compile arguments hold a metric object) is deserialized;
    Keras 2.3.1 looked up the config's string form as a name (metrics.py:1974) and failed
    every such load."""
    @functools.wraps(keras_get)
    def get(identifier):
        if isinstance(identifier, dict):
            return sys.modules['keras.metrics'].deserialize(identifier)
        return keras_get(identifier)
    return get


def add_sklearn_tags(scikit_learn):
    """Gives `KerasClassifier` and `KerasRegressor` (keras/wrappers/scikit_learn.py:175, 303)
    the `__sklearn_tags__` that scikit-learn >= 1.6 asks every estimator for (`clone`,
    `cross_val_score`, `GridSearchCV`), and the `_estimator_type` that older releases read.
    Keras' wrappers predate both and do not derive from `sklearn.base.BaseEstimator`."""
    for cls, estimator_type in ((scikit_learn.KerasClassifier, 'classifier'),
                                (scikit_learn.KerasRegressor, 'regressor')):
        cls._estimator_type = estimator_type
        cls.__sklearn_tags__ = _sklearn_tags(estimator_type)


def _sklearn_tags(estimator_type):
    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, RegressorTags, Tags, TargetTags
        classifier = estimator_type == 'classifier'
        return Tags(estimator_type=estimator_type, target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags() if classifier else None,
                    regressor_tags=None if classifier else RegressorTags())
    return __sklearn_tags__


def building_before_setting_inputs(keras_set_inputs):
    """Override of `Model._set_inputs` (a subclassed model's first `fit`, `evaluate` or
    `predict`), which calls
    the model's `call` without building it: a model whose class defines `build` (its weights
    made there, as keras-io's models do) failed. It now builds first, as `Layer.__call__`
    does, with the shapes of the inputs, batch size unknown."""
    def _set_inputs(self, inputs, outputs=None, training=None):
        defines_build = (type(self).build.__module__.split('.')[0] not in ('keras', 'torchk')
                         and not self._is_graph_network)
        # Keras symbols as inputs come from `Model.build`, which a `build` under way calls.
        if defines_build and outputs is None and not self.weights and not self.inputs \
                and not getattr(self, '_torchk_building', False) \
                and not _holds_symbol(inputs):
            self._torchk_building = True
            try:
                self.build(input_shapes(inputs))
            finally:
                self._torchk_building = False
            if self.inputs:  # that build called Model.build, which set them
                return None
        return keras_set_inputs(self, inputs, outputs, training)
    return _set_inputs


def _holds_symbol(inputs):
    if isinstance(inputs, (list, tuple)):
        return any(_holds_symbol(value) for value in inputs)
    if isinstance(inputs, dict):
        return any(_holds_symbol(value) for value in inputs.values())
    return sys.modules['keras.backend'].is_tensor(inputs) and not isinstance(inputs,
                                                                           torch.Tensor)


def input_shapes(inputs):
    """The shapes of model inputs (arrays, tensors or Keras symbols; a list or dict of
    them): a symbol's own, the others' with the batch size unknown."""
    if isinstance(inputs, (list, tuple)):
        return [input_shapes(value) for value in inputs]
    if isinstance(inputs, dict):
        return {name: input_shapes(value) for name, value in inputs.items()}
    backend = sys.modules['keras.backend']
    if backend.is_tensor(inputs) and not isinstance(inputs, torch.Tensor):
        return backend.int_shape(inputs)
    return (None,) + tuple(np.shape(inputs))[1:]


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds the modules that `BACKEND` overrides change (`torchk.overrides`) with the other
    finders, and applies the overrides once each has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname in _KERAS_PACKAGES:
            _restore_removed_names()
        if fullname not in overrides.backend_modules():
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, 'find_spec'):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    """Runs a module with its own loader, then applies the overrides of its attributes."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        overrides.apply_backend([module.__name__])

    def __getattr__(self, name):  # get_source, get_code, is_package, ...
        return getattr(self._loader, name)
