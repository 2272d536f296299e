"""Re-exporting a Keras 2.3.1 module under a tf.keras name, with torchk's additions, and what
a tf.keras name torchk lacks raises."""
import types

from ..tf.namespaces import missing_name

# The tf.keras version the facade serves (`tf.keras.__version__`, saved in model files).
VERSION = '2.15.0'

DOCUMENT = 'docs/TF_KERAS_NAMES.md'


def tf_keras_path(module_name):
    """`'tf.keras.layers'` for the facade module `'torchk.keras.layers'`."""
    return 'tf.' + module_name[len('torchk.'):]


def missing(path):
    """The AttributeError for the tf.keras name `path` (`'tf.keras.layers.X'`), which torchk
    does not provide."""
    return AttributeError(
        '%s: torchk does not provide it. torchk.keras implements tf.keras 2.15\'s API over '
        'Keras 2.3.1 and torchk\'s layers; %s lists the tf.keras names it lacks.'
        % (path, DOCUMENT))


def reexport(namespace, keras_module, exclude=()):
    """Makes the module whose globals are `namespace` show `keras_module`'s public names.

    The module's own names come first; other public names of `keras_module` are looked up
    there when asked for (module `__getattr__`), and `__all__` lists both, so that
    `from torchk.keras.layers import *` works. Any other name raises `missing`'s
    AttributeError (an ImportError with its message for `from ... import`).

    # Arguments
        namespace: `globals()` of the facade module.
        keras_module: the Keras 2.3.1 module it stands for, or None (the module's own names
            only).
        exclude: names of `keras_module` not to show (its own imports: `K`, `np`, ...).
    """
    excluded = set(exclude) | {'K', 'np', 'six', 'absolute_import', 'division',
                               'print_function', 'warnings', 'copy', 'os', 'sys'}
    module_name = namespace['__name__']

    def __getattr__(name):
        if name.startswith('__'):
            raise AttributeError(name)
        if not name.startswith('_') and name not in excluded and hasattr(keras_module, name):
            return getattr(keras_module, name)
        raise missing_name(missing('%s.%s' % (tf_keras_path(module_name), name)))

    def public(names):
        return {n for n in names if not n.startswith('_') and n not in excluded}

    own = public(n for n, v in namespace.items()
                 if not isinstance(v, types.ModuleType) and n != 'reexport')
    namespace['__getattr__'] = __getattr__
    namespace['__all__'] = sorted(own | public(dir(keras_module) if keras_module else ()))
    namespace['__dir__'] = lambda: namespace['__all__']


# tf.keras 2.15's top-level namespaces that Keras 2.3.1's `keras` package lacks.
TF_KERAS_ONLY_NAMESPACES = ('experimental', 'mixed_precision', 'saving')


def tf_keras_namespaces_on_keras(keras_module):
    """Gives Keras 2.3.1's `keras` package the namespaces only tf.keras 2.15 has at its top
    (`keras.saving.register_keras_serializable`, as `import keras` of TF 2.13-2.15 scripts
    reads them), served by the facade; its own names are unchanged."""
    def __getattr__(name):
        if name in TF_KERAS_ONLY_NAMESPACES:
            import importlib
            return importlib.import_module('torchk.keras.' + name)
        raise AttributeError("module 'keras' has no attribute %r" % name)
    keras_module.__getattr__ = __getattr__
