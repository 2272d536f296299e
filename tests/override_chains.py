"""What torchk changes in Keras 2.3.1, observed: run as a script in a fresh process, it prints
(JSON) every attribute of a Keras module or class that differs from what the module's own code
made, each with its chain of wrappers, outermost first.

    python tests/override_chains.py backend   # `import keras` on the torchk backend
    python tests/override_chains.py facade    # and `import torchk.keras`

The original of each attribute is its value when its module finished running: a finder placed
on `sys.meta_path` before torchk is imported records each `keras.*` module's namespace, and the
namespaces of the classes it defines, as the module's own loader finishes, before torchk's
import hook patches it. `keras.backend` is patched while it imports (torchk is the backend it
is loading), so there the attributes Keras' code does not import from the backend are the
changes. A wrapper is followed to what it wraps through `__wrapped__` and its closure, up to
the original; each step is named `file:qualified name` of its code (the file relative to
torchk's or Keras' package directory), so that a name says where the wrapper is defined.
Attributes named `_torchk...` or `__torchk...` (markers against a second install) are left
out.
"""
import ast
import importlib.abc
import importlib.machinery
import json
import os
import pathlib
import sys
import types

from torchk.keras_compat import _PatchingLoader

# The Keras modules with something patched that `import keras` does not import.
MODULES = ('keras.wrappers.scikit_learn', 'keras.utils.multi_gpu_utils')
# torchk's own classes and modules that the tf.keras facade changes.
TORCHK_TARGETS = ('torchk.graph.KerasTensor._keras_mask', 'torchk.variables.Variable.assign',
                  'torchk.variables.Variable.assign_add', 'torchk.variables.Variable.assign_sub',
                  'torchk.variables.Variable.get_shape', 'torchk.tf.namespaces.eager') + tuple(
    'torchk.graph.KerasTensor.' + name for name in (
        '__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__', '__truediv__',
        '__rtruediv__', '__floordiv__', '__rfloordiv__', '__mod__', '__rmod__', '__pow__',
        '__rpow__', '__matmul__', '__rmatmul__', '__and__', '__rand__', '__or__', '__ror__',
        '__xor__', '__rxor__', '__lt__', '__le__', '__gt__', '__ge__', '__neg__', '__abs__',
        '__invert__', '__getitem__'))
_snapshots = {}


class _Snapshots(importlib.abc.MetaPathFinder):
    """Finds `keras.*` modules as the path finder does; records their namespaces once run."""

    def find_spec(self, fullname, path, target=None):
        if fullname.split('.')[0] != 'keras':
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None:
            spec.loader = _PatchingLoader(spec.loader, _record)
        return spec


def _record(module):
    _snapshots[module.__name__] = (dict(vars(module)), {
        name: dict(vars(value)) for name, value in vars(module).items()
        if isinstance(value, type) and value.__module__ == module.__name__})


def _home(filename):
    """`filename` relative to the torchk or keras package directory that holds it."""
    path = pathlib.Path(filename).resolve()
    for package in ('torchk', 'keras'):
        root = pathlib.Path(sys.modules[package].__file__).resolve().parent.parent
        if root in path.parents and path.relative_to(root).parts[0] == package:
            return str(path.relative_to(root))
    return str(path)


def _unwrap(value):
    """The function inside a descriptor, or the value."""
    if isinstance(value, (classmethod, staticmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    if isinstance(value, types.MethodType):
        return value.__func__
    return value


def name_of(value):
    """Where `value` is defined (`file:qualified name`), or its repr for data."""
    kind = ('classmethod ' if isinstance(value, classmethod) else
            'property ' if isinstance(value, property) else '')
    value = _unwrap(value)
    if isinstance(value, types.FunctionType):
        return kind + '%s:%s' % (_home(value.__code__.co_filename), value.__code__.co_qualname)
    if isinstance(value, type):
        return '%s.%s' % (value.__module__, value.__qualname__)
    if isinstance(value, types.ModuleType):
        return 'module ' + value.__name__
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    return 'instance of %s.%s' % (type(value).__module__, type(value).__qualname__)


def _inner(value):
    """The callables a wrapper holds: what it wraps, first."""
    function = _unwrap(value)
    inner = []
    if hasattr(function, '__wrapped__'):
        inner.append(function.__wrapped__)
    for cell in getattr(function, '__closure__', None) or ():
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(held, (types.FunctionType, classmethod, staticmethod, property,
                             types.MethodType)):
            inner.append(held)
    return inner


def _path(value, original, depth=0):
    """The wrappers from `value` down to `original` (both included), or None."""
    if value is original or _unwrap(value) is _unwrap(original):
        return [value]
    if depth == 8:
        return None
    for held in _inner(value):
        found = _path(held, original, depth + 1)
        if found is not None:
            return [value] + found
    return None


def chain(value, original, existed):
    """The chain of `value` at an attribute whose original was `original` (`existed`)."""
    if not existed:
        return [name_of(value), '(added)']
    found = _path(value, original)
    if found is None:
        names = [name_of(value)]
        while hasattr(_unwrap(value), '__wrapped__'):
            value = _unwrap(value).__wrapped__
            names.append(name_of(value))
        return names + ['(replaces %s)' % name_of(original)]
    return [name_of(v) for v in found[:-1]] + ['<keras %s>' % name_of(original)]


def _keras_backend_imports():
    """The names `keras/backend/__init__.py` imports from the backend whatever it is."""
    source = pathlib.Path(sys.modules['keras.backend'].__file__).read_text()
    return {alias.asname or alias.name for node in ast.parse(source).body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def _same(original, value):
    """True if `value` is `original`, or equal data (`keras.backend.common._FLOATX` is set
    again to its value by torchk's configuration)."""
    if original is value:
        return True
    data = (bool, int, float, str, type(None))
    return isinstance(original, data) and isinstance(value, data) and original == value


def _is_marker(name):
    return name.startswith(('_torchk', '__torchk'))


def changes():
    """{target: chain} for every changed attribute of the Keras modules loaded."""
    found = {}
    for module_name, (namespace, classes) in sorted(_snapshots.items()):
        module = sys.modules[module_name]
        current = vars(module)
        for name, value in current.items():
            if _is_marker(name) or isinstance(value, types.ModuleType):
                continue
            existed = name in namespace
            if existed and _same(namespace[name], value):
                continue
            found['%s.%s' % (module_name, name)] = chain(value, namespace.get(name), existed)
        for class_name, class_namespace in classes.items():
            cls = namespace[class_name]
            for name, value in vars(cls).items():
                if _is_marker(name):
                    continue
                existed = name in class_namespace
                if existed and _same(class_namespace[name], value):
                    continue
                found['%s.%s.%s' % (module_name, class_name, name)] = chain(
                    value, class_namespace.get(name), existed)
    backend = sys.modules['keras.backend']
    keras_imports = _keras_backend_imports()
    for name, value in vars(backend).items():
        function = _unwrap(value)
        if (name not in keras_imports and isinstance(function, types.FunctionType)
                and _home(function.__code__.co_filename).startswith('torchk/')):
            found['keras.backend.%s' % name] = chain(value, None, False)
    from keras.utils import generic_utils
    for name, value in generic_utils.get_custom_objects().items():
        found['keras.utils.generic_utils._GLOBAL_CUSTOM_OBJECTS[%r]' % name] = [
            name_of(value), '(added)']
    return found


def torchk_changes():
    """{target: the name of its value} for `TORCHK_TARGETS`."""
    found = {}
    for target in TORCHK_TARGETS:
        owner = sys.modules['torchk']
        parts = target.split('.')[1:]
        for part in parts[:-1]:
            owner = getattr(owner, part)
        value = vars(owner).get(parts[-1]) if isinstance(owner, type) else getattr(
            owner, parts[-1], None)
        found[target] = name_of(value)
    return found


def main(scenario):
    sys.meta_path.insert(0, _Snapshots())
    os.environ['KERAS_BACKEND'] = 'torchk.core'
    import keras  # noqa: F401
    for name in MODULES:
        importlib.import_module(name)
    import torchk.graph  # noqa: F401
    import torchk.tf.namespaces  # noqa: F401
    import torchk.variables  # noqa: F401
    if scenario == 'facade':
        import torchk.keras  # noqa: F401
    elif scenario != 'backend':
        raise ValueError("scenario: 'backend' or 'facade', not %r" % (scenario,))
    json.dump({'keras': changes(), 'torchk': torchk_changes()}, sys.stdout, indent=1,
              sort_keys=True)


if __name__ == '__main__':
    main(sys.argv[1])
