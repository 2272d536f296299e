"""torchk: the Keras 2 backend API on PyTorch.

`torchk.core` is the backend Keras loads (`KERAS_BACKEND=torchk.core`). The PyTorch
interoperability tools `TorchModule`, `to_torch`, `KerasModule` and `DataLoaderSequence`
(from `torchk.interop`) are importable from here too; they import Keras when first used.
"""
__version__ = '0.1.0'

_INTEROP_NAMES = ('TorchModule', 'to_torch', 'KerasModule', 'DataLoaderSequence')


def __getattr__(name):
    if name in _INTEROP_NAMES:
        from . import interop
        return getattr(interop, name)
    raise AttributeError("module 'torchk' has no attribute %r" % name)
