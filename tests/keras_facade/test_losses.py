"""tf.keras' `losses.Reduction.AUTO` on Keras 2.3.1's losses (torchk/keras/losses.py)."""
import numpy as np
import pytest

import torchk.keras as keras

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
