"""tf.keras' training steps where Keras 2.3.1's differ, on TF's guides' models: 1-D data fed
as it is ("Basic training loops"), a `train_step` minimising a per-sample loss ("Customizing
what happens in fit"); TensorFlow's numbers from tests/fixtures/make_tf_keras_steps.py."""
import json
import os

import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'tf_keras',
                    'steps')
DATA = np.load(os.path.join(HERE, 'data.npz'))
with open(os.path.join(HERE, 'results.json')) as _file:
    TF = json.load(_file)


class ScalarVariables(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


class LossTracker(keras.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name='loss')
        self.mae_metric = keras.metrics.MeanAbsoluteError(name='mae')

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = keras.losses.mean_squared_error(y, y_pred)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {'loss': self.loss_tracker.result(), 'mae': self.mae_metric.result()}

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


def _assert_as_tf(case, history, weights):
    expected = TF[case]
    assert sorted(history.history) == sorted(expected['history'])
    for key, values in expected['history'].items():
        np.testing.assert_allclose(history.history[key], values, rtol=1e-5, err_msg=key)
    for got, want in zip(weights, expected['weights']):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('run', ['compiled', 'eager'])
def test_one_dimensional_data_is_fed_as_it_is(run):
    x, y = DATA['scalar_variables_x'], DATA['scalar_variables_y']
    model = ScalarVariables()
    model.compile(run_eagerly=run == 'eager', optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss=keras.losses.mean_squared_error)
    history = model.fit(x, y, epochs=10, batch_size=1000, verbose=0)
    _assert_as_tf('scalar_variables_' + run, history, model.get_weights())
    assert model.predict(x[:5], verbose=0).shape == (5,)


@pytest.mark.parametrize('run', ['compiled', 'eager'])
def test_a_train_step_minimising_a_per_sample_loss(run):
    inputs = keras.Input(shape=(8,))
    model = LossTracker(inputs, keras.layers.Dense(1)(inputs))
    model.set_weights([DATA['loss_tracker_w%d' % i] for i in range(2)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), run_eagerly=run == 'eager')
    history = model.fit(DATA['loss_tracker_x'], DATA['loss_tracker_y'], epochs=3,
                        batch_size=16, shuffle=False, verbose=0)
    _assert_as_tf('loss_tracker_' + run, history, model.get_weights())


@pytest.mark.parametrize('run', ['compiled', 'eager'])
def test_a_sequential_built_from_one_dimensional_data(run):
    x, y = DATA['sequential_of_1d_x'], DATA['sequential_of_1d_y']
    model = keras.Sequential([
        keras.layers.Lambda(lambda x: tf.stack([x, x ** 2], axis=1)),
        keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant([[.5], [-.25]]))])
    model.compile(run_eagerly=run == 'eager', optimizer=keras.optimizers.SGD(learning_rate=0.01),
                  loss=keras.losses.MSE)
    history = model.fit(x, y, epochs=5, batch_size=32, shuffle=False, verbose=0)
    _assert_as_tf('sequential_of_1d_' + run, history, model.get_weights())
    assert model.predict(x[:5], verbose=0).shape == (5, 1)
