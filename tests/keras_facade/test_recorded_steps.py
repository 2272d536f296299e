"""torchk.keras: train_step / test_step / predict_step recorded as programs (fit, evaluate,
predict, train_on_batch) against the same steps run eagerly (`compile(run_eagerly=True)`)."""
import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

RNG = np.random.RandomState(4)
X = RNG.randn(70, 6, 6, 1).astype('float32')
Y = np.eye(3, dtype='float32')[RNG.randint(0, 3, 70)]
W = RNG.uniform(0.5, 1.5, 70).astype('float32')


class GuideModel(keras.Model):
    """"Customizing what happens in fit()": the guide's train_step and test_step."""

    def train_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data) if hasattr(
            keras.utils, 'unpack_x_y_sample_weight') else (data + (None,))[:3]
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, sample_weight,
                                      regularization_losses=self.losses)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        x, y = data[:2]
        y_pred = self(x, training=False)
        self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


class DefaultSteps(keras.Model):
    """Overrides predict_step only: fit and evaluate run the default train and test steps."""

    def predict_step(self, data):
        return super().predict_step(data) * 2.


def _model(cls, run_eagerly, optimizer='adam'):
    keras.utils.set_random_seed(2)
    inputs = keras.Input(shape=(6, 6, 1))
    h = keras.layers.Conv2D(4, 3, activation='relu',
                            kernel_regularizer=keras.regularizers.l2(1e-3))(inputs)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.Flatten()(h)
    outputs = keras.layers.Dense(3, activation='softmax')(h)
    model = cls(inputs, outputs)
    model.compile(optimizer, 'categorical_crossentropy', metrics=['accuracy'],
                  run_eagerly=run_eagerly)
    return model


@pytest.mark.parametrize('cls, optimizer', [(GuideModel, 'adam'), (DefaultSteps, 'rmsprop'),
                                            (DefaultSteps, 'sgd')])
def test_fit_evaluate_predict_recorded_as_run_eagerly(cls, optimizer):
    results = {}
    for run_eagerly in (True, False):
        model = _model(cls, run_eagerly, optimizer)
        history = model.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0,
                            validation_data=(X[:20], Y[:20]))
        evaluated = model.evaluate(X, Y, batch_size=32, return_dict=True, verbose=0)
        step = model.train_on_batch(X[:10], Y[:10], return_dict=True)
        results[run_eagerly] = (history.history, evaluated, step, model.predict(X[:9]),
                                model.get_weights())
    eager, recorded = results[True], results[False]
    for key, values in eager[0].items():
        np.testing.assert_allclose(recorded[0][key], values, rtol=1e-5)
    assert recorded[1] == pytest.approx(eager[1], rel=1e-5)
    assert recorded[2] == pytest.approx(eager[2], rel=1e-5)
    np.testing.assert_allclose(recorded[3], eager[3], rtol=1e-5, atol=1e-6)
    for a, b in zip(recorded[4], eager[4]):  # batch-norm statistics included
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_sample_weights_in_a_recorded_step():
    results = []
    for run_eagerly in (True, False):
        model = _model(GuideModel, run_eagerly)
        model.fit(X, Y, sample_weight=W, batch_size=16, epochs=2, shuffle=False, verbose=0)
        results.append(model.get_weights())
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_a_step_is_recorded_once_per_signature_and_again_after_compile():
    calls = []

    class Counted(keras.Model):
        def train_step(self, data):
            calls.append(1)
            return super().train_step(data)
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(4,))
    model = Counted(inputs, keras.layers.Dense(1)(inputs))
    model.compile('sgd', 'mse')
    x, y = RNG.randn(30, 4).astype('float32'), RNG.randn(30, 1).astype('float32')
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert len(calls) == 1
    model.fit(x.astype('float64'), y, batch_size=8, verbose=0)  # float64 arrays: same feed
    assert len(calls) == 1
    model.compile('adam', 'mae')
    model.fit(x, y, batch_size=8, verbose=0)
    assert len(calls) == 2
