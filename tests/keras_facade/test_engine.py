"""torchk.keras.Model: the tf.keras loop over train_step/test_step, datasets, saving."""
import os

import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf

RNG = np.random.RandomState(0)
X = RNG.randn(100, 4).astype('float32')
Y = (X[:, 0] > 0).astype('float32')[:, None]


class Counting(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, activation='sigmoid')
        self.steps = 0

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        self.steps += 1
        assert isinstance(data, tuple)
        self.tensors = isinstance(data[0], torch.Tensor)
        return super().train_step(data)


@pytest.mark.parametrize('run_eagerly', [True, False])
def test_fit_calls_train_step_per_batch_with_callbacks(run_eagerly):
    model = Counting()
    model.compile(keras.optimizers.SGD(0.5), 'binary_crossentropy', metrics=['accuracy'],
                  run_eagerly=run_eagerly)
    seen = []
    history = model.fit(X, Y, batch_size=32, epochs=3, verbose=0, validation_data=(X, Y),
                        callbacks=[keras.callbacks.LambdaCallback(
                            on_epoch_end=lambda epoch, logs: seen.append(sorted(logs)))])
    # Recorded as a program, the Python runs once (the last, smaller batch included).
    assert model.steps == (3 * 4 if run_eagerly else 1)
    assert model.tensors == run_eagerly
    assert seen[0] == ['accuracy', 'loss', 'val_accuracy', 'val_loss']
    assert history.history['loss'][-1] < history.history['loss'][0]
    logs = model.evaluate(X, Y, return_dict=True, verbose=0)
    assert logs['accuracy'] == pytest.approx(history.history['val_accuracy'][-1])
    np.testing.assert_allclose(model.predict(X, batch_size=7),
                               model.dense(torch.from_numpy(X)).detach().numpy(), rtol=1e-6)


def batches():
    for start in range(0, 100, 25):
        yield X[start:start + 25], Y[start:start + 25]


class Batches(object):
    """A re-iterable of batches (as tf.data.Dataset is)."""

    def __iter__(self):
        return batches()


def test_keras_fit_on_a_dataset_matches_arrays():
    def model():
        keras.utils.set_random_seed(1)
        built = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
        built.compile(keras.optimizers.SGD(0.1), 'mse')
        return built
    from_arrays, from_batches = model(), model()
    from_arrays.fit(X, Y, batch_size=25, epochs=2, shuffle=False, verbose=0)
    from_batches.fit(Batches(), epochs=2, verbose=0)
    for a, b in zip(from_arrays.get_weights(), from_batches.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert from_batches.evaluate(Batches(), verbose=0) == pytest.approx(
        from_arrays.evaluate(X, Y, verbose=0), rel=1e-5)
    assert from_batches.predict(Batches()).shape == (100, 1)


def test_save_without_extension_writes_a_saved_model_that_loads(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile('adam', 'mse')
    path = str(tmp_path / 'exported')
    model.save(path)
    assert os.path.isfile(os.path.join(path, 'keras_metadata.pb'))
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, keras.Sequential)
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-6)


def test_dataset_missing_offline_names_the_cache(tmp_path, monkeypatch):
    from urllib.error import URLError
    from keras.utils import data_utils
    monkeypatch.setenv('KERAS_HOME', str(tmp_path))

    def offline(*args, **kwargs):
        raise URLError('no network')
    monkeypatch.setattr(data_utils, 'urlretrieve', offline)
    from torchk.keras.datasets import mnist
    with pytest.raises(OSError, match=str(tmp_path / 'datasets')):
        mnist.load_data()
    assert not os.path.exists(tmp_path / 'datasets' / 'mnist.npz')


def test_class_weight_in_the_train_step_loop():
    model = Counting()
    model.compile(keras.optimizers.SGD(0.), 'binary_crossentropy')
    weights = {0: 0., 1: 2.}
    history = model.fit(X, Y, class_weight=weights, batch_size=100, epochs=1, verbose=0)
    prediction = model.predict(X)
    per_sample = -(Y * np.log(prediction) + (1 - Y) * np.log(1 - prediction))[:, 0]
    expected = np.mean(per_sample * np.where(Y[:, 0] == 1, 2., 0.))
    assert history.history['loss'][0] == pytest.approx(expected, rel=1e-4)
    with pytest.raises(ValueError, match='validation_split'):
        model.fit(Batches(), validation_split=0.2, verbose=0)


class StepByTape(keras.Model):
    """A tf.keras-style `train_step`: compiled_loss, minimize with the tape, compiled_metrics."""

    def train_step(self, data):
        x, y = data
        with torchk.tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred)
        self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


@pytest.mark.parametrize('metrics, expected', [
    (['mae'], ['a_mae', 'b_mae']),
    ({'a': 'mae', 'b': 'accuracy'}, ['a_mae', 'b_accuracy']),
    ([['mse'], ['accuracy', 'mae']], ['a_mse', 'b_accuracy', 'b_mae']),
], ids=['one_list_for_all', 'dict_by_output', 'list_per_output'])
def test_compiled_metrics_and_losses_track_every_output(metrics, expected):
    """Names and values as tf.keras 2.15 gives them for a two-output model (checked there:
    the same names, the same values to 4 digits)."""
    rng = np.random.RandomState(0)
    x = rng.normal(size=(8, 3)).astype('float32')
    y_a = rng.normal(size=(8, 1)).astype('float32')
    y_b = rng.randint(0, 2, size=(8, 1))
    inputs = keras.Input((3,))
    a = keras.layers.Dense(1, name='a', kernel_initializer='ones')(inputs)
    b = keras.layers.Dense(2, activation='softmax', name='b', kernel_initializer='zeros')(inputs)
    model = StepByTape(inputs, [a, b])
    model.compile(keras.optimizers.SGD(0.), ['mse', 'sparse_categorical_crossentropy'],
                  metrics=metrics)
    history = model.fit(x, [y_a, y_b], batch_size=8, epochs=1, verbose=0).history
    assert sorted(history) == sorted(expected + ['loss', 'a_loss', 'b_loss'])
    error = x.sum(axis=1, keepdims=True) - y_a
    reference = {'a_loss': np.mean(error ** 2), 'a_mse': np.mean(error ** 2),
                 'a_mae': np.mean(np.abs(error)), 'b_loss': np.log(2.),
                 'b_accuracy': np.mean(y_b == 0), 'b_mae': 0.5}
    reference['loss'] = reference['a_loss'] + reference['b_loss']
    for name, values in history.items():
        assert values[0] == pytest.approx(reference[name], rel=1e-5), name


def test_compiled_metrics_name_the_outputs_they_lack():
    model = StepByTape(*_two_outputs())
    model.compile('sgd', 'mse', metrics={'c': 'mae'})
    with pytest.raises(ValueError, match=r"names outputs \['c'\]; the model's outputs are"):
        model.fit(np.zeros((4, 3)), [np.zeros((4, 1)), np.zeros((4, 1))], verbose=0)


def _two_outputs():
    inputs = keras.Input((3,))
    return inputs, [keras.layers.Dense(1, name=name)(inputs) for name in 'ab']


class Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)

    def call(self, inputs):
        return self.dense(inputs)


def test_subclassed_build_makes_weights_and_predicts():
    model = Subclassed()
    model.build((None, 4))
    assert [tuple(w.shape) for w in model.weights] == [(4, 2), (2,)]
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(model.predict(X), X @ kernel + bias, rtol=1e-5)


@pytest.mark.parametrize('first_use', ['predict', 'call'])
def test_load_weights_before_the_first_call(tmp_path, first_use):
    """tf.keras restores a never-called subclassed model's weights when it is built."""
    saved = Subclassed()
    saved(X)
    path = str(tmp_path / 'weights.h5')
    saved.save_weights(path)
    model = Subclassed()
    model.load_weights(path)
    outputs = model.predict(X) if first_use == 'predict' else np.asarray(model(X))
    np.testing.assert_allclose(outputs, saved.predict(X), rtol=1e-6)


def test_subclassed_model_called_then_compiled_and_fitted():
    model = Subclassed()
    model(X)
    model.compile(keras.optimizers.SGD(0.1), 'mse')
    history = model.fit(X, np.zeros((100, 2)), batch_size=100, epochs=2, verbose=0).history
    assert history['loss'][1] < history['loss'][0]


@pytest.mark.parametrize('weights_only, name', [(False, 'model.h5'), (True, 'w_{epoch}.h5'),
                                                (False, 'model.keras')])
def test_model_checkpoint_makes_its_folder(tmp_path, weights_only, name):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    model.compile('sgd', 'mse')
    path = tmp_path / 'not' / 'yet' / name
    model.fit(X, Y, epochs=1, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(str(path), save_weights_only=weights_only)])
    saved = tmp_path / 'not' / 'yet' / name.format(epoch=1)
    restored = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    if weights_only:
        restored.load_weights(str(saved))
    else:
        restored = keras.models.load_model(str(saved))
    np.testing.assert_allclose(restored.predict(X), model.predict(X), rtol=1e-6)


@pytest.mark.parametrize('save_freq, expected', [
    ('epoch', ['ckpt-1.h5', 'ckpt-2.h5']), (3, ['ckpt-1.h5', 'ckpt-2.h5'])])
def test_model_checkpoint_save_freq(tmp_path, save_freq, expected):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile('sgd', 'mse')
    saved = []

    class Listing(keras.callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            saved.append(sorted(os.listdir(tmp_path)))

    x = np.zeros((8, 2), 'float32')
    checkpoint = keras.callbacks.ModelCheckpoint(str(tmp_path / 'ckpt-{epoch}.h5'),
                                                 save_freq=save_freq)
    model.fit(x, x[:, :1], batch_size=2, epochs=2, verbose=0,
              callbacks=[checkpoint, Listing()])
    assert sorted(os.listdir(tmp_path)) == expected
    if save_freq == 3:  # saved after batches 3 and 6 (the first batch of epoch 2)
        assert saved[2] == ['ckpt-1.h5'] and saved[5] == ['ckpt-1.h5', 'ckpt-2.h5']
    with pytest.raises(ValueError, match='save_freq'):
        keras.callbacks.ModelCheckpoint('x', save_freq=0)


def test_fit_takes_steps_per_epoch_batches_of_batch_size_from_arrays():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile('sgd', 'mse')
    sizes = []

    class Sizes(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            sizes.append(self.params['steps'])

    x = np.zeros((64, 2), 'float32')
    history = model.fit(x, x[:, :1], batch_size=8, steps_per_epoch=3, epochs=2, verbose=0,
                        callbacks=[Sizes()])
    assert sizes == [3, 3] and len(history.history['loss']) == 2


def test_fit_evaluate_and_predict_take_eager_tensors_as_arrays():
    import torchk.tf as tf
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, kernel_initializer='ones')])
    model.compile('sgd', 'mse')
    x = np.eye(3, dtype='float32')
    targets = tf.one_hot([0, 1, 2], depth=3)
    model.fit(tf.constant(x), targets, batch_size=3, epochs=1, verbose=0)
    loss = model.evaluate(tf.constant(x), targets, verbose=0)
    predicted = model.predict(tf.constant(x))
    assert loss == pytest.approx(np.mean((predicted - np.eye(3)) ** 2), rel=1e-5)


def test_data_one_axis_short_of_an_input_ending_in_1_is_conformed():
    inputs = keras.Input((4, 1))
    model = keras.Model(inputs, keras.layers.Flatten()(inputs))
    model.compile('sgd', 'mse')
    x = np.arange(8, dtype='float32').reshape(2, 4)
    np.testing.assert_allclose(model.predict(x), x)
    np.testing.assert_allclose(model.predict(x[..., None, None]), x)
    assert model.evaluate(x, x, verbose=0) == 0.
    with pytest.raises(ValueError, match='expected input_\\d+ to have 3 dimensions'):
        model.predict(x[:, :, None, None, None])


def test_subclassed_model_compiled_before_its_first_fit_on_a_dataset():
    import torchk.tf as tf

    class TwoLayers(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(4, activation='relu')
            self.out = keras.layers.Dense(1)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    rng = np.random.RandomState(0)
    x = rng.rand(64, 3).astype('float32')
    y = x.sum(1, keepdims=True)
    model = TwoLayers()
    model.compile(keras.optimizers.Adam(0.05), 'mse')
    history = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(16), epochs=20,
                        verbose=0).history
    assert history['loss'][-1] < 0.1 * history['loss'][0]


def test_targets_are_ignored_by_a_model_compiled_without_a_loss():
    import torchk.tf as tf

    class Penalty(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(tf.reduce_mean(tf.square(inputs)))
            return inputs

    inputs = keras.Input((3,))
    model = keras.Model(inputs, Penalty()(keras.layers.Dense(3)(inputs)))
    model.compile(keras.optimizers.SGD(0.1))
    x = np.random.RandomState(0).rand(8, 3).astype('float32')
    losses = [model.fit(x, x, epochs=1, verbose=0).history['loss'][0] for _ in range(5)]
    assert losses[-1] < losses[0]


def test_metric_data_may_be_lists_of_numbers():
    metric = keras.metrics.AUC()
    metric.update_state([0, 1, 0, 0], [0.3, 0.5, 0.8, 0.9])
    assert float(metric.result()) == pytest.approx(1 / 3, abs=1e-3)  # 1 of 3 negatives below
    penalty = keras.layers.Dense(1)
    penalty.build((None, 2))
    with pytest.raises(ValueError, match="aggregation must be 'mean'"):
        penalty.add_metric(penalty.kernel, name='k', aggregation='sum')


@pytest.mark.parametrize('run_eagerly', [True, False])
def test_one_callback_alone_is_taken_as_tf_keras_takes_it(run_eagerly):
    """TF's audio tutorial: `fit(..., callbacks=tf.keras.callbacks.EarlyStopping(...))`."""
    class Counter(keras.callbacks.Callback):
        epochs = 0

        def on_epoch_end(self, epoch, logs=None):
            Counter.epochs += 1

    model = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    model.compile('sgd', 'mse', run_eagerly=run_eagerly)
    model.fit(X, Y, epochs=2, verbose=0, callbacks=Counter())
    model.evaluate(X, Y, verbose=0, callbacks=Counter())
    assert Counter.epochs == 2
