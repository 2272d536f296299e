"""Shared helpers for the integration tests: real Keras 2.3.1 models trained on torchk.

The root conftest.py points Keras at torchk (KERAS_BACKEND=torchk.core, a private KERAS_HOME,
TORCHK_DEVICE=cpu) before anything imports Keras, so the tests here simply `import keras`.

Everything is small, seeded and synthetic: each test seeds numpy, torch and `random` (Keras'
initializers draw through torchk's random ops, which take their seed from numpy's global
generator when no seed is given), and the data makers below take their own seeds.
"""
import random

import numpy as np
import pytest
import torch
from packaging.version import Version

import keras
from keras import backend as K
from keras.layers import Dense
from keras.models import Sequential


@pytest.fixture(autouse=True)
def seeded():
    """Makes weight initialization and data reproducible in every test."""
    np.random.seed(1234)
    torch.manual_seed(1234)
    random.seed(1234)
    yield


@pytest.fixture(autouse=True)
def one_torch_thread():
    """These models are tiny, so each op is latency-bound: with torch's default intra-op
    thread pool, a CPU shared with other processes makes training steps ~30x slower (measured:
    1.3 ms vs 35-50 ms per `train_on_batch` at load average 6 on 2 cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ------------------------------------------------------------------------------------------
# Keras versions. The suite runs under Keras 2.3.1 and, in a second CI venv, 2.2.5 (2.2.4 is
# checked by hand); see docs/KERAS_VERSIONS.md.

KERAS_VERSION = Version(keras.__version__)
KERAS_2_2 = KERAS_VERSION < Version('2.3')


def requires_keras(version, reason):
    """Marks a test that needs Keras `version` or later; `reason` names the Keras feature that
    older releases lack (e.g. "the keras.metrics classes, added in 2.3.0"). Use it only for a
    missing Keras feature, never to hide a torchk failure."""
    return pytest.mark.skipif(KERAS_VERSION < Version(version),
                              reason='needs Keras >= %s (running %s): %s'
                              % (version, keras.__version__, reason))


def metric_name(name):
    """The name Keras gives the string metric `name` in `metrics_names`, the history and the
    logs. 2.3.0 keeps the name as given; 2.2.x calls 'accuracy'/'acc' 'acc' and
    'crossentropy'/'ce' 'ce', and any other metric by its function's name, so 'mae' becomes
    'mean_absolute_error' (2.2.5 training.py:404-417)."""
    if not KERAS_2_2:
        return name
    if name in ('accuracy', 'acc'):
        return 'acc'
    if name in ('crossentropy', 'ce'):
        return 'ce'
    return keras.metrics.get(name).__name__


ACCURACY = metric_name('accuracy')

# The default `recurrent_activation` of LSTM, GRU and their cells: 2.3.0 changed it from
# 'hard_sigmoid' to 'sigmoid'.
RECURRENT_ACTIVATION = 'hard_sigmoid' if KERAS_2_2 else 'sigmoid'


# ------------------------------------------------------------------------------------------
# Data makers.

def blobs(samples=256, features=8, classes=3, seed=0, spread=1.0, center_seed=100):
    """Gaussian clusters, one per class. The cluster centers depend only on `center_seed`
    (and the sizes), so sets drawn with different `seed`s share one distribution.

    Returns (x float32 (samples, features), labels int64 (samples,)).
    """
    centers = np.random.RandomState(center_seed).normal(0., 2.5, size=(classes, features))
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, classes, size=samples)
    x = centers[labels] + rng.normal(0., spread, size=(samples, features))
    return x.astype('float32'), labels.astype('int64')


def one_hot(labels, classes):
    return np.eye(classes, dtype='float32')[labels]


def linear_data(samples=64, in_dim=4, out_dim=2, seed=0, noise=0.0, weight_seed=200):
    """y = x W + b (+ noise) with a fixed W, b from `weight_seed`. Returns float32 (x, y)."""
    wrng = np.random.RandomState(weight_seed)
    w = wrng.normal(size=(in_dim, out_dim))
    b = wrng.normal(size=(out_dim,))
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(samples, in_dim))
    y = x.dot(w) + b + noise * rng.normal(size=(samples, out_dim))
    return x.astype('float32'), y.astype('float32')


def token_data(samples=256, length=12, vocab=30, seed=0):
    """Sequences of token ids in [1, vocab); the label is 1 when the sequence holds more
    tokens from the upper half of the vocabulary than from the lower half (a bag-of-words
    task that an Embedding + pooling classifier can learn). Returns (x int32, y float32)."""
    rng = np.random.RandomState(seed)
    x = rng.randint(1, vocab, size=(samples, length))
    high = (x >= vocab // 2).sum(axis=1)
    y = (high * 2 > length).astype('float32')
    return x.astype('int32'), y


# ------------------------------------------------------------------------------------------
# Model makers.

def mlp(features=8, hidden=16, outputs=3, activation='softmax', hidden_layers=1, **dense_kwargs):
    """A small Sequential MLP: `hidden_layers` relu Dense layers then the output Dense."""
    model = Sequential()
    for i in range(hidden_layers):
        kwargs = dict(dense_kwargs)
        if i == 0:
            kwargs['input_shape'] = (features,)
        model.add(Dense(hidden, activation='relu', **kwargs))
    model.add(Dense(outputs, activation=activation))
    return model


def linear_model(in_dim, out_dim, kernel, bias, **dense_kwargs):
    """One Dense layer (no activation) with the given initial weights."""
    model = Sequential([Dense(out_dim, input_shape=(in_dim,), **dense_kwargs)])
    model.set_weights([np.asarray(kernel, 'float32'), np.asarray(bias, 'float32')])
    return model


# A custom layer, used by the training and saving tests.

class LinearLayer(keras.layers.Layer):
    """A custom layer: y = x . W + b, written with K.dot and add_weight."""

    def __init__(self, units, **kwargs):
        super(LinearLayer, self).__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight('kernel', (input_shape[-1], self.units),
                                      initializer='glorot_uniform')
        self.bias = self.add_weight('bias', (self.units,), initializer='zeros')
        super(LinearLayer, self).build(input_shape)

    def call(self, inputs):
        return K.dot(inputs, self.kernel) + self.bias

    def compute_output_shape(self, input_shape):
        return input_shape[:-1] + (self.units,)

    def get_config(self):
        config = super(LinearLayer, self).get_config()
        config['units'] = self.units
        return config


# ------------------------------------------------------------------------------------------
# numpy references.

def np_softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def np_categorical_crossentropy(y_true, y_pred, eps=1e-7):
    """Keras' (Theano-style) categorical crossentropy: normalize, clip by epsilon, log."""
    y_pred = y_pred / y_pred.sum(axis=-1, keepdims=True)
    y_pred = np.clip(y_pred, eps, 1. - eps)
    return -(y_true * np.log(y_pred)).sum(axis=-1)


def np_mse_grads(kernel, bias, x, y):
    """Gradients of Keras' 'mse' loss (mean over samples and outputs) of a linear layer."""
    residual = x.dot(kernel) + bias - y
    n = residual.size
    return [2. * x.T.dot(residual) / n, 2. * residual.sum(axis=0) / n]


def assert_weights_equal(a, b, **kwargs):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v, **kwargs)


def lr_of(model):
    return float(K.get_value(model.optimizer.lr))


def assert_one_step_moves_weights(inputs, features, layer, x, batch):
    """Puts a `Dense(1)` head on `features` (the output of `layer`, flattened or pooled by
    the caller), trains one mse step on `x` and asserts that every trainable weight of
    `layer` and of the head changed."""
    head = keras.layers.Dense(1)
    model = keras.models.Model(inputs, head(features))
    model.compile(optimizer=keras.optimizers.Adam(lr=0.01), loss='mse')
    target = np.random.RandomState(1).normal(size=(batch, 1)).astype('float32')
    weights = layer.trainable_weights + head.trainable_weights
    before = K.batch_get_value(weights)
    loss = model.train_on_batch(x, target)
    assert np.isfinite(loss)
    after = K.batch_get_value(weights)
    for w, old, new in zip(weights, before, after):
        assert old.shape == new.shape
        assert np.any(old != new), 'weight %s did not change' % w.name
