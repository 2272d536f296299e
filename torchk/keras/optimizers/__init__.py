"""`tf.keras.optimizers`: Keras 2.3.1's optimizers with tf.keras 2's arguments and methods.

Each class is Keras 2.3.1's (same update rules, same saved configuration), taking in
addition:
- tf.keras' defaults and arguments: `learning_rate` (or the `lr` alias), `name`,
  `epsilon=1e-7`, a `schedules.LearningRateSchedule` as the learning rate;
- `clipnorm` per gradient tensor and `global_clipnorm` over all of them, as tf.keras clips
  (Keras 2.3.1's `clipnorm` was the global norm), and `clipvalue`;
- `apply_gradients(zip(grads, variables))` and `minimize(loss, var_list, tape=None)` for
  eager training (`train_step`, `GradientTape` loops): the update is compiled once per list
  of variables and run on the given gradients.
"""
import importlib

import numpy as np
import torch

from keras import backend as K
from keras import optimizers as keras_optimizers

from .. import eager
from . import schedules

__all__ = ['Optimizer', 'SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'Adam', 'Adamax', 'Nadam',
           'schedules', 'legacy', 'serialize', 'deserialize', 'get']


class Optimizer(keras_optimizers.Optimizer):
    """The base of tf.keras' optimizers: the tf.keras arguments and eager methods on top of
    a Keras 2.3.1 optimizer class (see the module docstring)."""

    def __init__(self, learning_rate, name=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, **kwargs):
        schedule = learning_rate if callable(learning_rate) else None
        if schedule is not None:
            learning_rate = float(K.eval(schedule(K.constant(0, dtype='int64'))))
        super(Optimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.schedule = schedule
        self.name = name or type(self).__name__
        if clipnorm is not None:
            self.clipnorm = clipnorm
        if clipvalue is not None:
            self.clipvalue = clipvalue
        if global_clipnorm is not None:
            self.global_clipnorm = global_clipnorm
        self._torchk_given_gradients = None
        self._torchk_steps = {}

    def get_gradients(self, loss, params):
        """The gradients of `loss` (or those given to `apply_gradients`), clipped as tf.keras
        clips them."""
        grads = self._torchk_given_gradients
        if grads is None:
            grads = K.gradients(loss, params)
            missing = [p.name for p, g in zip(params, grads) if g is None]
            if missing:
                raise ValueError('No gradient for variable(s) %s: the loss does not depend on '
                                 'them (an operation without gradient, or unused weights).'
                                 % missing)
        clipnorm = getattr(self, 'clipnorm', None)
        if clipnorm:
            grads = [keras_optimizers.clip_norm(g, clipnorm, K.sqrt(K.sum(K.square(g))))
                     for g in grads]
        global_clipnorm = getattr(self, 'global_clipnorm', None)
        if global_clipnorm:
            norm = K.sqrt(sum(K.sum(K.square(g)) for g in grads))
            grads = [keras_optimizers.clip_norm(g, global_clipnorm, norm) for g in grads]
        clipvalue = getattr(self, 'clipvalue', None)
        if clipvalue:
            grads = [K.clip(g, -clipvalue, clipvalue) for g in grads]
        return grads

    def get_updates(self, loss, params):
        if self.schedule is None:
            return super(Optimizer, self).get_updates(loss, params)
        variable = self.learning_rate
        self.learning_rate = self.schedule(self.iterations)
        try:
            return super(Optimizer, self).get_updates(loss, params)
        finally:
            self.learning_rate = variable

    def apply_gradients(self, grads_and_vars, name=None, **kwargs):
        """Applies gradients to variables, eagerly.

        # Arguments
            grads_and_vars: (gradient, variable) pairs; pairs whose gradient is None are
                left out, as tf.keras does.

        # Returns
            The optimizer's step count (a tensor).

        # Raises
            ValueError: if no pair has a gradient.
        """
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError('apply_gradients got no gradient for any of its variables.')
        variables = [v for _, v in pairs]
        key = tuple(id(v) for v in variables)
        if key not in self._torchk_steps:
            self._torchk_steps[key] = self._compile_step(variables)
        grads = [g.detach() if isinstance(g, torch.Tensor) else np.asarray(g)
                 for g, _ in pairs]
        with torch.no_grad():
            self._torchk_steps[key](grads)
        return self.iterations

    def _compile_step(self, variables):
        placeholders = [K.placeholder(shape=K.int_shape(v), dtype=K.dtype(v))
                        for v in variables]
        self._torchk_given_gradients = placeholders
        try:
            updates = self.get_updates(None, variables)
        finally:
            self._torchk_given_gradients = None
        return eager.Program(placeholders, [], [], updates)

    def minimize(self, loss, var_list, tape=None, grad_loss=None, name=None):
        """Computes the gradients of `loss` and applies them.

        # Arguments
            loss: a scalar tensor (with `tape`, the `GradientTape` that recorded it) or a
                function of no arguments returning one.
            var_list: the variables, or a function returning them.
            tape: the `tf.GradientTape` that recorded `loss`.

        # Returns
            The optimizer's step count.
        """
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        if tape is not None:
            grads = tape.gradient(loss, var_list)
        else:
            with torch.enable_grad():
                value = loss() if callable(loss) else loss
                grads = torch.autograd.grad(value, var_list, grad_outputs=grad_loss,
                                            allow_unused=True)
        return self.apply_gradients(zip(grads, var_list))

    @property
    def lr(self):
        return self.learning_rate

    def get_config(self):
        config = super(Optimizer, self).get_config()
        if self.schedule is not None:
            config['learning_rate'] = schedules.serialize(self.schedule)
        if getattr(self, 'global_clipnorm', None):
            config['global_clipnorm'] = self.global_clipnorm
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get('learning_rate'), dict):
            config['learning_rate'] = schedules.deserialize(config['learning_rate'],
                                                            custom_objects)
        return cls(**config)


def _tf_optimizer(keras_class, defaults, refused=()):
    """A tf.keras optimizer class over `keras_class`, with tf.keras' default arguments."""

    def __init__(self, *args, **kwargs):
        if args:
            kwargs['learning_rate'] = args[0]
            for name, value in zip(tuple(defaults)[1:], args[1:]):
                kwargs[name] = value
        if 'lr' in kwargs:
            kwargs['learning_rate'] = kwargs.pop('lr')
        for name, refuses in refused:
            if name in kwargs and refuses(kwargs.pop(name)):
                raise ValueError('%s(%s=...) is not provided by torchk (Keras 2.3.1\'s %s '
                                 'has no such option).' % (keras_class.__name__, name,
                                                           keras_class.__name__))
        arguments = dict(defaults)
        arguments.update(kwargs)
        Optimizer.__init__(self, **arguments)

    cls = type(keras_class.__name__, (Optimizer, keras_class),
               {'__init__': __init__, '__module__': __name__,
                '__doc__': 'Keras 2.3.1\'s `%s` with tf.keras\' arguments: %s.' % (
                    keras_class.__name__, ', '.join('%s=%r' % kv for kv in defaults.items()))})
    return cls


SGD = _tf_optimizer(keras_optimizers.SGD,
                    dict(learning_rate=0.01, momentum=0.0, nesterov=False))
RMSprop = _tf_optimizer(keras_optimizers.RMSprop,
                        dict(learning_rate=0.001, rho=0.9, epsilon=1e-7),
                        refused=(('momentum', bool), ('centered', bool)))
# Keras 2.3.1's Adagrad starts its accumulators at zero, not at tf.keras'
# initial_accumulator_value (0.1).
Adagrad = _tf_optimizer(keras_optimizers.Adagrad, dict(learning_rate=0.001, epsilon=1e-7),
                        refused=(('initial_accumulator_value', lambda value: False),))
Adadelta = _tf_optimizer(keras_optimizers.Adadelta,
                         dict(learning_rate=0.001, rho=0.95, epsilon=1e-7))
Adam = _tf_optimizer(keras_optimizers.Adam,
                     dict(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                          amsgrad=False))
Adamax = _tf_optimizer(keras_optimizers.Adamax,
                       dict(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7))
Nadam = _tf_optimizer(keras_optimizers.Nadam,
                      dict(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7))

_CLASSES = {c.__name__.lower(): c for c in (SGD, RMSprop, Adagrad, Adadelta, Adam, Adamax,
                                            Nadam)}


def serialize(optimizer):
    """`{'class_name': ..., 'config': ...}` of an optimizer."""
    return keras_optimizers.serialize(optimizer)


def deserialize(config, custom_objects=None):
    """The optimizer that `serialize` described (tf.keras' classes for Keras' names).

    # Raises
        ValueError: for an unknown class name.
    """
    name = config['class_name']
    if custom_objects and name in custom_objects:
        return custom_objects[name].from_config(config['config'])
    if name.lower() not in _CLASSES:
        raise ValueError('Unknown optimizer %r; known: %s.' % (name, sorted(_CLASSES)))
    return _CLASSES[name.lower()].from_config(config['config'])


def get(identifier):
    """An optimizer from a name (`'adam'`), a configuration dict or an optimizer.

    # Raises
        ValueError: if `identifier` is none of these.
    """
    if isinstance(identifier, keras_optimizers.Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({'class_name': identifier, 'config': {}})
    raise ValueError('Could not interpret optimizer identifier: %r' % (identifier,))


def __getattr__(name):
    """`optimizers.legacy` (tf.keras 2.11+), loaded on first use: it re-exports this
    module's classes."""
    if name == 'legacy':
        return importlib.import_module(__name__ + '.legacy')
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
