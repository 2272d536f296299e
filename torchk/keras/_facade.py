"""Re-exporting a Keras 2.3.1 module under a tf.keras name, with torchk's additions."""
import types



def reexport(namespace, keras_module, exclude=()):
    """Makes the module whose globals are `namespace` show `keras_module`'s public names.

    The module's own names come first; other public names of `keras_module` are looked up
    there when asked for (module `__getattr__`), and `__all__` lists both, so that
    `from torchk.keras.layers import *` works.

    # Arguments
        namespace: `globals()` of the facade module.
        keras_module: the Keras 2.3.1 module it stands for.
        exclude: names of `keras_module` not to show (its own imports: `K`, `np`, ...).
    """
    excluded = set(exclude) | {'K', 'np', 'six', 'absolute_import', 'division',
                               'print_function', 'warnings', 'copy', 'os', 'sys'}
    module_name = namespace['__name__']

    def __getattr__(name):
        if not name.startswith('_') and name not in excluded and hasattr(keras_module, name):
            return getattr(keras_module, name)
        raise AttributeError('module %r has no attribute %r' % (module_name, name))

    def public(names):
        return {n for n in names if not n.startswith('_') and n not in excluded}

    own = public(n for n, v in namespace.items()
                 if not isinstance(v, types.ModuleType) and n != 'reexport')
    namespace['__getattr__'] = __getattr__
    namespace['__all__'] = sorted(own | public(dir(keras_module)))
    namespace['__dir__'] = lambda: namespace['__all__']
