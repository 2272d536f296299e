"""The Keras release under test, and the differences of Keras 2.2.5 and 2.2.4 that torchk
handles (docs/KERAS_BACKEND.md §1; docs/KERAS_VERSIONS.md).

The integration suite runs under Keras 2.3.1 and, in a second CI venv, under 2.2.5; 2.2.4 is
checked by hand. Set TORCHK_EXPECT_KERAS to the release a run must test (CI does for 2.2.5),
so that a venv that silently fell back to another Keras fails instead of passing.

These tests run under every release: what they check is what the 2.2.x training code relies
on (the learning phase fed as a float, reductions over an empty axis list, a plain moving
average, stateless string metrics), and it holds for 2.3.1 too.
"""
import os

import numpy as np
import pytest
from packaging.version import Version

import keras
from keras import backend as K
from keras.layers import BatchNormalization, Dense, Lambda
from keras.models import Sequential

from torchk import config as torchk_config
from torchk import core
from torchk.passes import batch_norm_fusion

from .conftest import (KERAS_2_2, KERAS_VERSION, blobs, metric_name, mlp,
                       np_categorical_crossentropy, one_hot)

SUPPORTED = ('2.3.1', '2.2.5', '2.2.4')


# ------------------------------------------------------------------------------------------
# Which Keras, and how it loaded torchk.

def test_the_expected_keras_release_is_running():
    assert keras.__version__ in SUPPORTED
    expected = os.environ.get('TORCHK_EXPECT_KERAS')
    if expected:
        assert keras.__version__ == expected
    assert KERAS_VERSION == Version(keras.__version__)
    assert KERAS_2_2 == (keras.__version__ != '2.3.1')


def test_keras_loaded_torchk_as_its_backend():
    assert K.backend() == 'torchk.core'
    for name in ('placeholder', 'variable', 'function', 'learning_phase', 'gradients',
                 'moving_average_update'):
        assert getattr(K, name) is getattr(core, name), name


@pytest.mark.skipif(KERAS_VERSION != Version('2.2.4'), reason='Keras 2.2.4 only')
def test_keras_224_copies_every_global_of_the_backend():
    # 2.2.4 backend/__init__.py:92-106 copies every module global it does not define itself,
    # so torchk's own imports and helpers become K.* too; its config functions stay Keras'.
    from keras.backend import common
    assert K.torch is core.torch and K.clear_session is core.clear_session
    assert K.epsilon is common.epsilon and K.floatx is common.floatx


def test_the_config_is_shared_with_keras():
    # Keras' backend.common owns floatx and epsilon (all three releases); torchk reads them.
    old = K.epsilon()
    try:
        K.set_epsilon(1e-4)
        assert torchk_config.epsilon() == 1e-4
    finally:
        K.set_epsilon(old)


# ------------------------------------------------------------------------------------------
# The learning phase: 2.2.x feeds it as a float, 1. or 0. (2.2.4 training.py:1007, 1105).

def test_learning_phase_fed_as_a_float():
    x = K.placeholder(shape=(None, 3))
    out = K.in_train_phase(2. * x, x)
    f = K.function([x, K.learning_phase()], [out])
    val = np.arange(6, dtype='float32').reshape(2, 3)
    np.testing.assert_array_equal(f([val, 1.])[0], 2. * val)
    np.testing.assert_array_equal(f([val, 0.])[0], val)
    np.testing.assert_array_equal(f([val, 1])[0], 2. * val)
    np.testing.assert_array_equal(f([val, 0])[0], val)


def test_fit_loops_feed_the_training_phase():
    # With lr 0, train_on_batch and fit report the training-phase loss (outputs doubled, so 4x
    # the squared error) and test_on_batch, evaluate and predict the test phase.
    model = Sequential([Dense(3, input_shape=(3,), kernel_initializer='identity',
                              use_bias=False),
                        Lambda(lambda t: K.in_train_phase(2. * t, t))])
    model.compile(keras.optimizers.SGD(0.), 'mse')
    x = np.random.RandomState(0).normal(size=(16, 3)).astype('float32')
    y = np.zeros_like(x)
    test_loss = float(model.test_on_batch(x, y))
    assert test_loss == pytest.approx(np.mean(x ** 2), rel=1e-5)
    assert float(model.train_on_batch(x, y)) == pytest.approx(4. * test_loss, rel=1e-5)
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert history.history['loss'][0] == pytest.approx(4. * test_loss, rel=1e-5)
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(test_loss, rel=1e-5)
    np.testing.assert_allclose(model.predict(x), x, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Reductions over an empty axis list: 2.2.x weighted_masked_objective calls
# K.mean(x, axis=[]) (2.2.4 training_utils.py:420), which must leave x as it is, where
# torch.mean(x, dim=[]) reduces over all dimensions.

@pytest.mark.parametrize('axis', [[], ()], ids=['list', 'tuple'])
@pytest.mark.parametrize('name', ['mean', 'sum', 'max', 'min', 'prod', 'logsumexp', 'std',
                                  'var', 'any', 'all'])
def test_reduction_over_no_axis_keeps_every_element(name, axis):
    a = np.arange(6, dtype='float32').reshape(2, 3) - 2.
    x = K.placeholder(shape=(None, 3))
    out = getattr(K, name)(x, axis=axis)
    assert K.int_shape(out) == (None, 3)
    got = K.function([x], [out])([a])[0]
    expected = {'std': np.zeros_like(a), 'var': np.zeros_like(a),  # numpy, TF: about itself
                'any': a != 0, 'all': a != 0}.get(name, a)
    np.testing.assert_array_equal(got, expected)
    # Eager, on a value.
    np.testing.assert_array_equal(K.eval(getattr(K, name)(K.constant(a), axis=axis)),
                                  expected)


def test_sample_weighted_loss_with_2_2_normalization():
    # The 2.2.x objective reduces the per-sample losses with K.mean(.., axis=[]) and then
    # divides by the fraction of non-zero weights; 2.3.1 does neither.
    x, labels = blobs(64, 8, 3, seed=0)
    y = one_hot(labels, 3)
    weights = np.where(np.arange(64) % 4 == 0, 0., 2.).astype('float32')
    model = mlp(8, 16, 3)
    model.compile(keras.optimizers.SGD(0.), 'categorical_crossentropy')
    per_sample = np_categorical_crossentropy(y, model.predict(x))
    expected = np.mean(weights * per_sample)
    if KERAS_2_2:
        expected /= np.mean(weights != 0)
    loss = float(model.test_on_batch(x, y, sample_weight=weights))
    assert loss == pytest.approx(expected, rel=1e-5)


# ------------------------------------------------------------------------------------------
# moving_average_update: a plain exponential moving average, as the 2.3.1 TF and Theano
# backends (the 2.2.4 TF backend's zero_debias=True is not followed).

def test_moving_average_update_is_a_plain_ema():
    v = K.variable(np.zeros(3, 'float32'))
    f = K.function([], [], updates=[K.moving_average_update(v, K.constant(np.ones(3)), 0.9)])
    f([])
    np.testing.assert_allclose(K.get_value(v), 0.1, rtol=1e-6)
    f([])
    np.testing.assert_allclose(K.get_value(v), 0.19, rtol=1e-6)


@pytest.mark.parametrize('fused', [False, True])
def test_batch_normalization_moving_statistics(fused):
    batch_norm_fusion.set_enabled(fused)
    try:
        model = Sequential([BatchNormalization(momentum=0.9, input_shape=(4,))])
        model.compile(keras.optimizers.SGD(0.), 'mse')
        x = (3. + 2. * np.random.RandomState(0).normal(size=(32, 4))).astype('float32')
        model.train_on_batch(x, x)
        model.train_on_batch(x, x)
    finally:
        batch_norm_fusion.set_enabled(None)
    _, _, moving_mean, moving_variance = model.get_weights()
    # Keras corrects the batch variance by n / (n - (1 + epsilon)) (normalization.py:195);
    # its step fused into torch's batch norm (torchk/passes/batch_norm_fusion.py, on by
    # default) by Bessel's n / (n - 1), as torch and tf.keras 2 do.
    n, eps = 32., model.layers[0].epsilon
    batch_variance = x.var(axis=0) * n / (n - 1. if fused else n - (1. + eps))
    np.testing.assert_allclose(moving_mean, 0.19 * x.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(moving_variance, 0.81 + 0.19 * batch_variance, rtol=1e-5)


# ------------------------------------------------------------------------------------------
# String metrics: stateless functions averaged over the batches in 2.2.x, stateful means in
# 2.3.1; the same values either way. (test_metrics.py covers the 2.3 metric classes.)

def _in_top_k(pred, targets, k):
    target_scores = pred[np.arange(len(pred)), targets]
    return (pred > target_scores[:, None]).sum(axis=1) < k


def _check_metrics(model, x, y, expected):
    expected = {name if name == 'loss' else metric_name(name): value
                for name, value in expected.items()}
    assert sorted(model.metrics_names) == sorted(expected)
    for batch_size in (len(x), 64):
        got = dict(zip(model.metrics_names,
                       model.evaluate(x, y, batch_size=batch_size, verbose=0)))
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-5, abs=1e-6), (name, batch_size)


def test_string_metrics_categorical():
    x, labels = blobs(150, 10, 8, seed=0, spread=3.)
    y = one_hot(labels, 8)
    model = mlp(10, 16, 8)
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy',
                  metrics=['accuracy', 'top_k_categorical_accuracy', 'mse', 'mae'])
    model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    pred = model.predict(x, batch_size=150)
    correct = pred.argmax(-1) == labels
    assert 0.2 < correct.mean() < 1.
    _check_metrics(model, x, y, {
        'loss': np_categorical_crossentropy(y, pred).mean(),
        'accuracy': correct.mean(),
        'top_k_categorical_accuracy': _in_top_k(pred, labels, 5).mean(),
        'mse': np.mean((pred - y) ** 2),
        'mae': np.mean(np.abs(pred - y))})


def test_string_metrics_sparse_and_binary():
    x, labels = blobs(150, 10, 8, seed=0, spread=3.)
    model = mlp(10, 16, 8)
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['sparse_categorical_accuracy', 'sparse_top_k_categorical_accuracy'])
    y = labels.reshape(-1, 1).astype('float32')
    model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    pred = model.predict(x, batch_size=150)
    _check_metrics(model, x, y, {
        'loss': np_categorical_crossentropy(one_hot(labels, 8), pred).mean(),
        'sparse_categorical_accuracy': np.mean(pred.argmax(-1) == labels),
        'sparse_top_k_categorical_accuracy': _in_top_k(pred, labels, 5).mean()})

    x, labels = blobs(150, 6, 2, seed=0, spread=3.)
    y = np.stack([labels, 1 - labels], axis=1).astype('float32')
    model = mlp(6, 16, 2, activation='sigmoid')
    model.compile(keras.optimizers.Adam(0.01), 'binary_crossentropy',
                  metrics=['binary_accuracy'])
    pred = model.predict(x, batch_size=150)
    clipped = np.clip(pred, 1e-7, 1. - 1e-7)
    _check_metrics(model, x, y, {
        'loss': -np.mean(y * np.log(clipped) + (1. - y) * np.log(1. - clipped)),
        'binary_accuracy': np.mean(y == np.round(pred))})


# ------------------------------------------------------------------------------------------
# Keras on current Python and packages (torchk/keras_compat.py).

def test_model_from_yaml_round_trip():
    # 2.2.4 saving.py:473 calls yaml.load(yaml_string) without the Loader that PyYAML 6
    # requires (2.2.5 and 2.3.1 pass one); keras_compat must supply it.
    model = Sequential([Dense(3, input_shape=(4,), name='dense_yaml')])
    again = keras.models.model_from_yaml(model.to_yaml())
    assert again.get_config() == model.get_config()


# ------------------------------------------------------------------------------------------
# tf.keras training configurations under 2.2.x, which has no loss classes and names the
# learning rate `lr` (torchk.saving).

def _saved_loss(class_name, **config):
    return {'loss': {'class_name': class_name,
                     'config': dict({'reduction': 'auto', 'name': 'saved'}, **config)},
            'optimizer_config': {'class_name': 'Adam', 'config': {'learning_rate': 0.01}}}


def test_a_saved_loss_object_compiles_to_what_the_release_has():
    from torchk.saving import training_config
    model = mlp(3, 4)
    arguments = training_config.compile_arguments(
        _saved_loss('CategoricalCrossentropy', from_logits=True, label_smoothing=0.), model)
    y_true = one_hot(np.array([0, 2]), 4)
    logits = np.array([[1., -1., .5, 0.], [0., 2., -1., 1.]], 'float32')
    loss = arguments['loss']
    if KERAS_2_2:
        assert callable(loss) and loss.__name__ == 'categorical_crossentropy_from_logits'
        assert arguments['optimizer'].get_config()['lr'] == pytest.approx(0.01)
    else:
        assert type(loss).__name__ == 'CategoricalCrossentropy'
        assert arguments['optimizer'].get_config()['learning_rate'] == pytest.approx(0.01)
    value = K.eval(K.mean(loss(K.constant(y_true), K.constant(logits))))
    np.testing.assert_allclose(value, np_categorical_crossentropy(
        y_true, np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).mean(), rtol=1e-5)


@pytest.mark.skipif(not KERAS_2_2, reason='2.3.1 has loss classes, which take the setting')
def test_a_saved_loss_setting_keras_2_2_cannot_compute_names_the_loss():
    from torchk.saving import training_config
    with pytest.raises(ValueError, match=r'CategoricalCrossentropy has label_smoothing=0\.1'):
        training_config.compile_arguments(
            _saved_loss('CategoricalCrossentropy', label_smoothing=0.1), mlp(3, 4))
