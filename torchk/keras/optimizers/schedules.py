"""`tf.keras.optimizers.schedules`: learning rates as functions of the training step.

A schedule is called with the optimizer's step count (a tensor, eager or symbolic) and
returns the learning rate, with backend ops, so Keras' optimizers compute it inside their
update graph. The formulas are tf.keras 2's.
"""
import math

from keras import backend as K

__all__ = ['LearningRateSchedule', 'ExponentialDecay', 'PiecewiseConstantDecay',
           'PolynomialDecay', 'InverseTimeDecay', 'CosineDecay', 'CosineDecayRestarts',
           'serialize', 'deserialize']


class LearningRateSchedule(object):
    """Base class of learning-rate schedules: `schedule(step)` returns the rate."""

    def __call__(self, step):
        raise NotImplementedError('%s must implement __call__(step).' % type(self).__name__)

    def get_config(self):
        raise NotImplementedError('%s must implement get_config().' % type(self).__name__)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _float(step):
    return K.cast(step, K.floatx())


class _RateDecay(LearningRateSchedule):
    """A schedule set by an initial rate, a decay rate per `decay_steps` steps and
    `staircase` (tf.keras' exponential and inverse-time decays)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, decay_rate=self.decay_rate,
                    staircase=self.staircase, name=self.name)


class ExponentialDecay(_RateDecay):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)` (the exponent floored
    with `staircase=True`)."""

    def __call__(self, step):
        exponent = _float(step) / float(self.decay_steps)
        if self.staircase:
            exponent = K.cast(K.cast(exponent, 'int64'), K.floatx())
        return self.initial_learning_rate * _power(self.decay_rate, exponent)


class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[i]` for `boundaries[i-1] < step <= boundaries[i]`.

    # Raises
        ValueError: if `values` is not one longer than `boundaries`.
    """

    def __init__(self, boundaries, values, name=None):
        if len(values) != len(boundaries) + 1:
            raise ValueError('PiecewiseConstantDecay needs one more value than boundaries; got '
                             '%d boundaries and %d values.' % (len(boundaries), len(values)))
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step):
        step = _float(step)
        rate = 0. * step + self.values[0]
        for boundary, low, high in zip(self.boundaries, self.values, self.values[1:]):
            above = K.cast(K.greater(step, float(boundary)), K.floatx())
            rate = rate + above * (high - low)
        return rate

    def get_config(self):
        return dict(boundaries=self.boundaries, values=self.values, name=self.name)


class PolynomialDecay(LearningRateSchedule):
    """From `initial_learning_rate` to `end_learning_rate` in `decay_steps` steps along
    `(1 - step / decay_steps) ** power` (the steps cycled with `cycle=True`)."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name=None):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        step = _float(step)
        decay_steps = float(self.decay_steps)
        if self.cycle:
            cycles = K.maximum(_ceil(step / decay_steps), 1.)
            decay_steps = decay_steps * cycles
        else:
            step = K.minimum(step, decay_steps)
        fraction = 1. - step / decay_steps
        return ((self.initial_learning_rate - self.end_learning_rate)
                * K.pow(fraction, float(self.power)) + self.end_learning_rate)

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, end_learning_rate=self.end_learning_rate,
                    power=self.power, cycle=self.cycle, name=self.name)


def _power(base, exponent):
    """`base ** exponent` for a positive Python number `base` and a tensor `exponent`."""
    return K.exp(exponent * math.log(base))


def _ceil(x):
    return -_floor(-x)


def _floor(x):
    truncated = K.cast(K.cast(x, 'int64'), K.floatx())
    return truncated - K.cast(K.less(x, truncated), K.floatx())


class InverseTimeDecay(_RateDecay):
    """`initial_learning_rate / (1 + decay_rate * step / decay_steps)` (the ratio floored
    with `staircase=True`)."""

    def __call__(self, step):
        ratio = _float(step) / float(self.decay_steps)
        if self.staircase:
            ratio = _floor(ratio)
        return self.initial_learning_rate / (1. + self.decay_rate * ratio)


class CosineDecay(LearningRateSchedule):
    """Half a cosine from `initial_learning_rate` down to `alpha` times it over
    `decay_steps` steps, then constant."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        progress = K.minimum(_float(step), float(self.decay_steps)) / float(self.decay_steps)
        cosine = 0.5 * (1. + K.cos(math.pi * progress))
        return self.initial_learning_rate * ((1. - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate,
                    decay_steps=self.decay_steps, alpha=self.alpha, name=self.name)


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay restarted every period, period `i` lasting `first_decay_steps * t_mul ** i`
    steps and starting at `initial_learning_rate * m_mul ** i`."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name=None):
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self.t_mul = t_mul
        self.m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        completed = _float(step) / float(self.first_decay_steps)
        if self.t_mul == 1.0:
            restarts = _floor(completed)
            completed = completed - restarts
        else:
            restarts = _floor(K.log(1. - completed * (1. - self.t_mul)) / math.log(self.t_mul))
            total = (1. - _power(self.t_mul, restarts)) / (1. - self.t_mul)
            completed = (completed - total) / _power(self.t_mul, restarts)
        scale = _power(self.m_mul, restarts) if self.m_mul > 0 else 0. * restarts
        cosine = 0.5 * scale * (1. + K.cos(math.pi * completed))
        return self.initial_learning_rate * ((1. - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return dict(initial_learning_rate=self.initial_learning_rate,
                    first_decay_steps=self.first_decay_steps, t_mul=self.t_mul,
                    m_mul=self.m_mul, alpha=self.alpha, name=self.name)


def serialize(schedule):
    """`{'class_name': ..., 'config': ...}` of a schedule."""
    return {'class_name': type(schedule).__name__, 'config': schedule.get_config()}


def deserialize(config, custom_objects=None):
    """The schedule that `serialize` described.

    # Raises
        ValueError: for an unknown class name.
    """
    classes = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay,
                                       PolynomialDecay, InverseTimeDecay, CosineDecay,
                                       CosineDecayRestarts)}
    classes.update(custom_objects or {})
    if config['class_name'] not in classes:
        raise ValueError('Unknown learning rate schedule %r; known: %s.'
                         % (config['class_name'], sorted(classes)))
    return classes[config['class_name']].from_config(config['config'])
