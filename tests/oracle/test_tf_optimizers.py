"""torchk.keras' optimizers against tf_keras' (tf.keras 2.11+ optimizers): the arguments
that Keras 2.3.1's optimizers lack (weight decay, AdamW, RMSprop's momentum and centered,
Adagrad's initial accumulator), stepped with the same gradients by `apply_gradients`."""
import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
import torch  # noqa: E402

import torchk.keras  # noqa: E402

RNG = np.random.RandomState(3)
KERNEL = RNG.uniform(-1, 1, (3, 2)).astype('float32')
BIAS = RNG.uniform(-1, 1, (2,)).astype('float32')
GRADIENTS = [(RNG.normal(size=(3, 2)).astype('float32'), RNG.normal(size=(2,)).astype('float32'))
             for _ in range(5)]


def _schedule(keras):
    return keras.optimizers.schedules.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)


# id: a function of the keras module (torchk.keras or tf_keras) returning the optimizer
CASES = {
    'adagrad_default': lambda keras: keras.optimizers.Adagrad(),
    'adagrad_initial_accumulator': lambda keras: keras.optimizers.Adagrad(
        0.1, initial_accumulator_value=0.5),
    'rmsprop_momentum': lambda keras: keras.optimizers.RMSprop(0.01, momentum=0.9),
    'rmsprop_centered': lambda keras: keras.optimizers.RMSprop(0.01, centered=True),
    'rmsprop_momentum_centered_positional': lambda keras: keras.optimizers.RMSprop(
        0.01, 0.8, 0.5, 1e-6, True),
    'adamw': lambda keras: keras.optimizers.AdamW(0.01, weight_decay=0.1),
    'adamw_defaults': lambda keras: keras.optimizers.AdamW(),
    'adamw_schedule': lambda keras: keras.optimizers.AdamW(_schedule(keras), 0.2),
    'adam_weight_decay': lambda keras: keras.optimizers.Adam(0.01, weight_decay=0.05),
    'sgd_momentum_weight_decay': lambda keras: keras.optimizers.SGD(0.1, 0.9,
                                                                    weight_decay=0.05),
    'rmsprop_momentum_weight_decay': lambda keras: keras.optimizers.RMSprop(
        0.01, momentum=0.9, weight_decay=0.1),
}


def _tf_steps(make, exclude_bias):
    kernel, bias = tf.Variable(KERNEL, name='kernel'), tf.Variable(BIAS, name='bias')
    optimizer = make(tf_keras)
    if exclude_bias:
        optimizer.exclude_from_weight_decay(var_names=['bias'])
    for g_kernel, g_bias in GRADIENTS:
        optimizer.apply_gradients([(tf.constant(g_kernel), kernel), (tf.constant(g_bias), bias)])
    return kernel.numpy(), bias.numpy()


def _torchk_steps(make, exclude_bias):
    K = torchk.keras.backend
    kernel, bias = K.variable(KERNEL, name='kernel'), K.variable(BIAS, name='bias')
    optimizer = make(torchk.keras)
    if exclude_bias:
        optimizer.exclude_from_weight_decay(var_names=['bias'])
    for g_kernel, g_bias in GRADIENTS:
        optimizer.apply_gradients([(torch.tensor(g_kernel), kernel),
                                   (torch.tensor(g_bias), bias)])
    return K.get_value(kernel), K.get_value(bias)


DECAYING = sorted(case for case in CASES if 'weight_decay' in case or 'adamw' in case)


@pytest.mark.parametrize('case, exclude_bias',
                         [(case, False) for case in sorted(CASES)] +
                         [(case, True) for case in DECAYING],
                         ids=lambda value: {False: 'all', True: 'bias_excluded'}.get(value, value))
def test_steps_match_tf_keras(case, exclude_bias):
    expected = _tf_steps(CASES[case], exclude_bias)
    got = _torchk_steps(CASES[case], exclude_bias)
    for name, e, g in zip(('kernel', 'bias'), expected, got):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6, err_msg=name)
