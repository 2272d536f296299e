"""Keras models with BatchNormalization and Dropout trained, evaluated and run with and
without the learning-phase pass (torchk/passes/phase.py): same losses, predictions and weights, and
predict never computes the batch statistics."""
import numpy as np
import pytest

import keras
from keras import backend as K
from keras import layers
from torchk import graph
from torchk.passes import batch_norm_fusion
from torchk.passes import phase


def _model():
    inputs = layers.Input((8, 8, 3))
    x = layers.Conv2D(6, 3, padding='same', use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.)(x)
    x = layers.DepthwiseConv2D(3, padding='same', use_bias=False)(x)
    x = layers.BatchNormalization(momentum=0.5)(x)
    x = layers.Dropout(0.3)(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(4, activation='softmax')(x)
    model = keras.models.Model(inputs, outputs)
    model.compile('adam', 'categorical_crossentropy', metrics=['accuracy'])
    return model


def _data():
    rng = np.random.RandomState(3)
    x = rng.rand(16, 8, 8, 3).astype('float32')
    y = np.eye(4, dtype='float32')[rng.randint(0, 4, 16)]
    return x, y


def _train(specialised, initial):
    phase.set_enabled(specialised)
    # Batch-norm fusion, which needs the phase resolved, moves the moving variance by
    # torch's estimator (tests/passes/test_batch_norm_fusion.py): off, the two runs differ
    # by the phase pass alone.
    batch_norm_fusion.set_enabled(False)
    try:
        K.clear_session()
        np.random.seed(5)  # the dropout op's seed
        model = _model()
        model.set_weights(initial)
        x, y = _data()
        history = [model.train_on_batch(x, y) for _ in range(3)]
        model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
        # Last: unspecialised, they draw Dropout's masks too (and throw them away).
        history.append(model.evaluate(x, y, batch_size=8, verbose=0))
        history.append(model.predict(x, batch_size=8))
        history.append(model.predict_on_batch(x[:5]))
        return history, model.get_weights()
    finally:
        phase.set_enabled(None)
        batch_norm_fusion.set_enabled(None)


def test_training_evaluation_and_prediction_agree():
    initial = _model().get_weights()
    specialised, weights = _train(True, initial)
    unspecialised, expected_weights = _train(False, initial)
    for got, expected in zip(specialised + weights, unspecialised + expected_weights):
        np.testing.assert_allclose(np.asarray(got, dtype='float64'),
                                   np.asarray(expected, dtype='float64'), rtol=1e-5, atol=1e-6)
    moving_means = [w for w, e in zip(weights, initial) if w.shape == (6,)]
    assert any(not np.array_equal(w, 0) for w in moving_means)


@pytest.mark.parametrize('specialised', [True, False])
def test_predict_does_not_compute_batch_statistics(monkeypatch, specialised):
    calls = []
    kernel = K.normalize_batch_in_training.__wrapped__

    def counted(*args, **kwargs):
        if not graph.inferring():
            calls.append(1)
        return kernel(*args, **kwargs)
    monkeypatch.setattr(K, 'normalize_batch_in_training', graph.op(counted))
    phase.set_enabled(specialised)
    try:
        model = _model()
        x, y = _data()
        model.predict_on_batch(x)
        model.evaluate(x, y, verbose=0)
        assert len(calls) == (0 if specialised else 2 + 2)
        model.train_on_batch(x, y)
        assert len(calls) == (2 if specialised else 6)
    finally:
        phase.set_enabled(None)
