"""Keras 2 programs as found in the wild, run unchanged: each test is a behaviour where Keras'
TF backend (the reference) accepts what a script does (issue 12)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse
from numpy.testing import assert_allclose

import keras
from keras import backend as K
from keras.layers import Conv2D, Dense, Dropout, Input, Lambda
from keras.models import Model, Sequential, load_model

from torchk import config

from .conftest import blobs, linear_data, mlp, one_hot

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _flipped(array):
    """`array[..., ::-1]`, the BGR/RGB flip of image scripts: negative strides."""
    flipped = array[..., ::-1]
    assert any(stride < 0 for stride in flipped.strides)
    return flipped


# ------------------------------------------------------------------------------------------
# 1. Arrays with negative strides, wherever arrays enter.

def test_negative_stride_arrays_train_predict_and_set_weights():
    x, labels = blobs(200, 8, 3, seed=0)
    x_reversed = np.ascontiguousarray(x[:, ::-1])
    y_reversed = np.ascontiguousarray(one_hot(labels, 3)[:, ::-1])
    model = mlp(8, 16, 3)
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    model.fit(_flipped(x_reversed), _flipped(y_reversed), epochs=10, verbose=0)
    assert model.evaluate(_flipped(x_reversed), _flipped(y_reversed), verbose=0)[1] >= 0.9
    weights = model.get_weights()
    flipped = [np.flip(w) for w in weights]
    model.set_weights(flipped)
    for got, expected in zip(model.get_weights(), flipped):
        np.testing.assert_array_equal(got, expected)
    clone = Sequential([Dense(16, activation='relu', input_shape=(8,), weights=flipped[:2])])
    np.testing.assert_array_equal(clone.get_weights()[0], flipped[0])
    np.testing.assert_allclose(model.predict(_flipped(x_reversed)), model.predict(x),
                               rtol=1e-6)


def test_negative_stride_arrays_enter_backend_functions():
    image = np.arange(24, dtype='float32').reshape(2, 3, 4)
    np.testing.assert_array_equal(K.eval(K.variable(_flipped(image))), image[..., ::-1])
    np.testing.assert_array_equal(K.eval(K.constant(_flipped(image))), image[..., ::-1])
    variable = K.variable(np.zeros((2, 3, 4)))
    K.set_value(variable, _flipped(image))
    np.testing.assert_array_equal(K.get_value(variable), image[..., ::-1])
    K.batch_set_value([(variable, np.flip(image, axis=0))])
    np.testing.assert_array_equal(K.get_value(variable), image[::-1])
    x = K.placeholder(shape=(None, 3, 4))
    result = K.function([x], [x - _flipped(image)])([_flipped(image)])[0]
    np.testing.assert_array_equal(result, np.zeros_like(image))


# ------------------------------------------------------------------------------------------
# 2. Feeds convert to the placeholder's dtype, as a TF session does.

def test_float_and_bool_feeds_convert_to_int_and_float_inputs():
    # image_ocr builds its CTC `input_length` with np.zeros (floats) for an int64 Input.
    values = Input(shape=(3,))
    lengths = Input(shape=(1,), dtype='int64')
    flags = Input(shape=(3,), dtype='float32')
    out = Lambda(lambda t: t[0] * K.cast(t[1], 'float32') + t[2])([values, lengths, flags])
    model = Model([values, lengths, flags], out)
    x = np.ones((4, 3), 'float32')
    got = model.predict([x, np.full((4, 1), 2.7), np.eye(4, 3, dtype=bool)])
    np.testing.assert_array_equal(got, x * 2 + np.eye(4, 3))


def test_string_feed_raises_a_clear_type_error():
    model = mlp(8, 4, 3)
    with pytest.raises(TypeError, match='strings.* do not convert to float32'):
        model.predict(np.full((2, 8), 'a'))


# ------------------------------------------------------------------------------------------
# 3. K.eval of an update op applies it and returns the new value.

@pytest.mark.parametrize('make, expected', [
    (lambda v: K.update(v, np.full(3, 5.)), [5., 5., 5.]),
    (lambda v: K.update(v, v * 3.), [3., 6., 9.]),
    (lambda v: K.update_add(v, np.ones(3)), [2., 3., 4.]),
    (lambda v: K.update_sub(v, K.constant([1., 1., 1.])), [0., 1., 2.]),
])
def test_eval_of_an_update_applies_it(make, expected):
    variable = K.variable([1., 2., 3.])
    result = K.eval(make(variable))
    assert isinstance(result, np.ndarray) and result.dtype == np.float32
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(K.get_value(variable), expected)


# ------------------------------------------------------------------------------------------
# 4. in_top_k: a target tied with the k-th largest prediction is in the top k.

def test_top_k_metrics_count_ties_as_tf_does():
    # All predictions equal (a zero kernel): TF's in_top_k says every target is in the top 1.
    model = Sequential([Dense(6, input_shape=(3,), kernel_initializer='zeros',
                              activation='softmax')])
    model.compile('sgd', 'categorical_crossentropy',
                  metrics=['top_k_categorical_accuracy'])
    labels = np.arange(12) % 6
    assert model.evaluate(np.ones((12, 3)), one_hot(labels, 6), verbose=0)[1] == 1.
    top1 = K.function([model.input], [K.in_top_k(model.output, K.constant(labels, 'int32'), 1)])
    assert top1([np.ones((12, 3))])[0].all()


# ------------------------------------------------------------------------------------------
# 5. Sparse variables.

@pytest.mark.parametrize('axis', [0, 1, -1])
def test_sparse_variables_concatenate_and_eval(axis):
    first = scipy.sparse.random(4, 5, density=0.4, format='csr', random_state=0)
    second = scipy.sparse.random(4, 5, density=0.4, format='csr', random_state=1)
    a, b = K.variable(first), K.variable(second)
    assert K.is_sparse(a) and K.int_shape(a) == (4, 5) and K.dtype(a) == 'float32'
    joined = K.concatenate([a, b], axis=axis)
    assert K.is_sparse(joined)
    assert_allclose(K.eval(joined), np.concatenate([first.toarray(), second.toarray()], axis),
                    rtol=1e-6)
    dense = K.eval(K.concatenate([K.variable(first.toarray()), b], axis=axis))
    assert_allclose(dense, np.concatenate([first.toarray(), second.toarray()], axis), rtol=1e-6)
    assert K.is_sparse(K.concatenate([a, K.placeholder((4, 5), sparse=True)], axis=axis))
    w = np.random.RandomState(2).rand(5, 2)
    assert_allclose(K.eval(K.dot(a, K.variable(w))), first.toarray() @ w, rtol=1e-5)


# ------------------------------------------------------------------------------------------
# 6. Static shape inference never rejects a graph TF accepts.

def test_dropout_noise_shape_with_a_concrete_batch():
    model = Sequential([Dense(4, input_shape=(3,)), Dropout(0.5, noise_shape=(8, 1))])
    model.compile('sgd', 'mse')
    model.fit(np.ones((8, 3)), np.ones((8, 4)), batch_size=8, epochs=1, verbose=0)
    assert model.predict(np.ones((8, 3))).shape == (8, 4)


INITIAL_STATE_PROGRAM = '''
import numpy as np
from keras import backend as K
from keras.layers import GRU, LSTM, SimpleRNN, Input
from keras.models import Model
from keras.optimizers import Adam

np.random.seed(0)
inputs = Input((5, 3))
outputs = LAYER(inputs, initial_state=STATES)
model = Model(inputs, outputs)
model.compile(Adam(0.05), 'mse')
x = np.random.rand(8, 5, 3)
y = x.sum(axis=1)[:, :1].repeat(4, axis=1) / 3.
first = model.evaluate(x, y, batch_size=8, verbose=0)
model.fit(x, y, batch_size=8, epochs=20, verbose=0)
print('losses', first, model.evaluate(x, y, batch_size=8, verbose=0))
'''


@pytest.mark.parametrize('layer, states', [
    ('SimpleRNN(4)', '[K.variable(np.zeros((8, 4)))]'),
    ('GRU(4, reset_after=False)', 'K.constant(np.zeros((8, 4)))'),
    # The fused LSTM runs in its own process, so that a native crash fails only this test.
    ('LSTM(4)', '[K.variable(np.zeros((8, 4))), K.constant(np.zeros((8, 4)))]'),
], ids=['SimpleRNN', 'GRU', 'LSTM'])
def test_rnn_initial_state_from_backend_tensors_with_a_concrete_batch(layer, states, tmp_path):
    # Keras passes a non-Keras-tensor initial_state to the layer call; its batch (8) is
    # concrete where the input's is unknown.
    program = INITIAL_STATE_PROGRAM.replace('LAYER', layer).replace('STATES', states)
    environ = dict(os.environ, KERAS_BACKEND='torchk.core',
                   PYTHONPATH=os.pathsep.join([REPO, os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-c', program], cwd=str(tmp_path),
                          env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    first, last = map(float, done.stdout.split('losses')[-1].split())
    assert last < 0.5 * first


def test_sparse_categorical_crossentropy_on_channels_first_4d_output():
    x, labels = blobs(64, 3, 4, seed=0)
    images = np.repeat(np.repeat(x[:, :, None, None], 4, 2), 4, 3).astype('float32')
    targets = np.repeat(np.repeat(labels[:, None, None, None], 4, 2), 4, 3)
    inputs = Input((3, 4, 4))
    logits = Conv2D(4, 1, data_format='channels_first')(inputs)
    probabilities = Lambda(lambda t: K.softmax(t, axis=1))(logits)
    model = Model(inputs, probabilities)
    model.compile(keras.optimizers.Adam(0.05),
                  lambda y, p: K.sparse_categorical_crossentropy(y, p, axis=1))
    model.fit(images, targets, epochs=30, verbose=0)
    predicted = model.predict(images).argmax(axis=1)
    assert np.mean(predicted == targets[:, 0]) >= 0.8


def test_a_definite_mismatch_still_fails_at_build_time():
    with pytest.raises(RuntimeError, match='size of tensor a \\(4\\) must match .* \\(8\\)'):
        Dropout(0.5, noise_shape=(8, 3))(Input(batch_shape=(4, 3)))


# ------------------------------------------------------------------------------------------
# 7. Binary operators take nested Python lists, as after load_model of a Lambda.

def test_lambda_with_list_arguments_after_load_model(tmp_path):
    x, y = linear_data(64, 3, 3, seed=0)
    offset = np.array([[1., 2., 3.]], dtype='float32')
    inputs = Input((3,))
    shifted = Lambda(lambda t, offset, scale: (t - offset) * scale,
                     arguments={'offset': offset, 'scale': (2., 2., 2.)})(inputs)
    model = Model(inputs, Dense(3)(shifted))
    model.compile('adam', 'mse')
    model.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = load_model(path, safe_mode=False)  # its own Lambda: trusted
    assert isinstance(loaded.layers[1].arguments['offset'], list)
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)


# ------------------------------------------------------------------------------------------
# 9. selu and elu with TF's float32 arithmetic order.

def test_selu_layer_follows_tf_float32_arithmetic():
    import torch
    inputs = Input((50,))
    model = Model(inputs, Dense(50, activation='selu', kernel_initializer='identity',
                                use_bias=False)(inputs))
    x = np.random.RandomState(0).uniform(-5., 1., (20, 50)).astype('float32')
    exp = torch.exp(torch.from_numpy(x).to(config.device())).cpu().numpy()  # same exp kernel
    alpha = np.float32(1.6732632423543772848170429916717)  # activations.py:80-81
    scale = np.float32(1.0507009873554804934193349852946)
    expected = scale * np.where(x > 0, x, alpha * (exp - np.float32(1)))
    np.testing.assert_array_equal(model.predict(x), expected)


# ------------------------------------------------------------------------------------------
# 10. keras.wrappers.scikit_learn with current scikit-learn.

def _classifier():
    model = mlp(8, 16, 3)
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    return model


def test_keras_classifier_fit_score_cross_val_and_grid_search():
    from keras.wrappers.scikit_learn import KerasClassifier
    from sklearn.model_selection import GridSearchCV, cross_val_score
    x, labels = blobs(150, 8, 3, seed=0)
    classifier = KerasClassifier(_classifier, epochs=10, batch_size=16, verbose=0)
    classifier.fit(x, labels)
    assert classifier.score(x, labels) >= 0.9
    assert cross_val_score(classifier, x, labels, cv=3).mean() >= 0.85
    search = GridSearchCV(classifier, {'epochs': [1, 10]}, cv=2).fit(x, labels)
    assert search.best_params_ == {'epochs': 10} and search.best_score_ >= 0.85


def test_keras_regressor_cross_val_score():
    from keras.wrappers.scikit_learn import KerasRegressor
    from sklearn.model_selection import cross_val_score
    x, y = linear_data(96, 4, 1, seed=0)

    def build():
        model = Sequential([Dense(1, input_shape=(4,))])
        model.compile(keras.optimizers.Adam(0.05), 'mse')
        return model
    regressor = KerasRegressor(build, epochs=40, batch_size=16, verbose=0)
    # KerasRegressor's score is minus the loss.
    assert cross_val_score(regressor, x, y[:, 0], cv=2).mean() > -0.05
