"""tf.keras' registration of custom objects for deserialization, over Keras 2.3.1's custom
objects (`get_custom_objects()`, which `custom_object_scope` and every loader read)."""
import inspect

from keras.utils.generic_utils import get_custom_objects

# {registered object: its registered name}, the inverse of the registration.
_REGISTERED_NAMES = {}


def register_keras_serializable(package='Custom', name=None):
    """A decorator registering a class or function as `'<package>><name>'` (the name
    tf.keras writes in saved configurations) and under its own name (the name Keras 2.3.1
    writes), so that models using it load without `custom_objects`.

    # Arguments
        package: the package part of the registered name.
        name: the name part (default: the object's `__name__`).

    # Raises
        ValueError: for a class without `get_config`, or a name or object registered
            already.
    """
    def decorator(arg):
        class_name = name if name is not None else arg.__name__
        registered_name = package + '>' + class_name
        if inspect.isclass(arg) and not hasattr(arg, 'get_config'):
            raise ValueError('Cannot register a class that does not have a get_config() '
                             'method.')
        objects = get_custom_objects()
        if registered_name in objects:
            raise ValueError('%s has already been registered to %s'
                             % (registered_name, objects[registered_name]))
        if arg in _REGISTERED_NAMES:
            raise ValueError('%s has already been registered to %s'
                             % (arg, _REGISTERED_NAMES[arg]))
        objects[registered_name] = arg
        objects.setdefault(class_name, arg)
        _REGISTERED_NAMES[arg] = registered_name
        return arg
    return decorator


def get_registered_name(obj):
    """The name `obj` was registered under, else its `__name__`."""
    return _REGISTERED_NAMES.get(obj, obj.__name__)


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object registered (or in the current `custom_object_scope`) as `name`, else the
    one in `custom_objects`, else in `module_objects`; None if none has it."""
    for objects in (get_custom_objects(), custom_objects, module_objects):
        if objects and name in objects:
            return objects[name]
    return None
