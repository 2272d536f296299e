"""Keras 2.3.1's `numpy_backend`, the numerical reference, loaded without importing Keras.

`keras.backend.numpy_backend` imports `keras.utils`, which imports the whole of Keras and its
configured backend. The reference needs only three small helpers, so this module loads those
helper files by path and runs the reference's source against them. numpy 2 removed `np.int`,
which the reference uses once (numpy_backend.py:730); it is read as `np.int64`.
"""
import importlib.util
import os
import types



def _keras_dir():
    spec = importlib.util.find_spec('keras')
    if spec is None or not spec.submodule_search_locations:
        raise ImportError('keras 2.3.1 is not installed: pip install keras==2.3.1')
    return list(spec.submodule_search_locations)[0]


def _load_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_numpy_backend():
    keras_dir = _keras_dir()
    generic_utils = _load_file('_ref_generic_utils',
                               os.path.join(keras_dir, 'utils', 'generic_utils.py'))
    np_utils = _load_file('_ref_np_utils', os.path.join(keras_dir, 'utils', 'np_utils.py'))
    path = os.path.join(keras_dir, 'backend', 'numpy_backend.py')
    with open(path) as f:
        source = f.read()
    source = (source
              .replace('from .common import floatx', '')
              .replace('from keras.utils.generic_utils import transpose_shape', '')
              .replace('from keras.utils import to_categorical', '')
              .replace('dtype=np.int)', 'dtype=np.int64)'))
    module = types.ModuleType('numpy_backend_reference')
    module.__file__ = path
    module.floatx = lambda: 'float32'
    module.transpose_shape = generic_utils.transpose_shape
    module.to_categorical = np_utils.to_categorical
    exec(compile(source, path, 'exec'), module.__dict__)
    return module


numpy_backend = _load_numpy_backend()
