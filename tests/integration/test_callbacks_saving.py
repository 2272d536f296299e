"""Keras 2.3.1 callbacks and h5 / JSON saving with real models on torchk."""
import csv
import os

import numpy as np
import pytest

from keras import backend as K
from keras import callbacks, optimizers
from keras.layers import BatchNormalization, Dense
from keras.models import Sequential, load_model, model_from_json

from .conftest import ACCURACY, KERAS_2_2, LinearLayer, blobs, linear_data, lr_of, mlp, one_hot

CLASSES = 3


def _data(samples=192, seed=0):
    x, labels = blobs(samples, 8, CLASSES, seed=seed, spread=2.)
    return x, one_hot(labels, CLASSES)


def _compiled(optimizer=None, **kwargs):
    model = mlp(8, 16, CLASSES, **kwargs)
    model.compile(optimizer or optimizers.Adam(0.01), 'categorical_crossentropy',
                  metrics=['accuracy'])
    return model


def _kernel_sum(model):
    """A scalar summary of the first kernel, read at once."""
    return float(np.abs(model.get_weights()[0]).sum())


# ------------------------------------------------------------------------------------------
# Callbacks.

def test_model_checkpoint_save_best_only(tmp_path):
    x, y = _data()
    x_val, y_val = _data(96, seed=1)
    model = _compiled(optimizers.Adam(0.05))
    pattern = str(tmp_path / 'best_{epoch:02d}.h5')
    latest = str(tmp_path / 'latest.h5')
    history = model.fit(x, y, batch_size=32, epochs=8, verbose=0, validation_data=(x_val, y_val),
                        callbacks=[callbacks.ModelCheckpoint(pattern, save_best_only=True),
                                   callbacks.ModelCheckpoint(latest)])
    val_losses = history.history['val_loss']
    improved = [e + 1 for e in range(8) if val_losses[e] < min(val_losses[:e] + [np.inf])]
    saved = sorted(int(name[5:7]) for name in os.listdir(str(tmp_path)) if name[:5] == 'best_')
    assert saved == improved
    assert len(saved) >= 2 and saved[0] == 1

    # The best file holds the best epoch's model.
    best = load_model(pattern.format(epoch=saved[-1]))
    assert best.evaluate(x_val, y_val, batch_size=32, verbose=0)[0] == pytest.approx(
        min(val_losses), rel=1e-5)
    # The file written after the last epoch reloads to identical predictions.
    np.testing.assert_array_equal(load_model(latest).predict(x_val), model.predict(x_val))


def test_model_checkpoint_weights_only(tmp_path):
    x, y = _data()
    path = str(tmp_path / 'weights.h5')
    model = _compiled()
    model.fit(x, y, epochs=2, verbose=0,
              callbacks=[callbacks.ModelCheckpoint(path, save_weights_only=True)])
    fresh = _compiled()
    assert not np.array_equal(fresh.predict(x), model.predict(x))
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(x), model.predict(x))


def test_early_stopping_on_a_plateau():
    x, y = _data()
    model = _compiled(optimizers.SGD(0.))  # lr 0: the loss never improves after epoch 0
    stopper = callbacks.EarlyStopping(monitor='loss', patience=2)
    history = model.fit(x, y, batch_size=32, epochs=20, verbose=0, callbacks=[stopper])
    assert stopper.stopped_epoch == 2
    assert len(history.history['loss']) == 3


def test_early_stopping_restores_the_best_weights():
    # Epochs 0-1 descend; later epochs ascend (negative learning rate), so val_loss is best
    # after epoch 1 and the callback must put those weights back.
    x, y = _data()
    model = _compiled(optimizers.SGD(0.05))
    schedule = callbacks.LearningRateScheduler(lambda epoch: 0.05 if epoch < 2 else -0.5)
    stopper = callbacks.EarlyStopping(monitor='val_loss', patience=2, restore_best_weights=True)
    history = model.fit(x, y, batch_size=32, epochs=10, verbose=0, validation_data=(x, y),
                        callbacks=[schedule, stopper])
    val_losses = history.history['val_loss']
    assert np.argmin(val_losses) == 1 and stopper.stopped_epoch == 3
    assert model.evaluate(x, y, batch_size=32, verbose=0)[0] == pytest.approx(val_losses[1],
                                                                              rel=1e-5)


def test_reduce_lr_on_plateau():
    x, y = _data()
    model = _compiled(optimizers.SGD(1e-9))  # far too small: the loss plateaus at once
    reducer = callbacks.ReduceLROnPlateau(monitor='loss', factor=0.5, patience=1, min_lr=1e-12)
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0, callbacks=[reducer])
    # Epoch 0 sets the best loss; each later epoch is a plateau of `patience` 1 and halves lr.
    # The logged lr is the value during the epoch.
    np.testing.assert_allclose(history.history['lr'], [1e-9, 1e-9, 5e-10, 2.5e-10], rtol=1e-6)
    assert lr_of(model) == pytest.approx(1.25e-10, rel=1e-6)


def test_learning_rate_scheduler_changes_the_steps():
    x, y = _data()
    model = _compiled(optimizers.SGD(0.1))
    kernel_sums = []
    record = callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: kernel_sums.append(_kernel_sum(model)))
    rates = [0.2, 0.05, 0., 0.]
    start = _kernel_sum(model)
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0,
                        callbacks=[callbacks.LearningRateScheduler(lambda e: rates[e]), record])
    np.testing.assert_allclose(history.history['lr'], rates, atol=1e-9)
    assert lr_of(model) == 0.
    # The optimizer reads the learning-rate variable at every step: the weights move in
    # epochs 0 and 1 and are frozen once the rate is 0.
    assert kernel_sums[0] != start and kernel_sums[1] != kernel_sums[0]
    assert kernel_sums[3] == kernel_sums[2] == kernel_sums[1]


def test_csv_logger(tmp_path):
    x, y = _data()
    path = str(tmp_path / 'log.csv')
    model = _compiled()
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, validation_split=0.25,
                        callbacks=[callbacks.CSVLogger(path)])
    model.fit(x, y, batch_size=32, epochs=2, verbose=0, validation_split=0.25,
              callbacks=[callbacks.CSVLogger(path, append=True)])
    with open(path) as f:
        rows = list(csv.reader(f))
    header = ['epoch', ACCURACY, 'loss', 'val_' + ACCURACY, 'val_loss']
    assert rows[0] == header
    assert [row[0] for row in rows[1:]] == ['0', '1', '2', '0', '1']
    for epoch, row in enumerate(rows[1:4]):
        for name, value in zip(header[1:], row[1:]):
            assert float(value) == pytest.approx(history.history[name][epoch], rel=1e-6)


# ------------------------------------------------------------------------------------------
# Saving.

SAVE_OPTIMIZERS = [
    ('adam', lambda: optimizers.Adam(0.01, decay=0.01)),
    ('sgd_nesterov', lambda: optimizers.SGD(0.05, momentum=0.9, nesterov=True)),
    ('rmsprop', lambda: optimizers.RMSprop(0.005)),
    ('nadam', lambda: optimizers.Nadam(0.005)),
]


@pytest.mark.parametrize('make', [c[1] for c in SAVE_OPTIMIZERS],
                         ids=[c[0] for c in SAVE_OPTIMIZERS])
def test_save_and_load_model_restores_training_state(tmp_path, make):
    x, y = _data()
    model = Sequential([BatchNormalization(input_shape=(8,)), Dense(16, activation='relu'),
                        Dense(CLASSES, activation='softmax')])
    model.compile(make(), 'categorical_crossentropy', metrics=['accuracy'])
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = load_model(path)

    assert type(loaded.optimizer) is type(model.optimizer)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    if any(w is model.optimizer.iterations for w in model.optimizer.weights):
        # (2.2.x RMSprop, Adagrad and Adadelta leave `iterations` out of their weights, so
        # it is not saved; 2.3.0 added it.)
        assert int(K.get_value(loaded.optimizer.iterations)) == 2 * 6
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    for a, b in zip(loaded.optimizer.get_weights(), model.optimizer.get_weights()):
        np.testing.assert_array_equal(a, b)
    # Continued training is the same step for step (same slots, same iteration count).
    # (fit leaves its last epoch's metric totals in place; train_on_batch only resets them
    # after the call, so start both models from clean metrics.)
    if hasattr(model, 'reset_metrics'):  # 2.3.0 added it; 2.2.x metrics keep no state.
        model.reset_metrics()
    if KERAS_2_2 and isinstance(model.optimizer, optimizers.Nadam):
        # 2.2.x Nadam leaves `m_schedule` out of its weights, so it is not saved (2.3.0 added
        # it); carry it over by hand to compare the steps.
        K.set_value(loaded.optimizer.m_schedule, K.get_value(model.optimizer.m_schedule))
    for start in (0, 32, 64):
        xb, yb = x[start:start + 32], y[start:start + 32]
        np.testing.assert_allclose(loaded.train_on_batch(xb, yb), model.train_on_batch(xb, yb),
                                   rtol=1e-6)
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_save_weights_and_load_weights(tmp_path):
    x, y = _data()
    model = _compiled()
    model.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / 'weights.h5')
    model.save_weights(path)

    same = _compiled()
    same.load_weights(path)
    np.testing.assert_array_equal(same.predict(x), model.predict(x))

    # by_name: a different model that shares only the layer names of the first layer.
    first_name = model.layers[0].name
    other = Sequential([Dense(16, activation='relu', input_shape=(8,), name=first_name),
                        Dense(5, name='another_head')])
    other.load_weights(path, by_name=True)
    np.testing.assert_array_equal(other.layers[0].get_weights()[0],
                                  model.layers[0].get_weights()[0])


def test_json_round_trip():
    x, _ = _data(32)
    model = _compiled()
    clone = model_from_json(model.to_json())
    assert [type(l) for l in clone.layers] == [type(l) for l in model.layers]
    assert clone.get_config() == model.get_config()
    assert not np.array_equal(clone.predict(x), model.predict(x))  # fresh weights
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(clone.predict(x), model.predict(x))


def test_custom_layer_round_trip(tmp_path):
    x, y = linear_data(64, 4, 2, seed=0)
    model = Sequential([LinearLayer(2, input_shape=(4,))])
    model.compile(optimizers.Adam(0.01), 'mse')
    model.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / 'custom.h5')
    model.save(path)
    loaded = load_model(path, custom_objects={'LinearLayer': LinearLayer})
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    clone = model_from_json(model.to_json(), custom_objects={'LinearLayer': LinearLayer})
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(clone.predict(x), model.predict(x))
