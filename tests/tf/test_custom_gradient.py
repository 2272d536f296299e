"""tf.custom_gradient on torch autograd: the errors TF raises, the decorated function in a
recorded step and in a Keras graph, and what a SavedModel keeps of it.

The gradients themselves are checked against TensorFlow in
tests/oracle/test_tf_subset.py (test_custom_gradient_matches_tensorflow).
"""
import numpy as np
import pytest

import torchk.tf as tf
from torchk import core as K


@tf.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return tf.clip_by_norm(dy, 0.5)
    return y, backward


def _clipped_gradient(v):
    """d clip_gradients(v * v) / dv for an upstream gradient of norm 0.5 or more: the
    upstream clipped to norm 0.5, times d(v * v)/dv = 2 v."""
    return 0.5 * 2 * v


def test_a_function_reading_variables_needs_a_gradient_taking_variables():
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scaled(x):
        return x * w, lambda dy: dy * w
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match='variables'):
            scaled(x)


def test_one_gradient_per_argument():
    @tf.custom_gradient
    def add(a, b):
        return a + b, lambda dy: dy
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = add(a, b)
    with pytest.raises(ValueError, match='returned 1 gradients for 2 arguments'):
        tape.gradient(y, [a, b])


def test_gradients_of_arguments_that_are_no_tensors_are_dropped():
    @tf.custom_gradient
    def scale(x, factor):
        return x * factor, lambda dy: (dy * 7.0, None)
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(scale(x, 3.0))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [7.0, 7.0])


def test_in_a_recorded_step_the_custom_gradient_is_used(capsys):
    w = tf.Variable(3.0)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            out = clip_gradients(w * w) * 4.0
        return tape.gradient(out, w)
    assert float(step()) == pytest.approx(_clipped_gradient(3.0))  # upstream 4.0, clipped
    assert float(step()) == pytest.approx(_clipped_gradient(3.0))


def test_on_keras_symbols_it_records_and_k_gradients_uses_it():
    x = K.placeholder(shape=(3,))
    y = K.sum(clip_gradients(x * x))
    gradient = K.function([x], K.gradients(y, [x]))
    values = np.array([1.0, 2.0, -3.0], 'float32')
    upstream = np.full(3, 0.5 / np.sqrt(3), 'float32')  # ones(3) clipped to norm 0.5
    np.testing.assert_allclose(gradient([values])[0], upstream * 2 * values, rtol=1e-6)


class _Clipper(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([])])
    def call(self, x):
        return clip_gradients(x)


def test_saving_refuses_a_custom_gradient_unless_asked_for_the_forward_only(tmp_path):
    with pytest.raises(ValueError, match='custom_gradient.*experimental_custom_gradients'):
        tf.saved_model.save(_Clipper(), str(tmp_path / 'kept'))
    options = tf.saved_model.SaveOptions(experimental_custom_gradients=False)
    tf.saved_model.save(_Clipper(), str(tmp_path / 'forward'), options=options)
    loaded = tf.saved_model.load(str(tmp_path / 'forward'))
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        out = loaded.call(v * v)
    assert float(out.detach()) == 4.0
    assert float(tape.gradient(out, v)) == 4.0  # d(v * v)/dv: the forward's own gradient


def test_a_gradient_taking_variables_is_called_without_them_when_none_is_read():
    # TF passes `variables` only when the function read some: the plain gradients then.
    @tf.custom_gradient
    def double(x):
        def grad(dy, variables=None):
            assert variables is None
            return dy * 2.0
        return x * 2.0, grad
    x = tf.constant(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    assert float(tape.gradient(y, x)) == 2.0
