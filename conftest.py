"""Test set-up shared by the whole suite.

Keras is pointed at torchk through the environment before anything imports it, with a
private KERAS_HOME so that Keras never rewrites the user's ~/.keras/keras.json.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tests'))
os.environ.setdefault('KERAS_BACKEND', 'torchk.core')
os.environ['KERAS_HOME'] = tempfile.mkdtemp(prefix='torchk-keras-home-')
os.environ.setdefault('TORCHK_DEVICE', 'cpu')
# Tests compare float32 results with float32 references: on CUDA (TORCHK_DEVICE=cuda) they run
# without TensorFloat-32, which torchk otherwise allows there as TF does (tests/test_config.py).
os.environ.setdefault('TORCHK_TF32', '0')

import pytest  # noqa: E402  (after the environment is set)

from torchk import config  # noqa: E402


@pytest.fixture
def floatx64():
    """Sets torchk's floatx to float64 for one test."""
    config.set_floatx('float64')
    yield
    config.set_floatx('float32')


@pytest.fixture
def single_process(monkeypatch):
    """A process that torchrun did not start (no WORLD_SIZE, no TF_CONFIG); a process group
    that the test joins (`torchk.distributed.init`, a tf.distribute strategy) is left after
    it."""
    from torchk.distributed import runtime
    monkeypatch.delenv('WORLD_SIZE', raising=False)
    monkeypatch.delenv('TF_CONFIG', raising=False)
    initialized = runtime.is_initialized()
    yield
    if not initialized:
        runtime.shutdown()
