"""torchk: the Keras 2 backend API on PyTorch.

`torchk.core` is the backend Keras loads (`KERAS_BACKEND=torchk.core`). The PyTorch
interoperability tools `TorchModule`, `to_torch`, `KerasModule` and `DataLoaderSequence`
(from `torchk.interop`) are importable from here too; they import Keras when first used.
"""
import os as _os
import sys as _sys

__version__ = '0.1.0'

# OpenMP reads its settings when torch loads it: imported first, torchk shortens how long
# torch's idle threads spin before sleeping (libgomp's default, about 10 ms after every
# parallel op, takes a CPU from other work; 30000 spins, about 1 ms, still spans the gaps
# between the ops of a step). See `cpu_threads`.
if ('torch' not in _sys.modules and _os.environ.get('TORCHK_ADAPTIVE_THREADS', '1') != '0'
        and 'OMP_WAIT_POLICY' not in _os.environ and 'GOMP_SPINCOUNT' not in _os.environ):
    _os.environ['GOMP_SPINCOUNT'] = '30000'

_INTEROP_NAMES = ('TorchModule', 'to_torch', 'KerasModule', 'DataLoaderSequence')


def __getattr__(name):
    if name in _INTEROP_NAMES:
        from . import interop
        return getattr(interop, name)
    raise AttributeError("module 'torchk' has no attribute %r" % name)
