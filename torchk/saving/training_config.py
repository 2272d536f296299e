"""The training configuration of a model file of any Keras 2 dialect, as the arguments of
Keras 2.3.1's `model.compile`: a `.keras` zip's `compile_config` (tf.keras 2.13+), the
optimizer configuration (`OPTIMIZER_KEY_RULES`, each with the tf.keras version that introduced
what it translates; loss scale optimizers are their inner optimizer), losses and metrics.
"""
import re
import warnings

from .dialects import ALL_LAYERS, DROP

# The keys of a `.keras` zip's `compile_config` (tf.keras 2.13+, "saving v3") as the keys of
# the training configuration of an HDF5 file; keys absent here do not change the training.
COMPILE_CONFIG_KEYS = {
    'optimizer': 'optimizer_config',
    'loss': 'loss',
    'metrics': 'metrics',
    'weighted_metrics': 'weighted_metrics',
    'loss_weights': 'loss_weights',
}


def training_config_from_compile_config(compile_config):
    """A `.keras` zip's `compile_config` as the `training_config` that `compile_arguments`
    reads: the optimizer saved as an object or by name, the other keys renamed."""
    training_config = {new: compile_config.get(old) for old, new in COMPILE_CONFIG_KEYS.items()}
    optimizer = training_config['optimizer_config']
    if isinstance(optimizer, str):
        training_config['optimizer_config'] = {'class_name': optimizer, 'config': {}}
    return training_config


# Optimizer wrappers whose training is their inner optimizer's (with the version that
# introduced each name): dynamic loss scaling skips no step of a float32 model.
LOSS_SCALE_OPTIMIZERS = {
    'LossScaleOptimizer': '2.4',
    'LossScaleOptimizerV3': '2.11',
}


def _inner_optimizer(config):
    """The optimizer configuration that a loss scale optimizer's configuration wraps."""
    while config.get('class_name', '').split('>')[-1] in LOSS_SCALE_OPTIMIZERS:
        options = config.get('config', {})
        config = options.get('inner_optimizer') or options.get('optimizer')
        if not isinstance(config, dict):
            raise ValueError('The saved loss scale optimizer has no inner optimizer (%r).'
                             % (options,))
    return config


# The tf.keras optimizer settings that Keras 2.3.1's optimizers lack and torchk.keras'
# compute.
_FACADE_COMPUTES = ('weight_decay', 'momentum', 'centered', 'global_clipnorm')


def _optimizer_drop_if(*defaults):
    def action(value, name, key):
        if value in defaults:
            return DROP
        raise ValueError('The saved %s optimizer has %s=%r, which Keras 2.3.1 optimizers do '
                         'not compute; load the model %swith compile=False and compile it with '
                         'a Keras optimizer.' % (
                             name, key, value,
                             'with torchk.keras.models.load_model, whose tf.keras optimizers '
                             'compute it, or ' if key in _FACADE_COMPUTES else ''))
    return action


def _learning_rate(value, name, key):
    if isinstance(value, dict):
        raise ValueError('The saved %s optimizer has the learning rate schedule %s, which '
                         'Keras 2.3.1 optimizers do not take; load the model with '
                         'torchk.keras.models.load_model, whose tf.keras optimizers take it, '
                         'or with compile=False, compile it with a Keras optimizer and '
                         'schedule the rate with keras.callbacks.LearningRateScheduler.'
                         % (name, value.get('class_name')))
    return value


def _warn_initial_accumulator(value, name, key):
    if value:
        warnings.warn('The saved %s optimizer has %s=%r; Keras 2.3.1 starts its accumulators '
                      'at 0 (torchk.keras.models.load_model keeps it). The saved accumulators '
                      'are restored if the file has them.'
                      % (name, key, value))
    return DROP


def _drop(value, name, key):
    return DROP


def _epsilon_inside_the_root(value, name, key):
    warnings.warn('tf.keras\' %s divides by sqrt(accumulator + epsilon), Keras 2.3.1\'s by '
                  'sqrt(accumulator) + epsilon: training steps differ where accumulators are '
                  'near epsilon=%r (the loaded model predicts the same).' % (name, value))
    return value


# (optimizer class names, key, tf.keras version that introduced the key, action)
OPTIMIZER_KEY_RULES = [
    (ALL_LAYERS, 'name', '2.0', _drop),
    (ALL_LAYERS, 'learning_rate', '2.0', _learning_rate),
    (ALL_LAYERS, 'clipnorm', '2.0', lambda value, name, key: DROP if value is None else value),
    (ALL_LAYERS, 'clipvalue', '2.0', lambda value, name, key: DROP if value is None else value),
    (ALL_LAYERS, 'global_clipnorm', '2.4', _optimizer_drop_if(None)),
    (ALL_LAYERS, 'weight_decay', '2.11', _optimizer_drop_if(None, 0, 0.0)),
    (ALL_LAYERS, 'use_ema', '2.11', _optimizer_drop_if(False)),
    (ALL_LAYERS, 'ema_momentum', '2.11', _drop),
    (ALL_LAYERS, 'ema_overwrite_frequency', '2.11', _drop),
    (ALL_LAYERS, 'jit_compile', '2.11', _drop),
    (ALL_LAYERS, 'is_legacy_optimizer', '2.11', _drop),
    (('RMSprop',), 'momentum', '2.0', _optimizer_drop_if(0, 0.0)),
    (('RMSprop',), 'centered', '2.0', _optimizer_drop_if(False)),
    (('Adagrad',), 'initial_accumulator_value', '2.0', _warn_initial_accumulator),
    (('RMSprop', 'Adagrad'), 'epsilon', '2.0', _epsilon_inside_the_root),
]

_KERAS_OPTIMIZERS = ('SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'Adam', 'Adamax', 'Nadam')
# An optimizer compiled by name ('adam') keeps the name in a `.keras` zip's compile_config.
_OPTIMIZER_NAMES = {name.lower(): name for name in _KERAS_OPTIMIZERS}


def translate_optimizer_config(config):
    """A saved optimizer configuration (tf.keras 2.0-2.15 legacy or v2, tf_keras) as Keras
    2.3.1's `{'class_name', 'config'}`, with the same hyper-parameters.

    # Raises
        ValueError: for an optimizer Keras 2.3.1 lacks, or a setting that changes its maths
            (`weight_decay`, `use_ema`, `global_clipnorm`, a learning rate schedule, ...).
    """
    config = _inner_optimizer(config)
    class_name = config['class_name'].split('>')[-1]  # tf_keras: 'Custom>Adam'
    class_name = _OPTIMIZER_NAMES.get(class_name.lower(), class_name)
    if class_name not in _KERAS_OPTIMIZERS:
        raise ValueError('The saved optimizer %s has no Keras 2.3.1 equivalent (there are %s); '
                         'load the model with compile=False and compile it with a Keras '
                         'optimizer%s.' % (class_name, ', '.join(_KERAS_OPTIMIZERS),
                                           ', or with torchk.keras.models.load_model, whose '
                                           'AdamW computes it' if class_name == 'AdamW' else ''))
    options = dict(config.get('config', {}))
    for classes, key, _, action in OPTIMIZER_KEY_RULES:
        if key in options and (classes == ALL_LAYERS or class_name in classes):
            value = action(options[key], class_name, key)
            if value is DROP:
                del options[key]
            else:
                options[key] = value
    rate_key = _learning_rate_key()
    for key in ('lr', 'learning_rate'):
        if key in options and key != rate_key:
            options[rate_key] = options.pop(key)
    return {'class_name': class_name, 'config': options}


def _learning_rate_key():
    """The learning rate's argument name in the installed Keras' optimizers: `lr` before
    2.3.0 (2.2.4, 2.2.5), `learning_rate` since."""
    import keras
    release = tuple(int(n) for n in re.findall(r'\d+', keras.__version__)[:2])
    return 'lr' if release < (2, 3) else 'learning_rate'


# tf.keras' loss classes' keys that Keras 2.3.1's loss classes lack (version introduced).
_LOSS_KEY_RULES = [
    ('ignore_class', '2.10', (None,)),
    ('axis', '2.6', (-1,)),
    ('fn', '2.0', None),
]
_REDUCTIONS = {'auto': 'sum_over_batch_size'}


def _translate_loss(loss):
    if isinstance(loss, list):
        return [_translate_loss(item) for item in loss]
    if isinstance(loss, dict) and 'class_name' not in loss:
        return {output: _translate_loss(item) for output, item in loss.items()}
    if not isinstance(loss, dict):
        return loss
    config = dict(loss.get('config', {}))
    for key, _, defaults in _LOSS_KEY_RULES:
        if key in config:
            value = config.pop(key)
            if defaults is not None and value not in defaults:
                raise ValueError('The saved loss %s has %s=%r, which Keras 2.3.1\'s loss '
                                 'does not compute.' % (loss['class_name'], key, value))
    if 'reduction' in config:
        config['reduction'] = _REDUCTIONS.get(config['reduction'], config['reduction'])
    import keras
    if not hasattr(keras.losses, 'Loss'):
        return _loss_function(loss['class_name'], loss.get('config', {}), config)
    return {'class_name': loss['class_name'], 'config': config}


# Loss classes whose function's name is not the class name in snake case.
_LOSS_FUNCTIONS = {'KLDivergence': 'kullback_leibler_divergence', 'LogCosh': 'logcosh'}
# The loss classes' arguments that Keras 2.2's loss functions compute, at these values.
_LOSS_FUNCTION_DEFAULTS = {'reduction': ('sum_over_batch_size',), 'from_logits': (False,),
                           'label_smoothing': (0, 0.0)}


_FROM_LOGITS = ('binary_crossentropy', 'categorical_crossentropy',
                'sparse_categorical_crossentropy')


def _loss_from_logits(name):
    """Keras 2.2's loss function `name` (a crossentropy) on logits, by the backend's
    `from_logits`; named as the function, with `_from_logits`."""
    from keras import backend as K
    backend_function = getattr(K, name)

    def loss(y_true, y_pred):
        result = backend_function(y_true, y_pred, from_logits=True)
        return K.mean(result, axis=-1) if name == 'binary_crossentropy' else result
    loss.__name__ = name + '_from_logits'
    return loss


def _loss_function(class_name, saved_config, config):
    """The Keras 2.2 loss function (2.2.4, 2.2.5 have no loss classes), by name or as a
    function, that computes the saved loss object `class_name` with `config`."""
    import keras
    name = saved_config.get('fn') or _LOSS_FUNCTIONS.get(class_name) or re.sub(
        r'(?<!^)(?=[A-Z])', '_', class_name).lower()
    if config.get('from_logits') and name in _FROM_LOGITS:
        return _loss_from_logits(name)
    for key, value in config.items():
        if key != 'name' and value not in _LOSS_FUNCTION_DEFAULTS.get(key, ()):
            raise ValueError('The saved loss %s has %s=%r; Keras %s has loss functions only, '
                             'which do not take it. Load the model with compile=False and '
                             'compile it with a loss function.'
                             % (class_name, key, value, keras.__version__))
    if not hasattr(keras.losses, name):
        raise ValueError('The saved loss %s has no loss function in Keras %s; load the model '
                         'with compile=False and compile it with a loss function.'
                         % (class_name, keras.__version__))
    return name


def _translate_metric(metric, output_name=None):
    """A metric as Keras 2.3.1's `compile` takes it: a function's name (tf.keras saves them
    as `MeanMetricWrapper` objects named `<output>_<name>`; 'accuracy' stays 'accuracy', which
    Keras resolves from the loss as tf.keras does) or a Keras metric object."""
    if isinstance(metric, list):
        return [_translate_metric(item, output_name) for item in metric]
    if not isinstance(metric, dict):
        return metric
    if 'class_name' not in metric:
        return {output: _translate_metric(item, output) for output, item in metric.items()}
    config = metric.get('config', {})
    if metric['class_name'] == 'MeanMetricWrapper':
        name = config.get('name', '')
        if output_name and name.startswith(output_name + '_'):
            name = name[len(output_name) + 1:]
        if name in ('accuracy', 'acc'):
            return name
        return config.get('fn', name)
    from keras import metrics
    return metrics.deserialize({'class_name': metric['class_name'], 'config': dict(config)})


def _per_output(values, output_names):
    """tf.keras 2.2+ saves metrics as one list per output; Keras 2.3.1 takes a dict."""
    if (isinstance(values, list) and values and len(values) == len(output_names)
            and all(isinstance(v, list) for v in values)):
        return dict(zip(output_names, values))
    return values


def compile_arguments(training_config, model, custom_objects=None):
    """The arguments of `model.compile` that a saved training configuration asks for.

    # Arguments
        training_config: the decoded `training_config` of a model file.
        model: the loaded model (for its output names).
        custom_objects: as given to `load_model`.

    # Returns
        A dict of keyword arguments for `model.compile`.
    """
    from keras import losses, optimizers
    custom_objects = custom_objects or {}

    def custom(value):
        if isinstance(value, list):
            return [custom(v) for v in value]
        if isinstance(value, dict):
            return {k: custom(v) for k, v in value.items()}
        if isinstance(value, str) and value in custom_objects:
            return custom_objects[value]
        return value

    optimizer = _saved_optimizer(training_config['optimizer_config'], custom_objects)
    loss = _translate_loss(training_config['loss'])
    if isinstance(loss, dict) and 'class_name' in loss:
        loss = losses.get(loss)
    elif isinstance(loss, (list, dict)):
        loss = _map_values(loss, lambda v: losses.get(v) if isinstance(v, dict) else v)
    metrics, weighted = (
        _translate_metric(_per_output(training_config.get(key), model.output_names))
        for key in ('metrics', 'weighted_metrics'))
    return dict(optimizer=optimizer, loss=custom(loss), metrics=custom(metrics),
                weighted_metrics=custom(weighted),
                loss_weights=training_config.get('loss_weights'),
                sample_weight_mode=training_config.get('sample_weight_mode'))


def _saved_optimizer(config, custom_objects):
    """The optimizer a saved configuration describes: made by its class from tf.keras'
    configuration where `custom_objects` gives a class that reads them (torchk.keras'
    optimizers: `reads_tf_keras_config`), else Keras 2.3.1's (`translate_optimizer_config`)."""
    from keras import optimizers
    inner = _inner_optimizer(config)
    class_name = inner['class_name'].split('>')[-1]
    cls = custom_objects.get(class_name, custom_objects.get(class_name.lower()))
    if getattr(cls, 'reads_tf_keras_config', False):
        return cls.from_config(inner.get('config', {}))
    return optimizers.deserialize(translate_optimizer_config(config),
                                  custom_objects=custom_objects)


def _map_values(values, function):
    if isinstance(values, dict):
        return {k: function(v) for k, v in values.items()}
    return [function(v) for v in values]
