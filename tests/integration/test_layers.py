"""Layers whose behaviour differs between training and inference (BatchNormalization,
Dropout), regularizers and constraints, in real Keras 2.3.1 models on torchk."""
import numpy as np
import pytest

import keras
from keras import backend as K
from keras import constraints, regularizers
from keras.layers import BatchNormalization, Dense, Dropout, Input
from keras.models import Model, Sequential
from torchk.passes import batch_norm_fusion

from .conftest import blobs, linear_data, linear_model, mlp, np_mse_grads, one_hot

BN_EPSILON = 1e-3  # BatchNormalization's default epsilon


def _bn_dropout_model(features=16, momentum=0.8, rate=0.5):
    inp = Input(shape=(features,))
    bn = BatchNormalization(momentum=momentum)
    normed = bn(inp)
    dropped = Dropout(rate)(normed)
    out = Dense(2)(dropped)
    model = Model(inp, out)
    return model, bn, normed, dropped


def _shifted_data(samples=64, features=16, seed=0):
    rng = np.random.RandomState(seed)
    scale = np.linspace(0.5, 3., features)
    shift = np.linspace(-4., 6., features)
    return (rng.normal(size=(samples, features)) * scale + shift).astype('float32')


def test_predict_is_deterministic_and_uses_the_moving_statistics():
    model, bn, _, _ = _bn_dropout_model()
    assert model.uses_learning_phase
    x = _shifted_data()
    rng = np.random.RandomState(3)
    gamma, beta = rng.uniform(0.5, 2., 16), rng.normal(size=16)
    mean, var = rng.normal(size=16), rng.uniform(0.5, 3., 16)
    bn.set_weights([gamma, beta, mean, var])
    first, second = model.predict(x), model.predict(x)
    np.testing.assert_array_equal(first, second)  # no dropout at inference
    kernel, bias = model.layers[-1].get_weights()
    normed = (x - mean) / np.sqrt(var + BN_EPSILON) * gamma + beta
    np.testing.assert_allclose(first, normed.dot(kernel) + bias, rtol=1e-4, atol=1e-4)
    # evaluate runs in the test phase too: its loss is the loss of predict's outputs.
    model.compile('sgd', 'mse')
    y = np.zeros((64, 2), 'float32')
    assert model.evaluate(x, y, batch_size=64, verbose=0) == pytest.approx(
        np.mean(first ** 2), rel=1e-5)


def test_learning_phase_switches_batchnorm_and_dropout():
    model, bn, normed, dropped = _bn_dropout_model(rate=0.5)
    x = _shifted_data()
    f = K.function([model.input, K.learning_phase()], [normed, dropped])

    test_normed, test_dropped = f([x, 0])
    np.testing.assert_array_equal(test_dropped, test_normed)  # dropout off
    # Initial moving statistics are mean 0, variance 1.
    np.testing.assert_allclose(test_normed, x / np.sqrt(1. + BN_EPSILON), rtol=1e-5, atol=1e-5)

    train_normed, train_dropped = f([x, 1])
    # Training-phase BatchNormalization uses the batch's own (population) statistics.
    batch_normed = (x - x.mean(0)) / np.sqrt(x.var(0) + BN_EPSILON)
    np.testing.assert_allclose(train_normed, batch_normed, rtol=1e-4, atol=1e-4)
    # Training-phase dropout zeroes about half of the units and scales the rest by 1/(1-0.5).
    dropped_out = train_dropped == 0.
    assert 0.4 < dropped_out.mean() < 0.6
    np.testing.assert_allclose(train_dropped[~dropped_out], 2. * train_normed[~dropped_out],
                               rtol=1e-6)
    # A new mask on every call.
    again = f([x, 1])[1]
    assert not np.array_equal(again == 0., dropped_out)
    # K.function does not apply the BatchNormalization updates (they are not in its updates).
    np.testing.assert_array_equal(bn.get_weights()[2], np.zeros(16, 'float32'))


def test_dropout_is_on_during_training_only():
    x, y = linear_data(64, 4, 2, seed=0)
    model = Sequential([Dense(32, input_shape=(4,)), Dropout(0.5), Dense(2)])
    model.compile(keras.optimizers.SGD(0.), 'mse')  # lr 0: the weights never change
    test_losses = {float(model.test_on_batch(x, y)) for _ in range(3)}
    train_losses = {float(model.train_on_batch(x, y)) for _ in range(3)}
    assert len(test_losses) == 1  # deterministic
    assert len(train_losses) == 3  # a new dropout mask at every step
    assert test_losses.isdisjoint(train_losses)
    assert float(model.evaluate(x, y, batch_size=64, verbose=0)) in test_losses


def test_batchnorm_moving_statistics_follow_keras_ema():
    momentum = 0.8
    model, bn, _, _ = _bn_dropout_model(momentum=momentum)
    model.compile(keras.optimizers.SGD(0.), 'mse')  # gamma/beta stay at 1/0
    x = _shifted_data(64)
    y = np.zeros((64, 2), 'float32')
    model.train_on_batch(x, y)
    n = len(x)
    # Keras: moving = moving * momentum + batch_stat * (1 - momentum), with the variance
    # corrected by n / (n - (1 + epsilon)) (normalization.py:187-203).
    expected_mean = (1. - momentum) * x.mean(0)
    expected_var = momentum * 1. + (1. - momentum) * x.var(0) * n / (n - (1. + BN_EPSILON))
    gamma, beta, moving_mean, moving_var = bn.get_weights()
    np.testing.assert_allclose(moving_mean, expected_mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(moving_var, expected_var, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(gamma, np.ones(16, 'float32'))

    # test_on_batch and predict leave the moving statistics alone.
    model.test_on_batch(x, y)
    model.predict(x)
    np.testing.assert_array_equal(bn.get_weights()[2], moving_mean)

    # With fit, the moving statistics converge to the data statistics.
    data = _shifted_data(512, seed=1)
    model.fit(data, np.zeros((512, 2), 'float32'), batch_size=64, epochs=5, verbose=0)
    _, _, moving_mean, moving_var = bn.get_weights()
    np.testing.assert_allclose(moving_mean, data.mean(0), atol=0.25)
    np.testing.assert_allclose(moving_var, data.var(0), rtol=0.2)


@pytest.mark.parametrize('fused', [False, True])
@pytest.mark.parametrize('shape, axis', [((32, 6), -1), ((8, 5, 4, 3), -1),
                                         ((8, 3, 5, 4), 1), ((4, 3, 4, 2, 3), -1)])
def test_batchnorm_training_steps_follow_the_formula(shape, axis, fused):
    """A BatchNormalization layer trained a few SGD steps on mse: its weights and moving
    statistics against the explicit formula (batch statistics, biased variance to normalize,
    Keras' unbiased correction for the moving variance, applied by 2.3.1's TF backend to the
    sample variance for channels_last images; fused into torch's batch norm, on by default,
    Bessel's correction of the biased variance: torchk/passes/batch_norm_fusion.py) with
    autograd's gradients, float64."""
    import torch
    momentum, lr, steps = 0.9, 0.1, 3
    model = Sequential([BatchNormalization(axis=axis, momentum=momentum,
                                           input_shape=shape[1:])])
    model.compile(keras.optimizers.SGD(lr), 'mse')
    rng = np.random.RandomState(0)
    batches = [((rng.normal(size=shape) * 2. + 1.).astype('float32'),
                rng.normal(size=shape).astype('float32')) for _ in range(steps)]
    axis = axis % len(shape)
    reduced = tuple(i for i in range(len(shape)) if i != axis)
    broadcast = [1] * len(shape)
    broadcast[axis] = shape[axis]
    gamma = torch.ones(shape[axis], dtype=torch.float64, requires_grad=True)
    beta = torch.zeros(shape[axis], dtype=torch.float64, requires_grad=True)
    moving_mean, moving_var = np.zeros(shape[axis]), np.ones(shape[axis])
    count = np.prod([shape[i] for i in reduced])
    batch_norm_fusion.set_enabled(fused)
    try:
        for x, y in batches:
            model.train_on_batch(x, y)
    finally:
        batch_norm_fusion.set_enabled(None)
    for x, y in batches:
        inputs = torch.from_numpy(x.astype('float64'))
        mean = inputs.mean(reduced, keepdim=True)
        var = ((inputs - mean) ** 2).mean(reduced, keepdim=True)
        normed = ((inputs - mean) / torch.sqrt(var + BN_EPSILON) * gamma.reshape(broadcast)
                  + beta.reshape(broadcast))
        loss = ((normed - torch.from_numpy(y.astype('float64'))) ** 2).mean()
        grad_gamma, grad_beta = torch.autograd.grad(loss, [gamma, beta])
        with torch.no_grad():
            gamma -= lr * grad_gamma
            beta -= lr * grad_beta
        batch_var = var.flatten().numpy()
        if fused:
            unbiased = batch_var * count / (count - 1)
        else:
            if len(shape) == 4 and axis == 3:  # TF's fused kernel returns the sample variance
                batch_var = batch_var * count / (count - 1)
            unbiased = batch_var * count / (count - (1. + BN_EPSILON))
        moving_mean = moving_mean - (moving_mean - mean.flatten().numpy()) * (1. - momentum)
        moving_var = moving_var - (moving_var - unbiased) * (1. - momentum)
    weights = model.layers[0].get_weights()
    for ours, reference in zip(weights, [gamma.detach().numpy(), beta.detach().numpy(),
                                         moving_mean, moving_var]):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)
    # Inference normalizes with the moving statistics.
    x = batches[0][0]
    expected = ((x - moving_mean.reshape(broadcast)) / np.sqrt(moving_var.reshape(broadcast)
                                                               + BN_EPSILON)
                * weights[0].reshape(broadcast) + weights[1].reshape(broadcast))
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-4, atol=1e-5)


def test_function_with_the_batchnorm_updates_reads_the_state_before_them():
    # A user's K.function that runs the model's updates and also fetches the moving mean
    # (directly, through K.identity, or through arithmetic): the outputs are computed from the
    # state before the call's updates (docs/KERAS_BACKEND.md §3), the updates then apply.
    model, bn, _, _ = _bn_dropout_model(momentum=0.8)
    x = _shifted_data()
    f = K.function([model.input, K.learning_phase()],
                   [bn.moving_mean, K.identity(bn.moving_mean), bn.moving_mean * 1.],
                   updates=model.updates)
    for call in range(2):
        before = bn.get_weights()[2]
        direct, identity, product = f([x, 1])
        np.testing.assert_array_equal(direct, before)
        np.testing.assert_array_equal(product, before)
        np.testing.assert_array_equal(identity, before)
        np.testing.assert_allclose(bn.get_weights()[2], 0.8 * before + 0.2 * x.mean(0),
                                   rtol=1e-5, atol=1e-5)


def test_batchnorm_dropout_classifier_trains():
    x, labels = blobs(256, 8, 3, seed=0)
    x = x * 5. + 10.  # badly scaled inputs, which BatchNormalization fixes
    y = one_hot(labels, 3)
    model = Sequential([BatchNormalization(input_shape=(8,)), Dense(32, activation='relu'),
                        Dropout(0.3), Dense(3, activation='softmax')])
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    history = model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    assert history.history['loss'][-1] < 0.3 * history.history['loss'][0]
    x_test, labels_test = blobs(200, 8, 3, seed=1)
    assert model.evaluate(x_test * 5. + 10., one_hot(labels_test, 3), verbose=0)[1] >= 0.95


# ------------------------------------------------------------------------------------------
# Regularizers.

def test_regularization_losses_enter_the_total_loss():
    x, y = linear_data(32, 4, 3, seed=0)
    rng = np.random.RandomState(1)
    kernel, bias = rng.normal(size=(4, 3)), rng.normal(size=3)
    model = linear_model(4, 3, kernel, bias,
                         kernel_regularizer=regularizers.l1(0.01),
                         bias_regularizer=regularizers.l2(0.1),
                         activity_regularizer=regularizers.l1_l2(l1=0.001, l2=0.002))
    assert len(model.losses) == 3
    model.compile(keras.optimizers.SGD(0.05), 'mse')
    out = x.dot(kernel) + bias
    penalties = (0.01 * np.abs(kernel).sum() + 0.1 * (bias ** 2).sum()
                 + 0.001 * np.abs(out).sum() + 0.002 * (out ** 2).sum())
    data_loss = np.mean((out - y) ** 2)
    assert float(model.test_on_batch(x, y)) == pytest.approx(data_loss + penalties, rel=1e-5)

    kernel_penalty = model.layers[0].losses[0]
    assert float(K.eval(kernel_penalty)) == pytest.approx(0.01 * np.abs(kernel).sum(), rel=1e-5)
    model.train_on_batch(x, y)
    new_kernel = model.get_weights()[0]
    assert not np.allclose(new_kernel, kernel)
    # The penalty is recomputed from the current kernel.
    assert float(K.eval(kernel_penalty)) == pytest.approx(0.01 * np.abs(new_kernel).sum(),
                                                          rel=1e-5)


def test_regularizer_gradient_enters_the_update():
    # One SGD step with an l2 kernel penalty: W <- W - lr * (dmse/dW + 2 * l2 * W).
    x, y = linear_data(32, 4, 3, seed=0)
    rng = np.random.RandomState(2)
    kernel, bias = rng.normal(size=(4, 3)), rng.normal(size=3)
    model = linear_model(4, 3, kernel, bias, kernel_regularizer=regularizers.l2(0.5),
                         bias_regularizer=regularizers.l1(0.3))
    model.compile(keras.optimizers.SGD(0.1), 'mse')
    for _ in range(2):
        g_kernel, g_bias = np_mse_grads(kernel, bias, x.astype('float64'), y.astype('float64'))
        model.train_on_batch(x, y)
        kernel = kernel - 0.1 * (g_kernel + 2. * 0.5 * kernel)
        bias = bias - 0.1 * (g_bias + 0.3 * np.sign(bias))
        np.testing.assert_allclose(model.get_weights()[0], kernel, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(model.get_weights()[1], bias, rtol=1e-5, atol=1e-6)


def test_strong_l1_makes_the_kernel_sparse():
    x, labels = blobs(256, 8, 3, seed=0)
    y = one_hot(labels, 3)
    free, penalized = (mlp(8, 16, 3, kernel_regularizer=r) for r in
                       (None, regularizers.l1(0.02)))
    for model in (free, penalized):
        model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy')
        model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    small = [np.mean(np.abs(m.get_weights()[0]) < 0.02) for m in (free, penalized)]
    assert small[1] > small[0] + 0.3, small


# ------------------------------------------------------------------------------------------
# Constraints.

def _norms(kernel):
    return np.sqrt((kernel ** 2).sum(axis=0))


CONSTRAINTS = [
    ('max_norm', lambda: constraints.max_norm(0.5),
     lambda k: (_norms(k) <= 0.5 + 1e-5).all() and np.isclose(_norms(k), 0.5, atol=1e-4).any()),
    ('non_neg', lambda: constraints.non_neg(),
     lambda k: (k >= 0.).all() and (k == 0.).any()),
    ('unit_norm', lambda: constraints.unit_norm(),
     lambda k: np.allclose(_norms(k), 1., atol=1e-5)),
    ('min_max_norm', lambda: constraints.min_max_norm(0.8, 1.2),
     lambda k: ((_norms(k) >= 0.8 - 1e-5) & (_norms(k) <= 1.2 + 1e-5)).all()),
]


@pytest.mark.parametrize('make, holds', [c[1:] for c in CONSTRAINTS],
                         ids=[c[0] for c in CONSTRAINTS])
def test_constraint_holds_after_training(make, holds):
    x, y = linear_data(128, 6, 4, seed=0)
    model = Sequential([Dense(4, input_shape=(6,), kernel_constraint=make(),
                              bias_constraint=constraints.non_neg())])
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9), 'mse')
    history = model.fit(x, y, batch_size=16, epochs=5, verbose=0)
    assert history.history['loss'][-1] < history.history['loss'][0]
    kernel, bias = model.get_weights()
    assert holds(kernel), kernel
    assert (bias >= 0.).all()
