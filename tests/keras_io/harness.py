"""Run one keras-io script unmodified, offline, with `keras.datasets` replaced by synthetic data.

    python harness.py SCRIPT [ARGS...]                    # TensorFlow (tf_keras)
    python -m torchk run harness.py SCRIPT [ARGS...]      # torchk

The same module runs on both sides. Before the script runs as `__main__` (with `sys.argv`
and `sys.path[0]` as `python SCRIPT ARGS...` would set them), it
- imports `tensorflow` and `tensorflow.keras` (TensorFlow's, or torchk's under the launcher)
  and replaces the `keras.datasets` loaders by `synthetic_datasets`' (`install()`);
- refuses network connections (`socket.socket.connect`), so a download fails at once;
- on TensorFlow only, serves `import keras` / `keras.X` with `tf_keras.src` /
  `tf_keras.src.X`: in April 2023 (TF 2.12) the `keras` package was the Keras 2 that
  `tf.keras` re-exported, its source tree at the top (`keras.losses.LossFunctionWrapper`),
  which tf_keras keeps under `tf_keras.src`; the oracle environment's `keras` is Keras 2.3.1,
  which cannot import on TF 2.21. Under torchk's launcher `keras` stays Keras 2.3.1 on the
  torchk backend. tf_keras' API module (`tf.keras`) also lacks the `__version__` that
  tf.keras 2.12's had (`print(keras.__version__)`): it gets tf_keras'.
Any exception leaves the process with a non-zero status and its traceback on stderr.
"""
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import socket
import sys

import synthetic_datasets  # beside this file: sys.path[0]


class _KerasIsTfKeras(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `keras` and `keras.X` with `tf_keras.src` and `tf_keras.src.X` (TensorFlow
    side)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == 'keras' or fullname.startswith('keras.'):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module('tf_keras.src' + spec.name[len('keras'):])

    def exec_module(self, module):
        """Nothing to run: `tf_keras.src` ran when imported."""


def _offline(self, address):
    raise OSError('keras-io canon runner: offline, no connection to %r.' % (address,))


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    script = os.path.abspath(argv[0])
    import tensorflow as tf
    on_torchk = tf.__name__.startswith('torchk')
    if not on_torchk:
        sys.meta_path.insert(0, _KerasIsTfKeras())
    from tensorflow import keras
    for name in synthetic_datasets.LOADERS:
        getattr(keras.datasets, name)
    import tf_keras  # (loads tf_keras.datasets.X on TensorFlow)
    if not on_torchk:
        importlib.import_module('keras.datasets')  # tf_keras.src.datasets.X
        importlib.import_module('tensorflow.keras').__version__ = tf_keras.__version__
    if not synthetic_datasets.install():
        raise RuntimeError('no keras.datasets module was found to patch')
    socket.socket.connect = _offline
    sys.argv = [script] + list(argv[1:])
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name='__main__')


if __name__ == '__main__':
    main(sys.argv[1:])
