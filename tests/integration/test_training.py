"""Real Keras 2.3.1 models trained on torchk: Sequential and functional models, multi-input /
multi-output with loss weights, fit options (validation data, class and sample weights),
generators, the *_on_batch methods, an Embedding text classifier, custom layers and Lambda.
"""
import numpy as np
import pytest

import keras
from keras import backend as K
from keras.layers import (Dense, Embedding, Flatten, GlobalAveragePooling1D, Input, Lambda,
                          concatenate)
from keras.models import Model, Sequential

from .conftest import (ACCURACY, KERAS_2_2, LinearLayer, blobs, linear_data, mlp,
                       np_categorical_crossentropy, np_softmax, one_hot, token_data)

CLASSES = 3
FEATURES = 8


def _classification(samples=256, seed=0):
    x, labels = blobs(samples, FEATURES, CLASSES, seed=seed)
    return x, one_hot(labels, CLASSES), labels


def _functional_mlp():
    inp = Input(shape=(FEATURES,))
    hidden = Dense(16, activation='relu')(inp)
    out = Dense(CLASSES, activation='softmax')(hidden)
    return Model(inp, out)


def _numpy_forward(weights, x):
    w1, b1, w2, b2 = weights
    return np_softmax(np.maximum(x.dot(w1) + b1, 0.).dot(w2) + b2)


@pytest.mark.parametrize('build', [lambda: mlp(FEATURES, 16, CLASSES), _functional_mlp],
                         ids=['sequential', 'functional'])
def test_classifier_learns_and_predicts_like_numpy(build):
    x, y, labels = _classification(256, seed=0)
    x_test, y_test, labels_test = _classification(200, seed=1)
    model = build()
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    first_loss = model.evaluate(x, y, batch_size=256, verbose=0)[0]
    history = model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    assert len(history.history['loss']) == 10
    assert history.history['loss'][-1] < 0.25 * first_loss
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=200, verbose=0)
    assert accuracy >= 0.95

    probs = model.predict(x_test, batch_size=64)
    assert probs.shape == (200, CLASSES) and probs.dtype == np.float32
    np.testing.assert_allclose(probs, _numpy_forward(model.get_weights(), x_test),
                               rtol=1e-5, atol=1e-6)
    # The reported accuracy is the accuracy of the predictions, the loss their crossentropy.
    assert accuracy == pytest.approx(np.mean(probs.argmax(-1) == labels_test), abs=1e-6)
    assert loss == pytest.approx(np_categorical_crossentropy(y_test, probs).mean(), rel=1e-5)


def test_sequential_and_functional_agree_with_the_same_weights():
    x, y, _ = _classification(64)
    seq, fun = mlp(FEATURES, 16, CLASSES), _functional_mlp()
    fun.set_weights(seq.get_weights())
    np.testing.assert_array_equal(seq.predict(x), fun.predict(x))
    # Same weights, same data, same optimizer: one step of training gives the same weights.
    for model in (seq, fun):
        model.compile(keras.optimizers.SGD(0.1), 'categorical_crossentropy')
        model.train_on_batch(x, y)
    for a, b in zip(seq.get_weights(), fun.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _two_in_two_out():
    a = Input(shape=(4,), name='a')
    b = Input(shape=(3,), name='b')
    hidden = Dense(16, activation='relu')(concatenate([a, b]))
    reg = Dense(1, name='reg')(hidden)
    cls = Dense(CLASSES, activation='softmax', name='cls')(hidden)
    return Model([a, b], [reg, cls])


def _two_in_two_out_data(samples, seed):
    rng = np.random.RandomState(seed)
    a = rng.normal(size=(samples, 4)).astype('float32')
    b = rng.normal(size=(samples, 3)).astype('float32')
    reg = (a.sum(1, keepdims=True) - b[:, :1]).astype('float32')
    labels = (a[:, 0] > 0).astype('int64') + (b[:, 0] > 0.5)
    return [a, b], [reg, one_hot(labels, CLASSES)]


@pytest.mark.parametrize('loss_weights', [{'reg': 0.5, 'cls': 2.0}, [3.0, 0.25]],
                         ids=['dict', 'list'])
def test_multi_input_multi_output_loss_weights(loss_weights):
    weights = (loss_weights if isinstance(loss_weights, list)
               else [loss_weights['reg'], loss_weights['cls']])
    x, y = _two_in_two_out_data(256, seed=0)
    model = _two_in_two_out()
    model.compile(keras.optimizers.Adam(0.01), {'reg': 'mse', 'cls': 'categorical_crossentropy'},
                  loss_weights=loss_weights, metrics={'cls': 'accuracy'})
    assert model.metrics_names == ['loss', 'reg_loss', 'cls_loss', 'cls_' + ACCURACY]

    def check(results):
        total, reg_loss, cls_loss, accuracy = results
        # The total is the weighted sum of the per-output losses...
        assert total == pytest.approx(weights[0] * reg_loss + weights[1] * cls_loss, rel=1e-5)
        # ...and each of those is the loss of the predictions, computed by numpy.
        reg_pred, cls_pred = model.predict(x, batch_size=256)
        assert reg_loss == pytest.approx(np.mean((reg_pred - y[0]) ** 2), rel=1e-5)
        assert cls_loss == pytest.approx(np_categorical_crossentropy(y[1], cls_pred).mean(),
                                         rel=1e-5)
        assert accuracy == pytest.approx(np.mean(cls_pred.argmax(-1) == y[1].argmax(-1)),
                                         abs=1e-6)
        return total

    before = check(model.evaluate(x, y, batch_size=256, verbose=0))
    history = model.fit(x, y, batch_size=32, epochs=15, verbose=0)
    assert set(history.history) == {'loss', 'reg_loss', 'cls_loss', 'cls_' + ACCURACY}
    after = check(model.evaluate(x, y, batch_size=256, verbose=0))
    assert after < 0.2 * before


def test_fit_with_validation_data_reports_the_evaluated_values():
    x, y, _ = _classification(192, seed=0)
    x_val, y_val, _ = _classification(96, seed=1)
    model = mlp(FEATURES, 16, CLASSES)
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    history = model.fit(x, y, batch_size=32, epochs=6, verbose=0, validation_data=(x_val, y_val))
    h = history.history
    assert set(h) == {'loss', ACCURACY, 'val_loss', 'val_' + ACCURACY}
    assert all(len(v) == 6 for v in h.values())
    assert h['val_loss'][-1] < h['val_loss'][0]
    # The last validation values are exactly what evaluate gives on the validation data.
    val_loss, val_acc = model.evaluate(x_val, y_val, batch_size=32, verbose=0)
    assert h['val_loss'][-1] == pytest.approx(val_loss, rel=1e-5)
    assert h['val_' + ACCURACY][-1] == pytest.approx(val_acc, abs=1e-6)
    # validation_split holds out the last samples and reports on them the same way.
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0, validation_split=0.25)
    val_loss, _ = model.evaluate(x[144:], y[144:], batch_size=32, verbose=0)
    assert history.history['val_loss'][0] == pytest.approx(val_loss, rel=1e-5)


def test_class_weight_scales_the_loss():
    x, y, labels = _classification(60)
    model = mlp(FEATURES, 16, CLASSES)
    model.compile(keras.optimizers.SGD(0.01), 'categorical_crossentropy')
    per_sample = np_categorical_crossentropy(y, model.predict(x))
    class_weight = {0: 1.0, 1: 3.0, 2: 0.5}
    # train_on_batch reports the loss of the weights before the step: sum(w * l) / n.
    loss = model.train_on_batch(x, y, class_weight=class_weight)
    expected = np.mean(np.array([class_weight[c] for c in labels]) * per_sample)
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_class_weight_steers_fit():
    # Overlapping classes: with class 0 weighted 20 times, the model predicts class 0 far
    # more often than the unweighted model.
    x, y, labels = _classification(300, seed=0)
    x = x * 0.05  # shrinks the clusters together so that the classes overlap
    counts = []
    for class_weight in (None, {0: 20.0, 1: 1.0, 2: 1.0}):
        np.random.seed(0)
        model = mlp(FEATURES, 16, CLASSES)
        model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy')
        model.fit(x, y, batch_size=50, epochs=8, verbose=0, class_weight=class_weight)
        counts.append(np.sum(model.predict(x).argmax(-1) == 0))
    assert counts[1] > counts[0] + 30
    assert counts[1] > 0.6 * len(x)


def test_sample_weight_scales_the_loss_and_zero_weights_are_ignored():
    x, y, labels = _classification(256, seed=0)
    rng = np.random.RandomState(5)
    noisy = rng.rand(len(x)) < 0.5
    y_noisy = y.copy()
    y_noisy[noisy] = one_hot((labels[noisy] + 1) % CLASSES, CLASSES)  # wrong labels
    weights = np.where(noisy, 0., 1.).astype('float32')

    model = mlp(FEATURES, 16, CLASSES)
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    per_sample = np_categorical_crossentropy(y_noisy, model.predict(x))
    loss = model.test_on_batch(x, y_noisy, sample_weight=weights)[0]
    expected = np.mean(weights * per_sample)
    if KERAS_2_2:
        # 2.2.x also divides by the fraction of non-zero weights (2.2.5 training_utils.py:446).
        expected /= np.mean(weights != 0)
    assert float(loss) == pytest.approx(expected, rel=1e-5)

    model.fit(x, y_noisy, sample_weight=weights, batch_size=32, epochs=10, verbose=0)
    x_test, y_test, _ = _classification(200, seed=1)
    assert model.evaluate(x_test, y_test, verbose=0)[1] >= 0.95


def _batches(x, y, batch_size, loop=True):
    while True:
        for i in range(0, len(x), batch_size):
            yield x[i:i + batch_size], y[i:i + batch_size]
        if not loop:
            return


class _Batches(keras.utils.Sequence):
    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return int(np.ceil(len(self.x) / float(self.batch_size)))

    def __getitem__(self, i):
        part = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[part], self.y[part]


@pytest.mark.parametrize('kind', ['generator', 'sequence'])
def test_generators(kind):
    x, y, _ = _classification(256, seed=0)
    x_test, y_test, _ = _classification(96, seed=1)
    model = mlp(FEATURES, 16, CLASSES)
    model.compile(keras.optimizers.Adam(0.01), 'categorical_crossentropy', metrics=['accuracy'])
    make = _batches if kind == 'generator' else _Batches
    history = model.fit_generator(make(x, y, 32), steps_per_epoch=8, epochs=8, verbose=0,
                                  validation_data=make(x_test, y_test, 32),
                                  validation_steps=3)
    assert history.history['loss'][-1] < 0.3 * history.history['loss'][0]
    assert history.history['val_' + ACCURACY][-1] >= 0.95

    loss, acc = model.evaluate_generator(_batches(x_test, y_test, 32), steps=3)
    # Keras 2.3.1's evaluate_generator reports the *last batch's* loss
    # (training_generator.py:420) and the running metrics over all batches; 2.2.x averages
    # the loss over the batches too (2.2.5 training_generator.py:405-411).
    last_loss = model.test_on_batch(x_test[64:], y_test[64:])[0]
    ref_loss, ref_acc = model.evaluate(x_test, y_test, batch_size=32, verbose=0)
    assert loss == pytest.approx(ref_loss if KERAS_2_2 else float(last_loss), rel=1e-5)
    assert acc == pytest.approx(ref_acc, abs=1e-6)

    def inputs_only():
        for i in range(0, 96, 32):
            yield x_test[i:i + 32]
    predictions = model.predict_generator(inputs_only(), steps=3)
    np.testing.assert_allclose(predictions, model.predict(x_test), rtol=1e-6, atol=1e-7)


def test_on_batch_methods():
    x, y, _ = _classification(64)
    model = mlp(FEATURES, 16, CLASSES)
    model.compile(keras.optimizers.SGD(0.2), 'categorical_crossentropy', metrics=['accuracy'])
    np.testing.assert_array_equal(model.predict_on_batch(x), model.predict(x, batch_size=64))

    before = model.get_weights()
    test_loss, test_acc = model.test_on_batch(x, y)
    assert model.get_weights()[0].tobytes() == before[0].tobytes()  # no update
    probs = model.predict_on_batch(x)
    assert float(test_loss) == pytest.approx(np_categorical_crossentropy(y, probs).mean(), rel=1e-5)
    assert float(test_acc) == pytest.approx(np.mean(probs.argmax(-1) == y.argmax(-1)), abs=1e-6)

    losses = []
    for _ in range(20):
        loss, acc = model.train_on_batch(x, y)
        losses.append(float(loss))
    assert losses[0] == pytest.approx(float(test_loss), rel=1e-5)  # loss before the step
    assert losses[-1] < 0.3 * losses[0]
    assert float(model.test_on_batch(x, y)[0]) < losses[-1]
    # get_weights() taken before training is a snapshot: training moved the weights away.
    assert np.abs(model.get_weights()[0] - before[0]).max() > 1e-3


@pytest.mark.parametrize('pooling', ['global_average', 'flatten'])
def test_embedding_text_classifier(pooling):
    vocab, length = 30, 12
    x, y = token_data(512, length, vocab, seed=0)
    x_test, y_test = token_data(256, length, vocab, seed=1)
    model = Sequential([Embedding(vocab, 8, input_length=length)])
    model.add(GlobalAveragePooling1D() if pooling == 'global_average' else Flatten())
    model.add(Dense(1, activation='sigmoid'))
    assert model.output_shape == (None, 1)
    model.compile(keras.optimizers.Adam(0.02), 'binary_crossentropy', metrics=['accuracy'])
    history = model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    assert history.history['loss'][-1] < 0.5 * history.history['loss'][0]
    assert model.evaluate(x_test, y_test, verbose=0)[1] >= 0.9

    # The embedding is a lookup: the model's first stage equals indexing the matrix.
    table = model.layers[0].get_weights()[0]
    lookup = K.function([model.input], [model.layers[0].output])
    np.testing.assert_array_equal(lookup([x_test[:5]])[0], table[x_test[:5]])


def test_custom_layer_trains():
    x, y = linear_data(128, 4, 2, seed=0)
    layer = LinearLayer(2, input_shape=(4,))
    model = Sequential([layer])
    assert [w.name for w in layer.trainable_weights] == [
        layer.name + '/kernel:0', layer.name + '/bias:0']
    assert model.output_shape == (None, 2)
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(model.predict(x), x.dot(kernel) + bias, rtol=1e-5, atol=1e-6)
    model.compile(keras.optimizers.SGD(0.1), 'mse')
    history = model.fit(x, y, batch_size=16, epochs=20, verbose=0)
    assert history.history['loss'][-1] < 1e-3 * history.history['loss'][0]
    # It recovers the generating weights.
    wrng = np.random.RandomState(200)
    true_w, true_b = wrng.normal(size=(4, 2)), wrng.normal(size=(2,))
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(kernel, true_w, atol=1e-2)
    np.testing.assert_allclose(bias, true_b, atol=1e-2)


def test_lambda_layers():
    x, y = linear_data(128, 4, 1, seed=0)
    inp = Input(shape=(4,))
    both = Lambda(lambda t: K.concatenate([t, t ** 2]), output_shape=(8,))(inp)
    scaled = Lambda(lambda t: 2. * t - 1.)(both)  # shape-preserving, no output_shape
    out = Dense(1)(scaled)
    model = Model(inp, out)
    assert model.output_shape == (None, 1)
    features = K.function([inp], [scaled])([x])[0]
    np.testing.assert_allclose(features, 2. * np.concatenate([x, x ** 2], 1) - 1.,
                               rtol=1e-6, atol=1e-6)
    model.compile(keras.optimizers.Adam(0.05), 'mse')
    history = model.fit(x, y, batch_size=32, epochs=20, verbose=0)
    assert history.history['loss'][-1] < 0.05 * history.history['loss'][0]


def test_lambda_without_output_shape_changing_the_shape():
    # Keras' Lambda falls back to the input shape for backends other than TF/CNTK
    # (layers/core.py:670-686); docs/KERAS_BACKEND.md §5 asks torchk to keep the true shape.
    inp = Input(shape=(4,))
    summed = Lambda(lambda t: K.sum(t, axis=1, keepdims=True))(inp)
    out = Dense(3)(summed)
    model = Model(inp, out)
    assert K.int_shape(summed) == (None, 1)
    assert model.layers[-1].get_weights()[0].shape == (1, 3)
    x = np.random.RandomState(0).normal(size=(5, 4)).astype('float32')
    kernel, bias = model.layers[-1].get_weights()
    np.testing.assert_allclose(model.predict(x), x.sum(1, keepdims=True).dot(kernel) + bias,
                               rtol=1e-5, atol=1e-6)
