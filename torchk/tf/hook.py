"""The import hook that serves TensorFlow's module names from torchk.

Installed (`install_import_hook`), a `sys.meta_path` finder answers, before any other:
- `tensorflow` and `tensorflow.X` with `torchk.tf` and `torchk.tf.X`;
- `tensorflow.keras`, `tensorflow.keras.X`, `tf_keras` and `tf_keras.X` with `torchk.keras`
  and `torchk.keras.X`, the tf.keras facade.
The module object is torchk's own (`import tensorflow as tf; tf is torchk.tf`). A name torchk
does not provide raises `ModuleNotFoundError` naming it and pointing at docs/TF_SUBSET.md.
Installing sets `KERAS_BACKEND=torchk.core`, so Keras, imported later, runs on torchk,
tells TensorBoard that TF is absent, and makes torch tensors behave as TF's eager tensors
where scripts rely on it: numpy's functions and operators take them (`numpy_interop`), and
their `device` is TF's device name outside torch and torchk, and their slices step
backwards (`eager_tensors`). Other libraries that probe for TensorFlow by importing
it get torchk.tf.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys
import types

from . import eager_tensors, numpy_interop
from .namespaces import DOCUMENT, Namespace

_TENSORBOARD_NO_TF = 'tensorboard.compat.notf'
_PREFIXES = (('tensorflow.keras', 'torchk.keras'), ('tf_keras', 'torchk.keras'),
             ('tensorflow', 'torchk.tf'))


def target_name(fullname):
    """The torchk module serving `fullname`, or None if the hook leaves it alone."""
    for prefix, target in _PREFIXES:
        if fullname == prefix or fullname.startswith(prefix + '.'):
            return target + fullname[len(prefix):]
    return None


def import_served(fullname, target):
    """Imports `target`, the torchk module (or `torchk.tf` namespace) serving `fullname`.

    # Raises
        ModuleNotFoundError: naming `fullname` and `target`, if `target` does not exist.
    """
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name is None or not (target == error.name
                                      or target.startswith(error.name + '.')):
            raise
        parent, _, attribute = target.rpartition('.')
        namespace = getattr(sys.modules.get(parent), attribute, None)
        if isinstance(namespace, types.ModuleType):
            return namespace
        raise ModuleNotFoundError(
            'No module named %r: torchk serves it with %r, which does not exist. torchk.tf '
            'provides the part of TensorFlow that tf.keras 2 scripts use; %s lists it.'
            % (fullname, target, DOCUMENT), name=fullname) from error


def _register_namespaces(fullname, module):
    """Puts the `Namespace`s held by `module` (served as `fullname`) into sys.modules under
    their served names, so that `import tensorflow.experimental.numpy` finds a namespace
    inside a namespace (which is no package the import system could search)."""
    for name, value in list(vars(module).items()):
        if isinstance(value, Namespace) and not name.startswith('_'):
            served = '%s.%s' % (fullname, name)
            if sys.modules.setdefault(served, value) is value:
                _register_namespaces(served, value)


class _AliasLoader(importlib.abc.Loader):
    """Loads a name by importing the torchk module that serves it."""

    def __init__(self, fullname, target):
        self.fullname = fullname
        self.target = target

    def create_module(self, spec):
        module = import_served(self.fullname, self.target)
        _register_namespaces(self.fullname, module)
        return module

    def exec_module(self, module):
        """Nothing to run: the torchk module ran when imported."""


class TorchkFinder(importlib.abc.MetaPathFinder):
    """The `sys.meta_path` finder serving TensorFlow's names from torchk (see module doc)."""

    def find_spec(self, fullname, path=None, target=None):
        served = target_name(fullname)
        if served is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(fullname, served))


def install_import_hook():
    """Serves `tensorflow`, `tensorflow.keras` and `tf_keras` from torchk in this process
    (idempotent), and sets `KERAS_BACKEND=torchk.core`.

    # Returns
        The installed `TorchkFinder`.

    # Raises
        RuntimeError: if TensorFlow or Keras on another backend is already imported.
    """
    for name in ('tensorflow', 'tf_keras'):
        module = sys.modules.get(name)
        if module is not None and not module.__name__.startswith('torchk.'):
            raise RuntimeError('Cannot serve %r from torchk: the real %s is already imported.'
                               % (name, name))
    backend = sys.modules.get('keras.backend')
    if backend is not None and getattr(backend, 'backend', lambda: None)() != 'torchk.core':
        raise RuntimeError('Cannot run tf.keras code on torchk: Keras is already imported '
                           'with the %r backend.' % backend.backend())
    os.environ['KERAS_BACKEND'] = 'torchk.core'
    # TensorBoard (which torch's SummaryWriter uses) takes `import tensorflow` to mean the
    # real TF unless `tensorboard.compat.notf` imports: that module makes it use its stub.
    sys.modules.setdefault(_TENSORBOARD_NO_TF, types.ModuleType(_TENSORBOARD_NO_TF))
    numpy_interop.install()
    eager_tensors.install()
    for finder in sys.meta_path:
        if isinstance(finder, TorchkFinder):
            return finder
    finder = TorchkFinder()
    sys.meta_path.insert(0, finder)
    return finder


def uninstall_import_hook():
    """Removes the finder (modules already imported stay in `sys.modules`), numpy's
    functions and operators on torch tensors, TF's device names and backward slices."""
    numpy_interop.uninstall()
    eager_tensors.uninstall()
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchkFinder)]
