"""`tf.keras.datasets`: Keras 2.3.1's loaders, reading Keras' cache directory
(`~/.keras/datasets`, `KERAS_HOME`) as TF's do.

Each submodule's `load_data` downloads a file missing from the cache; where that fails
(offline), the error names the file expected in the cache and where it comes from.
"""
import functools
import importlib
import os
import sys
import types

from .._facade import reexport

_DATASETS = ('boston_housing', 'cifar10', 'cifar100', 'fashion_mnist', 'imdb', 'mnist',
             'reuters')


# tf.keras 2.15's `reuters.get_label_names()`: the 46 newswire topics, in label order.
_REUTERS_LABELS = (
    'cocoa', 'grain', 'veg-oil', 'earn', 'acq', 'wheat', 'copper', 'housing', 'money-supply',
    'coffee', 'sugar', 'trade', 'reserves', 'ship', 'cotton', 'carcass', 'crude', 'nat-gas',
    'cpi', 'money-fx', 'interest', 'gnp', 'meal-feed', 'alum', 'oilseed', 'gold', 'tin',
    'strategic-metal', 'livestock', 'retail', 'ipi', 'iron-steel', 'rubber', 'heat', 'jobs',
    'lei', 'bop', 'zinc', 'orange', 'pet-chem', 'dlr', 'gas', 'silver', 'wpi', 'hog', 'lead')


def _reuters_label_names():
    """The Reuters newswire topics, indexed by label (tf.keras' `get_label_names`)."""
    return _REUTERS_LABELS


def _cache_directory():
    home = os.environ.get('KERAS_HOME', os.path.join(os.path.expanduser('~'), '.keras'))
    return os.path.join(home, 'datasets')


def _offline_error(name, error):
    return OSError('keras.datasets.%s could not read its file from the cache directory %s '
                   'nor download it (%s). Copy the file tf.keras downloads (same name) into '
                   'that directory.' % (name, _cache_directory(), error))


def _wrap(name):
    keras_module = importlib.import_module('keras.datasets.' + name)
    module = types.ModuleType(__name__ + '.' + name, keras_module.__doc__)

    @functools.wraps(keras_module.load_data)
    def load_data(*args, **kwargs):
        try:
            return keras_module.load_data(*args, **kwargs)
        except Exception as error:
            if 'URL fetch failure' not in str(error):
                raise
            raise _offline_error(name, error) from error

    module.load_data = load_data
    for attribute in ('get_word_index',):
        if hasattr(keras_module, attribute):
            setattr(module, attribute, getattr(keras_module, attribute))
    if name == 'reuters':
        module.get_label_names = _reuters_label_names
    reexport(vars(module), None)
    sys.modules[module.__name__] = module
    return module


for _name in _DATASETS:
    globals()[_name] = _wrap(_name)

reexport(globals(), None)
