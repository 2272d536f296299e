"""tf.keras' metric results (torchk.keras.metrics): a mean of no values is 0."""
import numpy as np
import pytest

import torchk.keras as keras

Y_TRUE = np.array([[0.], [1.], [1.], [0.]], 'float32')
Y_PRED = np.array([[0.2], [0.8], [0.3], [0.1]], 'float32')


@pytest.mark.parametrize('name, expected', [
    ('Mean', np.mean(Y_PRED)),
    ('BinaryAccuracy', 0.75),
    ('Accuracy', 0.),
    ('MeanSquaredError', np.mean((Y_TRUE - Y_PRED) ** 2)),
    ('MeanAbsoluteError', np.mean(np.abs(Y_TRUE - Y_PRED))),
    ('RootMeanSquaredError', np.sqrt(np.mean((Y_TRUE - Y_PRED) ** 2))),
    ('Precision', 1.),
    ('Recall', 0.5),
    ('AUC', 1.),
])
def test_result_before_any_update_is_zero(name, expected):
    metric = getattr(keras.metrics, name)()
    assert float(metric.result()) == 0.
    if name == 'Mean':
        metric.update_state(Y_PRED)
    else:
        metric.update_state(Y_TRUE, Y_PRED)
    assert float(metric.result()) == pytest.approx(expected, rel=1e-5)
    metric.reset_state()
    assert float(metric.result()) == 0.


def test_sum_is_unchanged():
    metric = keras.metrics.Sum()
    assert float(metric.result()) == 0.
    metric.update_state(Y_PRED)
    assert float(metric.result()) == pytest.approx(Y_PRED.sum())


@pytest.mark.parametrize('value', [2.5, np.float32(2.5), np.float64(2.5), np.array(2.5)],
                         ids=['float', 'float32', 'float64', 'array0d'])
def test_a_mean_tracks_numbers(value):
    """`loss_tracker.update_state(float(loss))` in a custom loop: a number, a numpy scalar or
    a 0-d array is one value (it was fed as shape (1,) to the metric's scalar input)."""
    tracker = keras.metrics.Mean()
    tracker.update_state(value)
    tracker.update_state(np.array([0.5, 1.5], 'float32'))
    assert float(tracker.result()) == pytest.approx(np.mean([2.5, 0.5, 1.5]))


def test_one_list_of_metric_objects_serves_several_models():
    """TF's imbalanced data tutorial compiles every model with one list of metric objects."""
    rng = np.random.RandomState(0)
    x = rng.rand(64, 4).astype('float32')
    y = (x[:, 0] > .5).astype('float32')[:, None]
    shared = [keras.metrics.BinaryAccuracy(name='accuracy')]

    def model_and_accuracy(bias):
        model = keras.Sequential([keras.layers.Dense(
            1, activation='sigmoid', input_shape=(4,), kernel_initializer='ones',
            bias_initializer=keras.initializers.Constant(bias))])
        model.compile(optimizer='sgd', loss='binary_crossentropy', metrics=shared)
        predicted = 1 / (1 + np.exp(-(x.sum(1, keepdims=True) + bias)))
        return model, np.mean((predicted > .5) == y)
    first, first_accuracy = model_and_accuracy(-2.)
    assert first.evaluate(x, y, verbose=0)[1] == pytest.approx(first_accuracy)
    second, second_accuracy = model_and_accuracy(-1.)
    assert first_accuracy != second_accuracy
    assert second.evaluate(x, y, verbose=0)[1] == pytest.approx(second_accuracy)
    assert first.evaluate(x, y, verbose=0)[1] == pytest.approx(first_accuracy)
    second.fit(x, y, epochs=1, verbose=0)
    first.fit(x, y, epochs=1, verbose=0)
