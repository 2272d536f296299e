"""Run one script of a corpus unmodified, offline, with its downloads and `keras.datasets`
replaced by synthetic data.

    python harness.py SCRIPT [ARGS...]                    # TensorFlow (tf_keras)
    python -m torchk run harness.py SCRIPT [ARGS...]      # torchk

The same module runs on both sides. Before the script runs as `__main__` (with `sys.argv`
and `sys.path[0]` as `python SCRIPT ARGS...` would set them), it
- imports `tensorflow` and `tensorflow.keras` (TensorFlow's, or torchk's under the launcher)
  and replaces the `keras.datasets` loaders by `synthetic_datasets`' (`install()`);
- goes offline (`offline.install()`): a URL with a stand-in (`standins`) is served its
  synthetic file, any other download or connection fails at once;
- on TensorFlow only, serves `import keras` / `keras.X` with the module named by the
  environment variable `HARNESS_KERAS` (default `tf_keras.src`) and its submodules: in April
  2023 (TF 2.12, keras-io's era) the `keras` package was the Keras 2 that `tf.keras`
  re-exported, its source tree at the top (`keras.losses.LossFunctionWrapper`), which
  tf_keras keeps under `tf_keras.src`; from TF 2.13 to 2.15 (the TF docs' era) its top was
  the public API, tf_keras' own (`HARNESS_KERAS=tf_keras`). The oracle environment's `keras`
  is Keras 2.3.1, which cannot import on TF 2.21. Under torchk's launcher `keras` stays
  Keras 2.3.1 on the torchk backend. tf_keras' API module (`tf.keras`) also lacks the
  `__version__` that tf.keras 2.12's had (`print(keras.__version__)`): it gets tf_keras'.
Any exception leaves the process with a non-zero status and its traceback on stderr.
"""
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

import offline  # beside this file: sys.path[0]
import synthetic_datasets


class _KerasIsTfKeras(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `keras` and `keras.X` with `target` and `target.X` (TensorFlow side)."""

    def __init__(self, target):
        self.target = target

    def find_spec(self, fullname, path=None, target=None):
        if fullname == 'keras' or fullname.startswith('keras.'):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(self.target + spec.name[len('keras'):])

    def exec_module(self, module):
        """Nothing to run: the target module ran when imported."""


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    script = os.path.abspath(argv[0])
    import tensorflow as tf
    on_torchk = tf.__name__.startswith('torchk')
    if not on_torchk:
        sys.meta_path.insert(0, _KerasIsTfKeras(os.environ.get('HARNESS_KERAS',
                                                               'tf_keras.src')))
    from tensorflow import keras
    for name in synthetic_datasets.LOADERS:
        getattr(keras.datasets, name)
    import tf_keras  # (loads tf_keras.datasets.X on TensorFlow)
    if not on_torchk:
        importlib.import_module('keras.datasets')  # tf_keras.src.datasets.X
        importlib.import_module('tensorflow.keras').__version__ = tf_keras.__version__
    if not synthetic_datasets.install():
        raise RuntimeError('no keras.datasets module was found to patch')
    offline.install()
    sys.argv = [script] + list(argv[1:])
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name='__main__')


if __name__ == '__main__':
    main(sys.argv[1:])
