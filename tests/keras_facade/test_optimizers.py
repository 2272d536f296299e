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
    rmsprop = keras.optimizers.RMSprop(0.01, 0.8, 0.5, 1e-6, True)  # tf.keras' order
    assert keras.backend.get_value(rmsprop.rho) == pytest.approx(0.8)
    assert (rmsprop.momentum, rmsprop.epsilon, rmsprop.centered) == (0.5, 1e-6, True)
    assert keras.optimizers.Adagrad().initial_accumulator_value == 0.1
    assert keras.optimizers.AdamW(0.01, 0.2).weight_decay == 0.2
    assert keras.optimizers.get('adam').__class__ is keras.optimizers.Adam
    assert keras.optimizers.get('adamw').__class__ is keras.optimizers.AdamW
    assert keras.optimizers.experimental.AdamW is keras.optimizers.AdamW
    assert keras.optimizers.legacy.RMSprop is keras.optimizers.RMSprop


@pytest.mark.parametrize('make, message', [
    (lambda: keras.optimizers.RMSprop(momentum=1.5), r'momentum must be in \[0, 1\)'),
    (lambda: keras.optimizers.Adagrad(initial_accumulator_value=-1.),
     'initial_accumulator_value must be >= 0'),
    (lambda: keras.optimizers.Adam(weight_decay=-0.1), 'weight_decay must be None or a number'),
    (lambda: keras.optimizers.Adam(weight_decay='0.1'), 'weight_decay must be None or a number'),
    (lambda: keras.optimizers.SGD(0.1, 0.9, False, 4), 'at most 3 positional arguments'),
    (lambda: keras.optimizers.SGD(0.1, learning_rate=0.2), "multiple values for argument "
                                                           "'learning_rate'"),
    (lambda: keras.optimizers.Adam.from_config({'learning_rate': 0.1, 'use_ema': True}),
     r'use_ema=True'),
])
def test_bad_arguments_are_refused_with_what_is_expected(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_tf_keras_configuration_keys_are_read():
    config = {'name': 'Adam', 'weight_decay': None, 'clipnorm': None, 'global_clipnorm': None,
              'clipvalue': None, 'use_ema': False, 'ema_momentum': 0.99,
              'ema_overwrite_frequency': None, 'jit_compile': True,
              'is_legacy_optimizer': False, 'learning_rate': 0.01, 'beta_1': 0.8,
              'beta_2': 0.99, 'epsilon': 1e-7, 'amsgrad': False}
    optimizer = keras.optimizers.Adam.from_config(config)
    assert keras.backend.get_value(optimizer.beta_1) == pytest.approx(0.8)
    assert keras.backend.get_value(optimizer.learning_rate) == pytest.approx(0.01)


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


def _tf_keras_rule(name, lr=0.05, weight_decay=0.0, rho=0.9, momentum=0.9, beta_1=0.9,
                   beta_2=0.999, initial=0.3, epsilon=1e-7):
    """One step of tf.keras 2.11+'s update for `name`, in numpy (the formulas of its
    documentation): `step(p, g, state, t) -> p`, `state` a dict it keeps its slots in."""
    def step(p, g, state, t):
        decayed = p - lr * weight_decay * p
        if name == 'adamw':
            state['m'] = beta_1 * state.get('m', 0.) + (1 - beta_1) * g
            state['v'] = beta_2 * state.get('v', 0.) + (1 - beta_2) * g * g
            alpha = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
            return decayed - alpha * state['m'] / (np.sqrt(state['v']) + epsilon)
        if name == 'rmsprop_momentum_centered':
            state['ms'] = rho * state.get('ms', 0.) + (1 - rho) * g * g
            state['mg'] = rho * state.get('mg', 0.) + (1 - rho) * g
            increment = lr * g / np.sqrt(state['ms'] - state['mg'] ** 2 + epsilon)
            state['mom'] = momentum * state.get('mom', 0.) + increment
            return decayed - state['mom']
        if name == 'adagrad':
            state['a'] = state.get('a', initial) + g * g
            return decayed - lr * g / (np.sqrt(state['a']) + epsilon)
        raise ValueError(name)
    return step


FIT_CASES = {
    'adamw': (lambda: keras.optimizers.AdamW(0.05, weight_decay=0.2),
              _tf_keras_rule('adamw', weight_decay=0.2)),
    'rmsprop_momentum_centered': (
        lambda: keras.optimizers.RMSprop(0.05, momentum=0.9, centered=True),
        _tf_keras_rule('rmsprop_momentum_centered')),
    'adagrad': (lambda: keras.optimizers.Adagrad(0.05, initial_accumulator_value=0.3),
                _tf_keras_rule('adagrad')),
}


@pytest.mark.parametrize('exclude_bias', [False, True], ids=['all_decayed', 'bias_excluded'])
@pytest.mark.parametrize('case', sorted(FIT_CASES))
def test_fit_steps_are_tf_keras_updates(case, exclude_bias):
    """`fit` (a compiled Keras 2.3.1 training function) on a linear model under mean squared
    error, against the numpy rule with the analytic gradients."""
    make, rule = FIT_CASES[case]
    rng = np.random.RandomState(5)
    x = rng.normal(size=(8, 3)).astype('float32')
    y = rng.normal(size=(8, 1)).astype('float32')
    kernel = rng.normal(size=(3, 1)).astype('float32')
    bias = np.array([0.5], 'float32')
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.set_weights([kernel, bias])
    optimizer = make()
    if exclude_bias:
        optimizer.exclude_from_weight_decay(var_names=['bias'])
    model.compile(optimizer, 'mse')
    model.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0)

    kernel, bias = kernel.astype('float64'), bias.astype('float64')
    kernel_state, bias_state = {}, {}
    bias_rule = _tf_keras_rule(case, weight_decay=0.) if exclude_bias and case == 'adamw' \
        else rule
    for t in range(1, 5):
        error = 2 * (x @ kernel + bias - y) / len(x)
        kernel = rule(kernel, x.T @ error, kernel_state, t)
        bias = bias_rule(bias, error.sum(axis=0), bias_state, t)
    got_kernel, got_bias = model.get_weights()
    np.testing.assert_allclose(got_kernel, kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_bias, bias, rtol=1e-5, atol=1e-6)


def test_weight_decay_exclusions():
    kernel, bias, scale = variables([1., 2.], [1.], [2.])
    optimizer = keras.optimizers.SGD(0.1, weight_decay=0.5)
    optimizer.exclude_from_weight_decay(var_list=[scale], var_names=['^bias'])
    kernel._keras_name, bias._keras_name = 'dense/kernel:0', 'bias:0'
    zero = torch.zeros
    optimizer.apply_gradients([(zero(2), kernel), (zero(1), bias), (zero(1), scale)])
    np.testing.assert_allclose(keras.backend.get_value(kernel), [0.95, 1.9], rtol=1e-6)
    np.testing.assert_allclose(keras.backend.get_value(bias), [1.])
    np.testing.assert_allclose(keras.backend.get_value(scale), [2.])
    with pytest.raises(ValueError, match='before the optimizer builds its update'):
        optimizer.exclude_from_weight_decay(var_names=['kernel'])


def test_a_constraint_applies_after_the_decay():
    weight = keras.backend.variable(np.array([1., -1.], 'float32'),
                                    constraint=keras.constraints.NonNeg())
    keras.optimizers.SGD(0.5, weight_decay=1.).apply_gradients([(torch.tensor([-1., 0.]),
                                                                  weight)])
    # decayed: [0.5, -0.5]; stepped: [1.0, -0.5]; constrained: [1.0, 0.]
    np.testing.assert_allclose(keras.backend.get_value(weight), [1., 0.])
