"""Keras layers, models and metrics called on tensors compute at once (torchk.keras.eager)."""
import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf

X = np.random.RandomState(0).randn(5, 3).astype('float32')


def test_dense_on_a_tensor_is_eager_and_differentiable():
    layer = keras.layers.Dense(2, bias_initializer='ones')
    out = layer(torch.from_numpy(X))
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(out.detach().numpy(), X @ kernel + bias, rtol=1e-5)
    grad, = torch.autograd.grad(out.sum(), [layer.kernel])
    np.testing.assert_allclose(grad.numpy(), X.T @ np.ones((5, 2)), rtol=1e-5)
    # Another batch size reuses the program (batch axis unknown).
    assert layer(X[:2]).shape == (2, 2)
    assert len(layer._torchk_eager_programs) == 1


def test_training_flag_and_updates():
    dropout = keras.layers.Dropout(0.5)
    ones = torch.ones(200, 10)
    assert torch.equal(dropout(ones, training=False).cpu(), ones)  # computed on torchk's device
    dropped = dropout(ones, training=True)
    assert 0 < (dropped == 0).float().mean() < 1
    norm = keras.layers.BatchNormalization(momentum=0.)
    norm(torch.from_numpy(X), training=True)
    np.testing.assert_allclose(keras.backend.get_value(norm.moving_mean), X.mean(0),
                               rtol=1e-5, atol=1e-6)


def test_subclassed_model_losses_are_those_of_the_last_call():
    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1, kernel_initializer='ones')

        def call(self, inputs):
            outputs = self.dense(inputs)
            self.add_loss(keras.backend.mean(outputs))
            return outputs

    model = Model()
    for batch in (X[:2], X[2:]):
        outputs = model(torch.from_numpy(batch))
        losses = model.losses
        assert len(losses) == 1
        assert float(losses[0].detach()) == pytest.approx(float(batch.sum(1).mean()), rel=1e-5)
        np.testing.assert_allclose(outputs.detach().numpy(), batch.sum(1, keepdims=True),
                                   rtol=1e-5)


@pytest.mark.parametrize('metric, args, expected', [
    (keras.metrics.Mean, ([1., 2., 3., 6.],), 3.),
    (keras.metrics.SparseCategoricalAccuracy, ([[1], [0], [1]], [[.1, .9], [.8, .2], [.7, .3]]),
     2 / 3),
    (keras.metrics.AUC, ([0, 0, 1, 1], [.1, .4, .35, .8]), 0.75),
])
def test_metric_update_state_and_result(metric, args, expected):
    instance = metric()
    arrays = [np.array(a, dtype='float32') for a in args]
    instance.update_state(*[a[:1] for a in arrays])
    instance.reset_state()
    instance.update_state(*arrays)
    assert float(instance.result()) == pytest.approx(expected, abs=1e-3)


def test_metric_call_accumulates():
    mean = keras.metrics.Mean()
    mean(torch.tensor([2.]))
    assert float(mean(torch.tensor([4.]))) == 3.


def test_sequential_regularization_losses_count_once():
    """A Sequential's `get_losses_for(None)` returns its layers' regularization losses twice
    (the network keeps them too); an eager call counts each once, as Keras' `losses` does."""
    model = keras.Sequential([keras.layers.Dense(
        2, input_shape=(3,), kernel_regularizer=keras.regularizers.l2(0.1))])
    model(X)
    kernel = model.get_weights()[0]
    assert len(model.losses) == 1
    np.testing.assert_allclose(float(model.losses[0].detach()), 0.1 * (kernel ** 2).sum(),
                               rtol=1e-5)


class RunningSum(keras.layers.Layer):
    """keras-io's `ComputeSum`: a `tf.Variable` written in `call`, and returned."""

    def __init__(self, size):
        super().__init__()
        self.total = tf.Variable(initial_value=tf.zeros((size,)), trainable=False)

    def call(self, inputs):
        self.total.assign_add(tf.reduce_sum(inputs, axis=0))
        return self.total


def test_variable_written_in_an_eager_call_is_updated_and_returned():
    layer = RunningSum(2)
    x = np.array([[1., 2.], [3., 4.]], 'float32')
    np.testing.assert_allclose(np.asarray(layer(x)), [4., 6.])
    np.testing.assert_allclose(np.asarray(layer(x)), [8., 12.])
    np.testing.assert_allclose(layer.total.numpy(), [8., 12.])
    assert layer.non_trainable_weights == [layer.total]


def test_float64_tensors_are_cast_to_floatx_in_eager_calls():
    layer = keras.layers.Dense(2, kernel_initializer='ones')
    x = torch.ones((3, 4), dtype=torch.float64)
    y = layer(x)
    assert y.dtype == torch.float32
    np.testing.assert_allclose(np.asarray(y), np.full((3, 2), 4.))


class ActivityPenalty(keras.layers.Layer):
    def call(self, inputs):
        self.add_loss(0.5 * tf.reduce_sum(inputs))
        return inputs


class PenalizedBlock(keras.layers.Layer):
    """keras-io's SparseMLP: a plain layer whose sublayers add losses."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2, kernel_initializer='ones')
        self.penalty = ActivityPenalty()

    def call(self, inputs):
        return self.penalty(self.dense(inputs))


def test_losses_of_an_eager_layer_call_are_tensors_that_differentiate():
    block = PenalizedBlock()
    x = np.ones((3, 4), 'float32')
    with tf.GradientTape() as tape:
        outputs = block(x)
        loss = tf.reduce_sum(outputs) + sum(block.losses)
    assert isinstance(block.losses[0], torch.Tensor)
    assert float(block.losses[0]) == pytest.approx(0.5 * 3 * 2 * 4)
    kernel, bias = tape.gradient(loss, block.trainable_weights)
    np.testing.assert_allclose(kernel.numpy(), np.full((4, 2), 1.5 * 3))
    np.testing.assert_allclose(bias.numpy(), [4.5, 4.5])


def test_layer_variables_are_its_weights():
    """tf.keras' `variables`, `trainable_variables` and `non_trainable_variables` of a layer
    are its weights, trainable ones and the others."""
    layer = keras.layers.BatchNormalization()
    layer.build((None, 3))
    names = [[w.name for w in ws] for ws in (layer.variables, layer.trainable_variables,
                                             layer.non_trainable_variables)]
    assert names == [[w.name for w in layer.weights],
                     [w.name for w in layer.trainable_weights],
                     [w.name for w in layer.non_trainable_weights]]
    assert len(names[1]) == 2 and len(names[2]) == 2
