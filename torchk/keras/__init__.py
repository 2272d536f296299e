"""tf.keras 2.x (the public API of tf_keras 2.15) over Keras 2.3.1 and torchk.

`import torchk.keras as keras` gives the names a tf.keras 2 script uses: `keras.layers`,
`keras.Model` (with `train_step`/`test_step`/`predict_step` overrides), `keras.optimizers`
(with `schedules`), `keras.losses`, `keras.metrics`, `keras.callbacks`, `keras.utils`,
`keras.preprocessing`, `keras.applications`, `keras.datasets`, `keras.backend`,
`keras.mixed_precision`, ... `python -m torchk run script.py` serves `tensorflow.keras.X`
and `tf_keras.X` from `torchk.keras.X`.

Importing this package sets `KERAS_BACKEND=torchk.core` and imports Keras 2.3.1.

# Raises
    ImportError: if Keras was already imported with another backend, or the Keras
        installed is not 2.3.1 (the facade builds on 2.3.1's engine; multi-backend Keras
        2.2.x code runs on torchk without it).
"""
import os
import sys

if 'keras.backend' in sys.modules:
    _loaded = sys.modules['keras.backend'].backend()
    if _loaded != 'torchk.core':
        raise ImportError("torchk.keras runs Keras on the torchk backend, but Keras was already "
                          "imported with the '%s' backend: import torchk.keras before keras, or "
                          "set KERAS_BACKEND=torchk.core." % _loaded)
else:
    os.environ['KERAS_BACKEND'] = 'torchk.core'

import keras as _keras  # noqa: E402

if _keras.__version__ != '2.3.1':
    raise ImportError('torchk.keras (tf.keras on torchk) needs Keras 2.3.1, the last '
                      'multi-backend release; Keras %s is installed: pip install keras==2.3.1.'
                      % _keras.__version__)

from .. import overrides as _overrides  # noqa: E402

_overrides.install_facade()

from .engine import tracking as _tracking  # noqa: E402

_tracking.register_views()

from . import activations, backend, callbacks, constraints, initializers  # noqa: E402
from . import layers, losses, metrics, models, optimizers, regularizers  # noqa: E402
from . import preprocessing, utils  # noqa: E402
from .engine import Model, Sequential  # noqa: E402
from .layers import Input  # noqa: E402

from ._facade import VERSION as __version__  # noqa: E402

_LAZY = ('applications', 'datasets', 'experimental', 'mixed_precision', 'saving')


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module('.' + name, __name__)
    if name.startswith('__'):
        raise AttributeError(name)
    from ._facade import missing
    from ..tf.namespaces import missing_name
    raise missing_name(missing('tf.keras.' + name))
