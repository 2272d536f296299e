"""tf.keras' `losses.Reduction.AUTO` on Keras 2.3.1's losses (torchk/keras/losses.py)."""
import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

Y_TRUE = np.array([[1., 2., 3.], [0., 0., 1.]], 'float32')
Y_PRED = np.zeros((2, 3), 'float32')


class SquaredError(keras.losses.LossFunctionWrapper):
    """keras-io's wrapped custom loss, with tf.keras' default reduction."""

    def __init__(self, reduction=keras.losses.Reduction.AUTO, name='squared_error'):
        super().__init__(lambda y_true, y_pred: (y_true - y_pred) ** 2, reduction=reduction,
                         name=name)


@pytest.mark.parametrize('reduction, expected', [
    ('auto', np.mean(Y_TRUE ** 2)), ('sum_over_batch_size', np.mean(Y_TRUE ** 2)),
    ('sum', np.sum(Y_TRUE ** 2))])
def test_auto_reduction_is_the_mean_over_the_batch(reduction, expected):
    assert float(SquaredError(reduction=reduction)(Y_TRUE, Y_PRED)) == pytest.approx(expected)
    assert keras.losses.Reduction.AUTO in keras.losses.Reduction.all()


@pytest.mark.parametrize('y_true_shape, y_pred_shape', [((2, 1), (2, 5, 1)), ((2, 5, 1), (2, 5)),
                                                         ((2, 5), (2, 5))])
def test_loss_classes_squeeze_a_last_axis_of_one(y_true_shape, y_pred_shape):
    """tf.keras' LossFunctionWrapper: predictions (or targets) of one more axis, of size 1,
    are squeezed before the loss function (keras-io's engineers guide: an Embedding +
    Dense(1) model fit on (batch, 1) labels with 'mse')."""
    rng = np.random.RandomState(0)
    y_true, y_pred = rng.rand(*y_true_shape).astype('float32'), rng.rand(*y_pred_shape)
    squeezed_true = y_true.reshape(y_true.shape[:2]) if len(y_true_shape) == 3 else y_true
    squeezed_pred = y_pred.reshape(y_pred.shape[:2]) if len(y_pred_shape) == 3 else y_pred
    expected = np.mean(np.mean((squeezed_pred - squeezed_true) ** 2, axis=-1))
    actual = keras.losses.MeanSquaredError()(keras.backend.constant(y_true),
                                             keras.backend.constant(y_pred.astype('float32')))
    np.testing.assert_allclose(float(actual), expected, rtol=1e-6)


@pytest.mark.parametrize('run_eagerly', [True, False])
def test_a_model_of_token_outputs_fits_labels_of_one_per_sample(run_eagerly):
    inputs = keras.Input(shape=(None,), dtype='int64')
    x = keras.layers.Embedding(input_dim=10, output_dim=4)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    model.compile(optimizer='adam', loss='mse', run_eagerly=run_eagerly)
    tokens, labels = np.array([[1, 2, 3], [4, 5, 0]]), np.array([[0.], [1.]], 'float32')
    predictions = model.predict(tokens)[..., 0]
    expected = np.mean(np.mean((predictions - labels) ** 2, axis=-1))
    dataset = tf.data.Dataset.from_tensor_slices((tokens, labels)).batch(2)
    np.testing.assert_allclose(model.evaluate(dataset, verbose=0), expected, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(tokens, labels, verbose=0), expected, rtol=1e-5)
