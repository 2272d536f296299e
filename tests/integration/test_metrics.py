"""Keras 2.3.1 metrics computed on torchk, compared with numpy on the outputs of `predict`.

With `batch_size` equal to the number of samples, `evaluate` runs one batch and every stateful
mean is exactly the mean over the samples; with smaller batches (the last one shorter) the
running means must give the same values, which checks the metric update ordering of
`K.function` (updates first, then the `_is_metric` outputs).
"""
import numpy as np
import pytest

import keras
from keras import metrics as keras_metrics

from .conftest import (blobs, linear_data, metric_name, mlp, np_categorical_crossentropy,
                       one_hot, requires_keras)

# The stateful `keras.metrics` classes (TopKCategoricalAccuracy, Precision, ...) and the
# `metrics_names` taken from the names given: both came with Keras 2.3.0.
# test_keras_versions.py checks 2.2.x's stateless string metrics.
metric_classes = requires_keras('2.3', 'the keras.metrics classes, added in 2.3.0')

SAMPLES = 150


def _in_top_k(pred, targets, k):
    """TF's in_top_k for distinct values: the target's score has fewer than k larger ones."""
    target_scores = pred[np.arange(len(pred)), targets]
    return (pred > target_scores[:, None]).sum(axis=1) < k


def _binary_crossentropy(y, p, eps=1e-7):
    p = np.clip(p, eps, 1. - eps)
    return -(y * np.log(p) + (1. - y) * np.log(1. - p))


def _fitted(model, x, y, loss, metrics, epochs=1):
    """Compiles and trains briefly, so that the metrics are neither 0 nor 1."""
    model.compile(keras.optimizers.Adam(0.01), loss, metrics=metrics)
    model.fit(x, y, batch_size=32, epochs=epochs, verbose=0)
    return model


def _evaluate(model, x, y, batch_size):
    return dict(zip(model.metrics_names, model.evaluate(x, y, batch_size=batch_size, verbose=0)))


def _check(model, x, y, expected_of, batch_sizes=(SAMPLES, 64)):
    pred = model.predict(x, batch_size=SAMPLES)
    expected = expected_of(pred)
    assert sorted(expected) == sorted(model.metrics_names)
    for batch_size in batch_sizes:
        got = _evaluate(model, x, y, batch_size)
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-5, abs=1e-6), (name, batch_size)
    return expected


CLASSES = 8


@metric_classes
def test_categorical_metrics():
    x, labels = blobs(SAMPLES, 10, CLASSES, seed=0, spread=3.)
    y = one_hot(labels, CLASSES)
    model = _fitted(mlp(10, 16, CLASSES), x, y, 'categorical_crossentropy',
                    ['accuracy', 'categorical_accuracy', 'top_k_categorical_accuracy',
                     keras_metrics.TopKCategoricalAccuracy(k=2, name='top2'), 'mse', 'mae',
                     keras_metrics.CategoricalCrossentropy(name='cce')], epochs=3)

    def expected_of(pred):
        correct = pred.argmax(-1) == labels
        return {'loss': np_categorical_crossentropy(y, pred).mean(),
                'accuracy': correct.mean(),
                'categorical_accuracy': correct.mean(),
                'top_k_categorical_accuracy': _in_top_k(pred, labels, 5).mean(),
                'top2': _in_top_k(pred, labels, 2).mean(),
                'mse': np.mean((pred - y) ** 2),
                'mae': np.mean(np.abs(pred - y)),
                'cce': np_categorical_crossentropy(y, pred).mean()}

    expected = _check(model, x, y, expected_of)
    assert 0.2 < expected['accuracy'] < expected['top2'] < expected['top_k_categorical_accuracy']
    assert expected['top_k_categorical_accuracy'] < 1.


def _sparse_setup(metrics):
    x, labels = blobs(SAMPLES, 10, CLASSES, seed=0, spread=3.)
    y = labels.reshape(-1, 1).astype('float32')  # sparse targets, shape (samples, 1)
    model = _fitted(mlp(10, 16, CLASSES), x, y, 'sparse_categorical_crossentropy', metrics,
                    epochs=3)
    return model, x, y, labels


@metric_classes
def test_sparse_categorical_metrics():
    model, x, y, labels = _sparse_setup(
        ['accuracy', 'sparse_categorical_accuracy',
         keras_metrics.SparseCategoricalCrossentropy(name='scce')])

    def expected_of(pred):
        correct = pred.argmax(-1) == labels
        cce = np_categorical_crossentropy(one_hot(labels, CLASSES), pred).mean()
        return {'loss': cce, 'scce': cce,
                'accuracy': correct.mean(),
                'sparse_categorical_accuracy': correct.mean()}

    expected = _check(model, x, y, expected_of)
    assert 0.2 < expected['accuracy'] < 1.


@metric_classes
def test_sparse_top_k_metrics():
    model, x, y, labels = _sparse_setup(
        ['sparse_top_k_categorical_accuracy',
         keras_metrics.SparseTopKCategoricalAccuracy(k=3, name='top3')])

    def expected_of(pred):
        return {'loss': np_categorical_crossentropy(one_hot(labels, CLASSES), pred).mean(),
                'sparse_top_k_categorical_accuracy': _in_top_k(pred, labels, 5).mean(),
                'top3': _in_top_k(pred, labels, 3).mean()}

    expected = _check(model, x, y, expected_of)
    assert np.mean(model.predict(x).argmax(-1) == labels) < expected['top3'] < 1.


@metric_classes
def test_binary_metrics():
    x, labels = blobs(SAMPLES, 6, 2, seed=0, spread=3.)
    y = np.stack([labels, 1 - labels, (x[:, 0] > 0)], axis=1).astype('float32')  # multi-label
    model = _fitted(mlp(6, 16, 3, activation='sigmoid'), x, y, 'binary_crossentropy',
                    ['accuracy', 'binary_accuracy', 'mse', 'mae',
                     keras_metrics.BinaryAccuracy(threshold=0.7, name='acc_at_07'),
                     keras_metrics.TruePositives(name='tp'),
                     keras_metrics.FalseNegatives(name='fn'),
                     keras_metrics.Precision(name='precision'),
                     keras_metrics.Recall(name='recall')])

    def expected_of(pred):
        positive = pred > 0.5
        tp = np.sum(positive & (y == 1))
        fp = np.sum(positive & (y == 0))
        fn = np.sum(~positive & (y == 1))
        return {'loss': _binary_crossentropy(y, pred).mean(),
                'accuracy': np.mean(y == np.round(pred)),
                'binary_accuracy': np.mean(y == np.round(pred)),
                'acc_at_07': np.mean(y == (pred > 0.7)),
                'mse': np.mean((pred - y) ** 2),
                'mae': np.mean(np.abs(pred - y)),
                'tp': tp, 'fn': fn,
                'precision': tp / (tp + fp),
                'recall': tp / (tp + fn)}

    expected = _check(model, x, y, expected_of)
    assert 0.3 < expected['accuracy'] < 1.
    assert expected['accuracy'] != expected['acc_at_07']


@metric_classes
def test_regression_metrics():
    x, y = linear_data(SAMPLES, 4, 2, seed=0)
    y = y + 10.  # away from zero, for the percentage error
    model = _fitted(keras.models.Sequential([keras.layers.Dense(2, input_shape=(4,))]), x, y,
                    'mse', ['mse', 'mae', 'mape', 'logcosh',
                            keras_metrics.RootMeanSquaredError(name='rmse')], epochs=2)

    def expected_of(pred):
        err = pred - y
        return {'loss': np.mean(err ** 2),
                'mse': np.mean(err ** 2),
                'mae': np.mean(np.abs(err)),
                'mape': 100. * np.mean(np.abs(err / y)),
                'logcosh': np.mean(np.log(np.cosh(err))),
                'rmse': np.sqrt(np.mean(err ** 2))}

    _check(model, x, y, expected_of)


def _logits(model, x):
    """The output layer's inputs to its softmax, for `mlp`'s relu hidden layer."""
    (w1, b1), (w2, b2) = [layer.get_weights() for layer in model.layers]
    return np.maximum(x @ w1 + b1, 0.) @ w2 + b2


def _crossentropy_from_logits(y, logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -(y * log_softmax).sum(axis=-1)


def test_metrics_in_fit_history_are_epoch_means():
    # The per-epoch accuracy of fit is the running mean over the epoch's batches, so with
    # lr 0 (fixed weights) it equals the accuracy of predict on the whole set.
    x, labels = blobs(SAMPLES, 10, CLASSES, seed=0, spread=3.)
    y = one_hot(labels, CLASSES)
    model = mlp(10, 16, CLASSES)
    model.compile(keras.optimizers.SGD(0.), 'categorical_crossentropy',
                  metrics=['accuracy', 'mae'])
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    pred = model.predict(x)
    for epoch in range(2):
        assert history.history[metric_name('accuracy')][epoch] == pytest.approx(
            np.mean(pred.argmax(-1) == labels), abs=1e-6)
        assert history.history[metric_name('mae')][epoch] == pytest.approx(
            np.mean(np.abs(pred - y)), rel=1e-5)
        # The crossentropy of a softmax output is computed from its logits, as Keras 2.3.1's
        # TensorFlow backend computes it (no clipping of the probabilities at epsilon).
        assert history.history['loss'][epoch] == pytest.approx(
            _crossentropy_from_logits(y, _logits(model, x)).mean(), rel=1e-5)
