"""`tf.keras.optimizers`: Keras 2.3.1's optimizers with tf.keras 2's arguments and methods.

Each class is Keras 2.3.1's (same update rules, same saved configuration), taking in
addition:
- tf.keras' defaults and arguments: `learning_rate` (or the `lr` alias), `name`,
  `epsilon=1e-7`, a `schedules.LearningRateSchedule` as the learning rate;
- `clipnorm` per gradient tensor and `global_clipnorm` over all of them, as tf.keras clips
  (Keras 2.3.1's `clipnorm` was the global norm), and `clipvalue`;
- tf.keras 2.11+'s decoupled `weight_decay` (each step first takes
  `learning_rate * weight_decay * variable` off every variable not excluded by
  `exclude_from_weight_decay`), and `AdamW`; RMSprop's `momentum` and `centered` and
  Adagrad's `initial_accumulator_value`, computed as tf.keras 2.11+ computes them;
- `apply_gradients(zip(grads, variables))` and `minimize(loss, var_list, tape=None)` for
  `train_step` and `GradientTape` loops: the update is built once per list of variables,
  with placeholders for the gradients; eagerly it is compiled and run on the given
  gradients, in a step being recorded (`tf.function`, `fit`'s steps) it joins the step's
  program with the step's gradients in place of the placeholders.
"""
import importlib
import numbers
import re

import numpy as np
import torch

from keras import backend as K
from keras import optimizers as keras_optimizers

from ... import function
from ... import program
from ...tf import distribute
from ...tf import trackable
from ...tf import tracing
from .. import eager
from .._facade import missing
from ...tf.namespaces import missing_name
from . import algorithms, schedules

__all__ = ['Optimizer', 'SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'Adam', 'AdamW', 'Adamax',
           'Nadam', 'Lion', 'Ftrl', 'Adafactor', 'schedules', 'legacy', 'experimental',
           'serialize', 'deserialize', 'get']


class Optimizer(keras_optimizers.Optimizer):
    """The base of tf.keras' optimizers: the tf.keras arguments and eager methods on top of
    a Keras 2.3.1 optimizer class (see the module docstring)."""

    # tf.keras' arguments that the Keras 2.3.1 class lacks, kept as attributes and in the
    # configuration (set by `_tf_optimizer`).
    _own_arguments = ()
    # `from_config` takes tf.keras' configurations: loading a model file through
    # `torchk.keras.models.load_model` keeps the saved optimizer's tf.keras arguments.
    reads_tf_keras_config = True

    def __init__(self, learning_rate, name=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, weight_decay=None, **kwargs):
        if weight_decay is not None and (isinstance(weight_decay, bool) or not isinstance(
                weight_decay, numbers.Real) or weight_decay < 0):
            raise ValueError('weight_decay must be None or a number >= 0, got %r.'
                             % (weight_decay,))
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
        self.weight_decay = weight_decay
        self._excluded_from_decay = set()
        self._excluded_from_decay_names = []
        self._torchk_given_gradients = None
        self._torchk_steps = {}
        # An optimizer made in a strategy's scope belongs to it, as in tf.keras.
        self._distribute_strategy = distribute.get_strategy() if distribute.has_strategy() \
            else None

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Leaves variables out of weight decay.

        # Arguments
            var_list: variables to leave out.
            var_names: regular expressions; a variable whose name one of them matches
                (`re.search`) is left out, e.g. `['bias', 'gamma', 'beta']`.

        # Raises
            ValueError: if the optimizer has already built its update (as tf.keras does).
        """
        if self.weights:
            raise ValueError('exclude_from_weight_decay must be called before the optimizer '
                             'builds its update (before the first fit, train_on_batch or '
                             'apply_gradients).')
        self._excluded_from_decay.update(id(v) for v in var_list or ())
        self._excluded_from_decay_names.extend(re.compile(name) for name in var_names or ())

    def _decays(self, variable):
        return id(variable) not in self._excluded_from_decay and not any(
            pattern.search(variable.name) for pattern in self._excluded_from_decay_names)

    def _gradient_strategy(self):
        """The strategy whose replicas' gradients the update combines: the one this
        optimizer was made in, else the one entered now (`fit`'s, `strategy.run`'s)."""
        return self._distribute_strategy or distribute.get_strategy()

    def get_gradients(self, loss, params):
        """The gradients of `loss` (or those given to `apply_gradients`), combined over the
        replicas of a `tf.distribute` strategy (given gradients summed, as tf.keras'
        `apply_gradients` sums them; those of Keras' compiled loss averaged), then clipped as
        tf.keras clips them."""
        grads = self._torchk_given_gradients
        given = grads is not None
        if not given:
            grads = K.gradients(loss, params)
            missing = [p.name for p, g in zip(params, grads) if g is None]
            if missing:
                raise ValueError('No gradient for variable(s) %s: the loss does not depend on '
                                 'them (an operation without gradient, or unused weights).'
                                 % missing)
        grads = self._gradient_strategy().aggregate_gradients(grads, average=not given)
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
        """The updates of `params` (the slots are made here: a pending checkpoint restore
        of the optimizer gives them their values, `slots.py`)."""
        self._torchk_slot_params = list(params)
        variable = self.learning_rate
        if self.schedule is not None:
            self.learning_rate = self.schedule(self.iterations)
        decayed = [p for p in params if self.weight_decay and self._decays(p)]
        # A decayed variable's constraint applies after the decay, as in tf.keras.
        constraints = {id(p): p.constraint for p in decayed
                       if getattr(p, 'constraint', None) is not None}
        for p in decayed:
            if id(p) in constraints:
                p.constraint = None
        try:
            updates = self._update_rule(loss, params)
            if decayed:
                updates = self._with_weight_decay(updates, decayed, constraints)
        finally:
            self.learning_rate = variable
            for p in decayed:
                if id(p) in constraints:
                    p.constraint = constraints[id(p)]
        self.updates = updates
        trackable.refresh(self)
        return updates

    def _update_rule(self, loss, params):
        """The updates of the Keras 2.3.1 class (overridden where tf.keras' arguments change
        the rule)."""
        return super(Optimizer, self).get_updates(loss, params)

    def _with_weight_decay(self, updates, decayed, constraints):
        """`updates` with `learning_rate * weight_decay * p` taken off each decayed `p` (then
        its constraint, from `constraints` by id, applied): the same step as tf.keras' decay
        of the variable before its update, since every Keras update rule adds its step to
        `p`."""
        decayed = {id(p) for p in decayed}
        rate = self.learning_rate * self.weight_decay
        result = []
        for x, new_x in updates:
            if id(x) in decayed:
                new_x = new_x - K.cast(rate, K.dtype(x)) * x
                if id(x) in constraints:
                    new_x = constraints[id(x)](new_x)
            result.append((x, new_x))
        return result

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
        key = (self._gradient_strategy(),) + tuple(id(v) for v in variables)
        if key not in self._torchk_steps:
            self._torchk_steps[key] = self._symbolic_step(variables)
        placeholders, updates, run = self._torchk_steps[key]
        recording = tracing.current()
        if recording is not None:
            # In a step being recorded, the update joins the step's program.
            values = recording.written([value for _, value in updates], [
                (p, g) for p, (g, _) in zip(placeholders, pairs)])
            recording.write([(v, value) for (v, _), value in zip(updates, values)])
            return self.iterations
        if run is None:
            run = eager.Program(placeholders, [], [], updates)
            self._torchk_steps[key] = (placeholders, updates, run)
        grads = [g.detach() if isinstance(g, torch.Tensor) else np.asarray(g)
                 for g, _ in pairs]
        with torch.no_grad():
            run(grads)
        return self.iterations

    def _symbolic_step(self, variables):
        """The update of `variables` by gradients given as placeholders, built once (the
        optimizer's slots are made then): (placeholders, updates, None)."""
        placeholders = [K.placeholder(shape=K.int_shape(v), dtype=K.dtype(v))
                        for v in variables]
        self._torchk_given_gradients = placeholders
        try:
            updates = self.get_updates(None, variables)
        finally:
            self._torchk_given_gradients = None
        return placeholders, program.unique_updates(function.flatten_updates(updates)), None

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
        config.update((key, getattr(self, key)) for key in self._own_arguments)
        if self.weight_decay is not None:
            config['weight_decay'] = self.weight_decay
        if self.schedule is not None:
            config['learning_rate'] = schedules.serialize(self.schedule)
        if getattr(self, 'global_clipnorm', None):
            config['global_clipnorm'] = self.global_clipnorm
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The optimizer `get_config` (torchk's, Keras 2.3.1's or tf.keras 2's) describes.

        # Raises
            ValueError: for `use_ema=True` (tf.keras 2.11+'s moving average of the weights),
                which torchk does not compute.
        """
        config = dict(config)
        if config.pop('use_ema', False):
            raise ValueError('%s(use_ema=True), a moving average of the weights, is not '
                             'provided by torchk.' % cls.__name__)
        for key in _TF_KERAS_ONLY_KEYS:
            config.pop(key, None)
        if isinstance(config.get('learning_rate'), dict):
            config['learning_rate'] = schedules.deserialize(config['learning_rate'],
                                                            custom_objects)
        return cls(**config)


# Keys of tf.keras 2.11+ optimizers' configurations that change no update torchk computes:
# what compiles the step (`jit_compile`), the class version and the moving-average settings
# when `use_ema` is off.
_TF_KERAS_ONLY_KEYS = ('jit_compile', 'is_legacy_optimizer', 'ema_momentum',
                       'ema_overwrite_frequency')


def _tf_optimizer(keras_class, arguments, own=(), name=None, update_rule=None, check=None):
    """A tf.keras optimizer class over `keras_class`.

    # Arguments
        keras_class: the Keras 2.3.1 optimizer class.
        arguments: tf.keras' arguments, in its order (also positionally), with its defaults.
        own: those of `arguments` that `keras_class` lacks: attributes of the optimizer and
            keys of its configuration, read by `update_rule`.
        name: the class name (default: `keras_class`'s).
        update_rule: a `_update_rule(self, loss, params)` in place of `keras_class`'s.
        check: a function of the arguments (a dict) raising ValueError for a bad value.
    """
    name = name or keras_class.__name__

    def __init__(self, *args, **kwargs):
        if len(args) > len(arguments):
            raise TypeError('%s takes at most %d positional arguments (%s), got %d.'
                            % (name, len(arguments), ', '.join(arguments), len(args)))
        for key, value in zip(arguments, args):
            if key in kwargs:
                raise TypeError('%s got multiple values for argument %r.' % (name, key))
            kwargs[key] = value
        if 'lr' in kwargs:
            kwargs['learning_rate'] = kwargs.pop('lr')
        given = dict(arguments)
        given.update(kwargs)
        if check is not None:
            check(given)
        for key in own:
            setattr(self, key, given.pop(key))
        Optimizer.__init__(self, **given)

    namespace = {'__init__': __init__, '__module__': __name__, '_own_arguments': tuple(own),
                 '__doc__': 'Keras 2.3.1\'s `%s` with tf.keras\' arguments: %s.' % (
                     keras_class.__name__, ', '.join('%s=%r' % kv for kv in arguments.items()))}
    if update_rule is not None:
        namespace['_update_rule'] = update_rule
    return type(name, (Optimizer, keras_class), namespace)


def _slots(params, name):
    return [K.zeros(K.int_shape(p), dtype=K.dtype(p), name='%s_%d' % (name, i))
            for i, p in enumerate(params)]


def _rmsprop_rule(self, loss, params):
    """RMSprop as tf.keras 2.11+ computes it with `momentum` or `centered`: the step is
    `lr * g / sqrt(ms - mg ** 2 + epsilon)` (`mg`, the mean gradient, where centered), added
    to a momentum accumulator where `momentum > 0`. Without either, Keras 2.3.1's rule."""
    if not self.momentum and not self.centered:
        return keras_optimizers.RMSprop.get_updates(self, loss, params)
    grads = self.get_gradients(loss, params)
    velocities = _slots(params, 'velocity')
    momentums = _slots(params, 'momentum') if self.momentum else [None] * len(params)
    averages = _slots(params, 'average_gradient') if self.centered else [None] * len(params)
    self.weights = [self.iterations] + velocities + [m for m in momentums if m is not None] + \
        [a for a in averages if a is not None]
    self.updates = [K.update_add(self.iterations, 1)]
    lr = self.learning_rate
    if self.initial_decay > 0:
        lr = lr * (1. / (1. + self.decay * K.cast(self.iterations, K.dtype(self.decay))))
    for p, g, velocity, momentum, average in zip(params, grads, velocities, momentums,
                                                 averages):
        new_velocity = self.rho * velocity + (1. - self.rho) * K.square(g)
        self.updates.append(K.update(velocity, new_velocity))
        denominator = new_velocity
        if average is not None:
            new_average = self.rho * average + (1. - self.rho) * g
            self.updates.append(K.update(average, new_average))
            denominator = denominator - K.square(new_average)
        step = lr * g / K.sqrt(denominator + self.epsilon)
        if momentum is not None:
            step = self.momentum * momentum + step
            self.updates.append(K.update(momentum, step))
        new_p = p - step
        if getattr(p, 'constraint', None) is not None:
            new_p = p.constraint(new_p)
        self.updates.append(K.update(p, new_p))
    return self.updates


def _adagrad_rule(self, loss, params):
    """Keras 2.3.1's Adagrad, its accumulators starting at `initial_accumulator_value`."""
    updates = keras_optimizers.Adagrad.get_updates(self, loss, params)
    for accumulator in self.weights[1:]:
        K.set_value(accumulator, np.full(K.int_shape(accumulator),
                                         self.initial_accumulator_value))
    return updates


def _check_rmsprop(arguments):
    if not 0 <= arguments['momentum'] < 1:
        raise ValueError('RMSprop momentum must be in [0, 1), got %r.' % (arguments['momentum'],))


def _check_adagrad(arguments):
    if arguments['initial_accumulator_value'] < 0:
        raise ValueError('Adagrad initial_accumulator_value must be >= 0, got %r.'
                         % (arguments['initial_accumulator_value'],))


SGD = _tf_optimizer(keras_optimizers.SGD,
                    dict(learning_rate=0.01, momentum=0.0, nesterov=False))
RMSprop = _tf_optimizer(keras_optimizers.RMSprop,
                        dict(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                             centered=False),
                        own=('momentum', 'centered'), update_rule=_rmsprop_rule,
                        check=_check_rmsprop)
Adagrad = _tf_optimizer(keras_optimizers.Adagrad,
                        dict(learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7),
                        own=('initial_accumulator_value',), update_rule=_adagrad_rule,
                        check=_check_adagrad)
Adadelta = _tf_optimizer(keras_optimizers.Adadelta,
                         dict(learning_rate=0.001, rho=0.95, epsilon=1e-7))
Adam = _tf_optimizer(keras_optimizers.Adam,
                     dict(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                          amsgrad=False))
AdamW = _tf_optimizer(keras_optimizers.Adam,
                      dict(learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                           epsilon=1e-7, amsgrad=False), name='AdamW')
Adamax = _tf_optimizer(keras_optimizers.Adamax,
                       dict(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7))
Nadam = _tf_optimizer(keras_optimizers.Nadam,
                      dict(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7))

Lion = _tf_optimizer(algorithms.RuleBase, dict(learning_rate=0.0001, beta_1=0.9, beta_2=0.99),
                     own=('beta_1', 'beta_2'), name='Lion', update_rule=algorithms.lion_rule)
Ftrl = _tf_optimizer(algorithms.RuleBase,
                     dict(learning_rate=0.001, learning_rate_power=-0.5,
                          initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                          l2_regularization_strength=0.0,
                          l2_shrinkage_regularization_strength=0.0, beta=0.0),
                     own=('learning_rate_power', 'initial_accumulator_value',
                          'l1_regularization_strength', 'l2_regularization_strength',
                          'l2_shrinkage_regularization_strength', 'beta'),
                     name='Ftrl', update_rule=algorithms.ftrl_rule)
Adafactor = _tf_optimizer(algorithms.RuleBase,
                          dict(learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30,
                               epsilon_2=1e-3, clip_threshold=1.0, relative_step=True),
                          own=('beta_2_decay', 'epsilon_1', 'epsilon_2', 'clip_threshold',
                               'relative_step'),
                          name='Adafactor', update_rule=algorithms.adafactor_rule)

_CLASSES = {c.__name__.lower(): c for c in (SGD, RMSprop, Adagrad, Adadelta, Adam, AdamW,
                                            Adamax, Nadam, Lion, Ftrl, Adafactor)}


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
    """`optimizers.legacy` (tf.keras 2.11+) and `optimizers.experimental` (2.9+), loaded on
    first use: they re-export this module's classes. Other names: the documented error."""
    if name in ('legacy', 'experimental'):
        return importlib.import_module(__name__ + '.' + name)
    if name.startswith('__'):
        raise AttributeError(name)
    raise missing_name(missing('tf.keras.optimizers.' + name))
