"""torchk.keras.optimizers: tf.keras' arguments, eager apply_gradients, clipping, schedules
(values against the formulas tf.keras documents, computed with numpy)."""
import math

import numpy as np
import pytest
import torch

import torchk.keras as keras
from torchk.keras.optimizers import schedules

STEPS = [0, 1, 5, 50, 99, 100, 150, 250]


def cosine(step, initial=0.1, decay_steps=100, alpha=0.1):
    progress = min(step, decay_steps) / decay_steps
    return initial * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * progress)) + alpha)


def restarts(step, initial=0.1, first=40, t_mul=2., m_mul=0.5, alpha=0.):
    period, start, scale = first, 0, 1.
    while step >= start + period:
        start, period, scale = start + period, period * t_mul, scale * m_mul
    fraction = (step - start) / period
    return initial * ((1 - alpha) * scale * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)


CASES = [
    (schedules.ExponentialDecay(0.1, 30, 0.5), lambda s: 0.1 * 0.5 ** (s / 30)),
    (schedules.ExponentialDecay(0.1, 30, 0.5, staircase=True),
     lambda s: 0.1 * 0.5 ** (s // 30)),
    (schedules.PiecewiseConstantDecay([5, 100], [1., 0.5, 0.1]),
     lambda s: 1. if s <= 5 else 0.5 if s <= 100 else 0.1),
    (schedules.PolynomialDecay(0.1, 100, 0.01, power=2.),
     lambda s: (0.1 - 0.01) * (1 - min(s, 100) / 100) ** 2 + 0.01),
    (schedules.PolynomialDecay(0.1, 100, 0.01, cycle=True),
     lambda s: (0.1 - 0.01) * (1 - s / (100 * max(1, math.ceil(s / 100)))) + 0.01),
    (schedules.InverseTimeDecay(0.1, 10, 0.5), lambda s: 0.1 / (1 + 0.5 * s / 10)),
    (schedules.InverseTimeDecay(0.1, 10, 0.5, staircase=True),
     lambda s: 0.1 / (1 + 0.5 * (s // 10))),
    (schedules.CosineDecay(0.1, 100, alpha=0.1), cosine),
    (schedules.CosineDecayRestarts(0.1, 40, m_mul=0.5), restarts),
]


@pytest.mark.parametrize('schedule, formula', CASES, ids=lambda c: type(c).__name__
                         if isinstance(c, schedules.LearningRateSchedule) else '')
def test_schedule_values(schedule, formula):
    got = [float(schedule(torch.tensor(step))) for step in STEPS]
    np.testing.assert_allclose(got, [formula(step) for step in STEPS], rtol=1e-5)
    again = schedules.deserialize(schedules.serialize(schedule))
    assert float(again(torch.tensor(7))) == pytest.approx(float(schedule(torch.tensor(7))))


def test_tf_keras_arguments():
    assert keras.backend.get_value(keras.optimizers.Adam(lr=0.5).learning_rate) == 0.5
    assert keras.optimizers.Adam().epsilon == 1e-7
    assert keras.backend.get_value(keras.optimizers.Adadelta().learning_rate) == \
        pytest.approx(0.001)
    assert keras.optimizers.SGD(0.1, 0.9).name == 'SGD'
    with pytest.raises(ValueError, match='momentum'):
        keras.optimizers.RMSprop(momentum=0.9)
    assert keras.optimizers.get('adam').__class__ is keras.optimizers.Adam


def variables(*values):
    return [keras.backend.variable(np.array(v, dtype='float32')) for v in values]


def test_apply_gradients_clips_each_tensor_then_globally():
    first, second = variables([0., 0.], [0.])
    grads = [torch.tensor([3., 4.]), torch.tensor([0.5])]
    keras.optimizers.SGD(1., clipnorm=1.).apply_gradients(zip(grads, [first, second]))
    np.testing.assert_allclose(keras.backend.get_value(first), [-0.6, -0.8], rtol=1e-6)
    np.testing.assert_allclose(keras.backend.get_value(second), [-0.5], rtol=1e-6)

    first, second = variables([0., 0.], [0.])
    norm = math.sqrt(25 + 0.25)
    keras.optimizers.SGD(1., global_clipnorm=1.).apply_gradients(zip(grads, [first, second]))
    np.testing.assert_allclose(keras.backend.get_value(first), [-3 / norm, -4 / norm],
                               rtol=1e-5)
    first, = variables([0., 0.])
    keras.optimizers.SGD(1., clipvalue=2.).apply_gradients([(grads[0], first)])
    np.testing.assert_allclose(keras.backend.get_value(first), [-2., -2.])


def test_schedule_drives_the_update_and_minimize():
    weight, = variables([1.])
    optimizer = keras.optimizers.SGD(schedules.PiecewiseConstantDecay([1], [1., 0.1]))
    for _ in range(3):  # steps 0 and 1 at rate 1, step 2 at 0.1
        optimizer.minimize(lambda: weight.as_subclass(torch.Tensor).sum() * 1., [weight])
    np.testing.assert_allclose(keras.backend.get_value(weight), [1. - 2.1], rtol=1e-6)
    assert int(keras.backend.get_value(optimizer.iterations)) == 3
    with pytest.raises(ValueError, match='no gradient'):
        optimizer.apply_gradients([(None, weight)])
