"""Keras 2 on current Python, numpy, h5py, PyYAML and scikit-learn, whatever the backend.

Keras 2.x is no longer maintained, and it fails on current Python: it uses names that Python
3.10, 3.11 and numpy 2.0 removed, and h5py 3 reads the string attributes of its save files as
`str`, where Keras calls `.decode('utf8')`. Where each fix is defined, a comment or docstring
names the Keras lines it addresses (2.3.1 numbering unless stated).

Restored process-wide, only where missing, because Keras looks them up on those modules
(`restore_removed_names`, when Keras or keras_preprocessing is imported):
- `collections.Container/Iterable/Mapping/Sequence`, removed in Python 3.10, are the
  `collections.abc` classes again;
- `np.Inf`, `np.string_` and `np.unicode_`, removed in numpy 2.0, are `np.inf`, `np.bytes_`
  and `np.str_` again, and the numpy names of Keras 2 era user code that numpy 1.24 and 2.0
  removed (`np.float`, `np.int`, `np.bool`, `np.object`, `np.NaN`, `np.alltrue`, ...;
  `_NUMPY_1_NAMES`) come back;
- `inspect.getargspec` and `inspect.ArgSpec`, removed in Python 3.11, are as Python 3.10 had
  them.

Overrides of Keras (`torchk.overrides`):
- `reading_string_attributes_as_bytes`: h5py 3 stores the `bytes` that Keras writes as
  variable-length strings, and reads them back as `str`, or as object arrays of `str`. The
  functions of `keras.engine.saving` that read attributes get a read view of their HDF5 group
  whose `attrs` give UTF-8 `bytes` instead, as h5py 2 did, so their `.decode('utf8')` calls
  work. The view is a subclass of `h5py.Group`, so it also works inside `H5Dict`, the path of
  `load_model`. Keras' own code runs unchanged; files are written as before, and files
  written with h5py 2 (fixed-length strings, which h5py 3 still reads as bytes) read as
  before.
- `save_to_binary_h5py`: h5py 3 opens files read-only by default: saving a model into a file
  object (`save_model(model, stream)`) opens its in-memory HDF5 file in mode 'w' explicitly.
- `yaml_load_with_a_loader`: 2.2.4's `model_from_yaml` calls `yaml.load` without the `Loader`
  that PyYAML 6 requires; the module's `yaml` gets a `load` whose `Loader` defaults to
  `yaml.FullLoader`, as the 2.2.5 and 2.3.1 calls pass it.
- `add_sklearn_tags`: `keras.wrappers.scikit_learn`'s `KerasClassifier` and `KerasRegressor`
  get the `__sklearn_tags__` that scikit-learn >= 1.6 requires.
"""
import collections
import collections.abc
import functools
import inspect
import sys

import numpy as np

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


def restore_removed_names():
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
