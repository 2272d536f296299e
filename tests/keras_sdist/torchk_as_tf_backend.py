"""pytest plugin: Keras' backend_test.py compares torchk, in the place of the TF backend, to numpy.

Keras 2.3.1's `tests/keras/backend/backend_test.py` checks every backend function of the
TensorFlow backend module (`KTF`, or Theano's/CNTK's) against `keras.backend.numpy_backend`;
with any other backend `KTF` is None and each of those tests fails on `None.placeholder`. This
plugin makes `keras.backend.tensorflow_backend` the active backend module (torchk.core), so the
same tests compare torchk with the numpy reference. Load with `-p torchk_as_tf_backend`
(run_suite.py does, for that file).
"""
import importlib
import sys


def pytest_configure(config):
    import keras.backend
    module = importlib.import_module(keras.backend.backend())
    sys.modules['keras.backend.tensorflow_backend'] = module
    keras.backend.tensorflow_backend = module
