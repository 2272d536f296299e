"""The update rules of tf.keras 2.11+'s optimizers that Keras 2.3.1 lacks: Lion, Ftrl and
Adafactor, written as Keras 2.3.1 update rules (`get_updates` returning `K.update`s), with
the Keras 2.3.1 base class they build on (`RuleBase`)."""
import numpy as np

from keras import backend as K
from keras import optimizers as keras_optimizers


class RuleBase(keras_optimizers.Optimizer):
    """What Keras 2.3.1's optimizers hold besides their rule: the step count and the learning
    rate as variables, and the learning rate in the configuration."""

    def __init__(self, learning_rate, **kwargs):
        super(RuleBase, self).__init__(**kwargs)
        with K.name_scope(type(self).__name__):
            self.iterations = K.variable(0, dtype='int64', name='iterations')
            self.learning_rate = K.variable(learning_rate, name='learning_rate')

    def get_config(self):
        config = {'learning_rate': float(K.get_value(self.learning_rate))}
        base_config = super(RuleBase, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


def _slots(params, name, value=0.0):
    return [K.variable(np.full(K.int_shape(p), value), dtype=K.dtype(p),
                       name='%s_%d' % (name, i)) for i, p in enumerate(params)]


def _constrained(p, new_p):
    constraint = getattr(p, 'constraint', None)
    return constraint(new_p) if constraint is not None else new_p


def lion_rule(self, loss, params):
    """Lion (Chen et al., 2023): `p -= lr * sign(beta_1 m + (1 - beta_1) g)`, then
    `m = beta_2 m + (1 - beta_2) g`."""
    grads = self.get_gradients(loss, params)
    momentums = _slots(params, 'm')
    self.weights = [self.iterations] + momentums
    updates = [K.update_add(self.iterations, 1)]
    lr = self.learning_rate
    for p, g, m in zip(params, grads, momentums):
        step = K.sign(m * self.beta_1 + g * (1.0 - self.beta_1))
        updates.append(K.update(p, _constrained(p, p - lr * step)))
        updates.append(K.update(m, m * self.beta_2 + g * (1.0 - self.beta_2)))
    return updates


def ftrl_rule(self, loss, params):
    """FTRL-Proximal (McMahan et al., 2013), as tf.keras 2.11+ computes it: per weight an
    accumulator of squared gradients (from `initial_accumulator_value`) and a linear term;
    the weight is the closed-form proximal solution with L1, L2 and shrinkage-L2 strengths."""
    grads = self.get_gradients(loss, params)
    accumulators = _slots(params, 'accumulator', self.initial_accumulator_value)
    linears = _slots(params, 'linear')
    self.weights = [self.iterations] + accumulators + linears
    updates = [K.update_add(self.iterations, 1)]
    lr = self.learning_rate
    power = self.learning_rate_power
    l2 = self.l2_regularization_strength + self.beta / (2.0 * lr)
    for p, g, accumulator, linear in zip(params, grads, accumulators, linears):
        shrunk = g + 2 * self.l2_shrinkage_regularization_strength * p
        new_accumulator = accumulator + K.square(g)
        new_linear = linear + shrunk - (K.pow(new_accumulator, -power)
                                        - K.pow(accumulator, -power)) / lr * p
        quadratic = K.pow(new_accumulator, -power) / lr + 2 * l2
        l1 = self.l1_regularization_strength
        clipped = K.clip(new_linear, -l1, l1)
        updates.append(K.update(linear, new_linear))
        updates.append(K.update(p, _constrained(p, (clipped - new_linear) / quadratic)))
        updates.append(K.update(accumulator, new_accumulator))
    return updates


def _rms(x):
    return K.sqrt(K.mean(K.square(x)))


def adafactor_rule(self, loss, params):
    """Adafactor (Shazeer & Stern, 2018), as tf.keras 2.11+ computes it: the second moment
    of a weight of rank 2 or more is factored into row (`r`) and column (`c`) means; the step
    is relative to the weight's RMS, clipped by `clip_threshold`."""
    grads = self.get_gradients(loss, params)
    factored = [len(K.int_shape(p)) >= 2 for p in params]
    rows = [K.zeros(K.int_shape(p)[:-1], name='r_%d' % i) if f else None
            for i, (p, f) in enumerate(zip(params, factored))]
    columns = [K.zeros(K.int_shape(p)[:-2] + K.int_shape(p)[-1:], name='c_%d' % i)
               if f else None for i, (p, f) in enumerate(zip(params, factored))]
    velocities = _slots(params, 'v')
    self.weights = [self.iterations] + [s for s in rows + columns if s is not None] + \
        velocities
    updates = [K.update_add(self.iterations, 1)]
    step = K.cast(self.iterations + 1, K.floatx())
    lr = self.learning_rate
    if self.relative_step and self.schedule is None:
        lr = K.minimum(lr, 1.0 / K.sqrt(step))
    rho = K.minimum(lr, 1.0 / K.sqrt(step))
    beta_2 = 1.0 - K.pow(step, self.beta_2_decay)
    for p, g, r, c, v in zip(params, grads, rows, columns, velocities):
        alpha = K.maximum(self.epsilon_2, _rms(p)) * rho
        squares = K.square(g) + self.epsilon_1
        if r is not None:
            new_r = beta_2 * r + (1 - beta_2) * K.mean(squares, axis=-1)
            new_c = beta_2 * c + (1 - beta_2) * K.mean(squares, axis=-2)
            new_v = K.expand_dims(new_r / K.mean(new_r, axis=-1, keepdims=True), -1) * \
                K.expand_dims(new_c, -2)
            updates += [K.update(r, new_r), K.update(c, new_c)]
        else:
            new_v = beta_2 * v + (1 - beta_2) * squares
        updates.append(K.update(v, new_v))
        u = g / K.sqrt(new_v)
        u = u / K.maximum(1.0, _rms(u) / self.clip_threshold)
        updates.append(K.update(p, _constrained(p, p - alpha * u)))
    return updates
