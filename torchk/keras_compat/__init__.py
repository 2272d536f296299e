"""Unmodified Keras 2.3.1 (and 2.2.4/2.2.5) on torchk, on Python 3.11, numpy 2, h5py 3:
`install()` (which importing `torchk.core` calls) puts an import hook on `sys.meta_path`; set
the environment variable `TORCHK_KERAS_COMPAT=0` to turn it all off. Importing torchk alone
changes nothing outside torchk.

When `keras` (or `keras_preprocessing`) is imported, or at once if it already is, the hook
restores the names Python and numpy removed that Keras uses (`environment`); as each Keras
module that the registry's `BACKEND` overrides change has run, the hook applies them
(`torchk.overrides`: every change to Keras is one declared override there). They are, by
concern:
- `environment`: Keras 2 on current Python, numpy, h5py, PyYAML and scikit-learn;
- `fixes`: Keras 2.3.1's bugs, and what Keras takes from TensorFlow alone;
- `semantics`: the tf.keras semantics that are on whenever torchk is the backend, each with
  why;
- `loops`: the loop around the step, faster;
- the registration of torchk's layers, activations, losses and metrics into `keras.layers`,
  `keras.activations`, `keras.losses` and `keras.metrics` (`register` of `torchk.layers`,
  `torchk.activations`, `torchk.losses`, `torchk.metrics`), so that `load_model` finds them;
- the save and load wiring, beside the file formats in `torchk.saving`: every Keras 2 dialect
  and format read (`h5`, `formats`, `keras_zip`, `op_layer_nodes`), saves written whole
  (`atomic_files`) and as `.keras` zips for a `.keras` path (`keras_zip_writer`), loads safe
  by default (`safe_mode`) and hostile files refused (`validation`);
- tf.keras' dtype policies (`torchk.mixed_precision`).
"""
import importlib.abc
import os
import sys

from .. import overrides
from .environment import restore_removed_names

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
        restore_removed_names()
    overrides.apply_backend(name for name in overrides.backend_modules() if name in sys.modules)


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds the modules that `BACKEND` overrides change (`torchk.overrides`) with the other
    finders, and applies the overrides once each has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname in _KERAS_PACKAGES:
            restore_removed_names()
        if fullname not in overrides.backend_modules():
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, 'find_spec'):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                spec.loader = _PatchingLoader(spec.loader, _apply_overrides)
                return spec
        return None


def _apply_overrides(module):
    overrides.apply_backend([module.__name__])


class _PatchingLoader(importlib.abc.Loader):
    """Runs a module with its own loader, then `after(module)`."""

    def __init__(self, loader, after):
        self._loader = loader
        self._after = after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._after(module)

    def __getattr__(self, name):  # get_source, get_code, is_package, ...
        return getattr(self._loader, name)
