"""Small seeded models train to their float32 accuracy thresholds under `mixed_bfloat16` and
`mixed_float16` (torchk.mixed_precision), with the tf.keras guide's float32 output layer."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import keras
from keras import backend as K
from keras.layers import (LSTM, Activation, BatchNormalization, Conv2D, Dense, Dropout,
                          Embedding, Flatten, MaxPooling2D)
from keras.models import Sequential
from torchk import mixed_precision

from .conftest import blobs, one_hot, token_data

POLICIES = ['float32', 'mixed_bfloat16', 'mixed_float16']


@pytest.fixture(params=POLICIES)
def policy(request):
    mixed_precision.set_global_policy(request.param)
    yield request.param
    mixed_precision.set_global_policy('float32')


def _head(units, activation):
    """The output layers: under a mixed policy the activation computes in float32."""
    return [Dense(units), Activation(activation, dtype='float32')]


def _images(samples, seed):
    """8x8 noise images holding a bright 3x3 square in the top or the bottom half (label)."""
    rng = np.random.RandomState(seed)
    x = rng.rand(samples, 8, 8, 1).astype('float32') * 0.5
    labels = rng.randint(0, 2, size=samples)
    for image, label, column in zip(x, labels, rng.randint(0, 6, size=samples)):
        row = 4 * label + rng.randint(0, 2)
        image[row:row + 3, column:column + 3] += 1.
    return x, labels


def test_mlp_classifier_trains(policy):
    x, labels = blobs(256, 8, 3, seed=0)
    model = Sequential([Dense(16, activation='relu', input_shape=(8,)), *_head(3, 'softmax')])
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    before = model.evaluate(x, one_hot(labels, 3), verbose=0)[0]
    model.fit(x, one_hot(labels, 3), batch_size=32, epochs=8, verbose=0)
    after, accuracy = model.evaluate(x, one_hot(labels, 3), verbose=0)
    assert after < 0.3 * before, (before, after)
    assert accuracy >= 0.9


def test_batchnorm_dropout_classifier_trains(policy):
    x, labels = blobs(256, 8, 3, seed=0)
    model = Sequential([BatchNormalization(input_shape=(8,)), Dense(32, activation='relu'),
                        Dropout(0.3), *_head(3, 'softmax')])
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    model.fit(x * 5. + 10., one_hot(labels, 3), batch_size=32, epochs=10, verbose=0)
    x_test, labels_test = blobs(200, 8, 3, seed=1)
    assert model.evaluate(x_test * 5. + 10., one_hot(labels_test, 3), verbose=0)[1] >= 0.95
    assert all(w.dtype == torch.float32 for w in model.weights)


def test_cnn_trains(policy):
    x, labels = _images(256, seed=0)
    model = Sequential([Conv2D(8, 3, activation='relu', input_shape=(8, 8, 1)),
                        MaxPooling2D(), Flatten(), *_head(2, 'softmax')])
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    model.fit(x, one_hot(labels, 2), batch_size=32, epochs=10, verbose=0)
    x_test, labels_test = _images(200, seed=1)
    assert model.evaluate(x_test, one_hot(labels_test, 2), verbose=0)[1] >= 0.95
    predictions = model.predict(x_test)
    assert predictions.dtype == np.float32
    np.testing.assert_allclose(predictions.sum(-1), 1., rtol=1e-5)


def test_lstm_trains(policy):
    x, y = token_data(256, length=12, vocab=30, seed=0)
    model = Sequential([Embedding(30, 8, input_length=12), LSTM(16), *_head(1, 'sigmoid')])
    model.compile(keras.optimizers.Adam(0.01), 'binary_crossentropy', metrics=['accuracy'])
    model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    x_test, y_test = token_data(200, length=12, vocab=30, seed=1)
    assert model.evaluate(x_test, y_test, verbose=0)[1] >= 0.85


def test_ctc_loss_computes_in_float32(policy):
    """keras/examples/image_ocr.py's pattern: CTC inside the model on a low-precision
    softmax output, the loss float32."""
    rng = np.random.RandomState(0)
    features = keras.layers.Input((10, 6))
    labels = keras.layers.Input((3,))
    lengths = [keras.layers.Input((1,), dtype='int64') for _ in range(2)]
    probabilities = Dense(5, activation='softmax')(Dense(12, activation='relu')(features))
    loss = keras.layers.Lambda(lambda a: K.ctc_batch_cost(*a))(
        [labels, probabilities] + lengths)
    model = keras.models.Model([features, labels] + lengths, loss)
    model.compile(keras.optimizers.Adam(0.01), lambda y_true, y_pred: y_pred)
    assert (model.output.dtype, model.total_loss.dtype) == ('float32', 'float32')
    inputs = [rng.rand(16, 10, 6).astype('float32'), rng.randint(0, 4, (16, 3)).astype('float32'),
              np.full((16, 1), 10), np.full((16, 1), 3)]
    history = model.fit(inputs, np.zeros((16, 1)), epochs=15, batch_size=16, verbose=0)
    losses = history.history['loss']
    assert np.isfinite(losses).all() and losses[-1] < 0.8 * losses[0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')
@pytest.mark.parametrize('name', ['mixed_bfloat16', 'mixed_float16'])
def test_mixed_precision_trains_on_cuda(name):
    script = '''
import numpy as np, keras
from torchk import mixed_precision
mixed_precision.set_global_policy(%r)
from keras.layers import Activation, BatchNormalization, Conv2D, Dense, Flatten
rng = np.random.RandomState(0)
x = rng.rand(128, 8, 8, 1).astype('float32')
y = np.eye(2, dtype='float32')[(x[:, :4].mean((1, 2, 3)) > x[:, 4:].mean((1, 2, 3))).astype(int)]
model = keras.models.Sequential([Conv2D(8, 3, activation='relu', input_shape=(8, 8, 1)),
    BatchNormalization(momentum=0.9), Flatten(), Dense(2),
    Activation('softmax', dtype='float32')])
model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
model.fit(x, y, batch_size=32, epochs=20, verbose=0)
print(model.layers[0].weights[0].device, model.layers[0].output.dtype,
      model.evaluate(x, y, verbose=0)[1])
''' % name
    environment = dict(os.environ, TORCHK_DEVICE='cuda')
    done = subprocess.run([sys.executable, '-c', script], env=environment, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    device, dtype, accuracy = done.stdout.split()[-3:]
    assert device.startswith('cuda')
    assert dtype == mixed_precision.Policy(name).compute_dtype
    assert float(accuracy) >= 0.9
