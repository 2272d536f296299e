"""tf.GradientTape on torch autograd, and tf.function."""
import numpy as np
import pytest
import torch

import torchk.tf as tf
from torchk.passes import compiled


def test_gradient_of_a_watched_constant():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 6.0


@pytest.mark.parametrize('value', [3, True])
def test_watching_an_integer_or_bool_tensor_warns_and_its_gradient_is_none(value):
    # TF (autodiff guide): "The dtype of the watched tensor must be floating", and None.
    x = tf.constant(value)
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match='must be floating .* got tf.(int32|bool)'):
            tape.watch(x)
        y = x * x
    assert tape.gradient(y, x) is None
    assert not x.requires_grad


def test_variables_are_watched_automatically():
    w = tf.Variable([1., 2., 3.])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [2., 4., 6.])


def test_nested_structures_and_unconnected_sources():
    a, b, c = tf.Variable(2.), tf.Variable(3.), tf.Variable(4.)
    with tf.GradientTape() as tape:
        y = a * b
    grads = tape.gradient(y, {'first': [a, b], 'other': (c,)})
    assert float(grads['first'][0]) == 3. and float(grads['first'][1]) == 2.
    assert grads['other'] == (None,)
    with tf.GradientTape() as tape:
        y = a * 2
    zero = tape.gradient(y, [a, c], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert float(zero[0]) == 2. and float(zero[1]) == 0.


def test_non_persistent_tape_computes_once():
    w = tf.Variable(1.)
    with tf.GradientTape() as tape:
        y = w * 5
    tape.gradient(y, w)
    with pytest.raises(RuntimeError, match='persistent'):
        tape.gradient(y, w)


def test_persistent_tape_computes_several_times():
    x = tf.Variable(2.)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 32.  # 4 x^3
    assert float(tape.gradient(y, x)) == 4.
    assert float(tape.gradient(z, x)) == 32.


def test_nested_tapes_give_second_derivatives():
    x = tf.Variable(2.)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = x ** 3
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert dy.numpy() == 12. and d2y.numpy() == 12.


def test_two_tapes_over_one_forward_pass():
    """A GAN step: generator and discriminator losses share the generated batch."""
    g, d = tf.Variable(1.5), tf.Variable(-0.5)
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = g * tf.constant([1., 2.])
        score = tf.sigmoid(d * fake)
        gen_loss = -tf.reduce_mean(tf.math.log(score))
        disc_loss = -tf.reduce_mean(tf.math.log(1 - score))
    gen_grad = gen_tape.gradient(gen_loss, g)
    disc_grad = disc_tape.gradient(disc_loss, d)
    reference = torch.tensor([1., 2.])
    gt, dt = torch.tensor(1.5, requires_grad=True), torch.tensor(-0.5, requires_grad=True)
    s = torch.sigmoid(dt * gt * reference)
    expected_g, = torch.autograd.grad(-torch.log(s).mean(), gt, retain_graph=True)
    expected_d, = torch.autograd.grad(-torch.log(1 - s).mean(), dt)
    assert torch.allclose(gen_grad, expected_g) and torch.allclose(disc_grad, expected_d)


def test_non_scalar_target_and_output_gradients():
    x = tf.Variable([1., 2.])
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2., 4.])
    np.testing.assert_allclose(
        tape.gradient(y, x, output_gradients=tf.constant([1., 10.])).numpy(), [2., 40.])
    np.testing.assert_allclose(tape.gradient([y, x], x).numpy(), [3., 5.])


def test_stop_recording_and_watch_accessed_variables():
    x = tf.Variable(3.)
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            y = x * x
    assert tape.gradient(y, x) is None
    a, b = tf.Variable(1.), tf.Variable(2.)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    assert tape.gradient(y, [a, b])[1] is None
    assert tape.watched_variables() == (a,)


def test_tape_trains_a_linear_regression():
    tf.random.set_seed(0)
    x = tf.random.normal([64, 3])
    y = tf.matmul(x, tf.constant([[1.], [-2.], [0.5]])) + 0.3
    w, b = tf.Variable(tf.zeros([3, 1])), tf.Variable(0.)
    for _ in range(200):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * dw)
        b.assign_sub(0.1 * db)
    assert loss.numpy() < 1e-4


@pytest.mark.parametrize('decorate', [
    lambda f: tf.function(f),
    lambda f: tf.function(jit_compile=True, reduce_retracing=True)(f),
    lambda f: tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])(f),
])
def test_function_runs_the_python_function(decorate):
    calls = []

    def double(x):
        calls.append(x)
        return x * 2

    function = decorate(double)
    np.testing.assert_array_equal(function(tf.constant([1., 2.])).numpy(), [2., 4.])
    assert len(calls) == 1 and function.python_function is double


def test_function_on_a_method_and_unknown_arguments():
    class Model:
        scale = 3.

        @tf.function
        def call(self, x):
            return x * self.scale
    assert float(Model().call(tf.constant(2.))) == 6.
    with pytest.raises(TypeError, match='experimental_nonsense'):
        tf.function(experimental_nonsense=True)


def test_function_compiles_under_torchk_compile(monkeypatch):
    compiled_functions = []
    monkeypatch.setattr(compiled, 'enabled', lambda: True)
    monkeypatch.setattr(torch, 'compile',
                        lambda f, **options: compiled_functions.append(f) or f)
    function = tf.function(lambda x: x + 1)
    function(tf.constant([1.]))
    assert float(function(tf.constant([2.]))[0]) == 3.
    assert len(compiled_functions) == 1


W = np.array([[1., 0.5, 2.], [0., 1., -1.]], 'float32')
X = np.array([[1., 2.], [3., -4.]], 'float32')


def _squared_product(x, w):
    return torch.matmul(x, w) ** 2


def test_jacobian_against_torch_autograd():
    x, w = tf.constant(X), tf.Variable(W)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _squared_product(x, w)
    got_x, got_w, unconnected = tape.jacobian(y, [x, w, tf.Variable(1.)])
    expected_x, expected_w = torch.autograd.functional.jacobian(
        _squared_product, (torch.tensor(X), torch.tensor(W)))
    assert got_x.shape == (2, 3, 2, 2) and got_w.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(got_x.numpy(), expected_x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got_w.numpy(), expected_w.numpy(), rtol=1e-6)
    assert unconnected is None
    with pytest.raises(RuntimeError, match='call jacobian\\(\\) several times'):
        tape.jacobian(y, x)


def test_batch_jacobian_is_the_per_example_block_of_the_jacobian():
    x, w = tf.constant(X), tf.Variable(W)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _squared_product(x, w)
    full = torch.autograd.functional.jacobian(lambda a: _squared_product(a, torch.tensor(W)),
                                              torch.tensor(X))
    got = tape.batch_jacobian(y, x)
    assert got.shape == (2, 3, 2)
    np.testing.assert_allclose(got.numpy(), torch.stack([full[i, :, i] for i in range(2)]),
                               rtol=1e-6)
    zero = tape.jacobian(y, tf.Variable(1.), unconnected_gradients='zero')
    assert zero.shape == (2, 3) and not zero.any()
    with pytest.raises(ValueError, match='same first \\(batch\\) dimension'):
        tape.batch_jacobian(y, tf.constant(np.ones((3, 2), 'float32')))
