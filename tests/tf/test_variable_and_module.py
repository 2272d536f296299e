"""`tf.Variable`'s TF semantics beyond its operators (slices assigned, lists and arrays as
operands) and `tf.Module` (variables and submodules found by walking attributes)."""
import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf

VALUE = np.array([[1., 2.], [3., 4.], [5., 6.]], 'float32')


@pytest.mark.parametrize('key, value', [
    (slice(0, 2), [[9., 9.], [8., 8.]]),
    ((slice(None), 0), [0., -1., -2.]),
    ((1, 1), 7.),
    ((slice(None), slice(1, None)), np.ones((3, 1))),
], ids=['rows', 'column', 'element', 'float64_array'])
def test_slice_assign(key, value):
    v = tf.Variable(VALUE)
    result = v[key].assign(value)
    expected = VALUE.copy()
    expected[key] = value
    assert result is v and v.dtype == torch.float32
    np.testing.assert_array_equal(v.numpy(), expected)


def test_slice_assign_keeps_the_variable_trainable():
    v = tf.Variable(VALUE)
    v[0].assign([0., 0.])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(v * v)
    np.testing.assert_array_equal(tape.gradient(loss, v).numpy(), 2 * v.numpy())


@pytest.mark.parametrize('left', [[[1., 2.]], np.array([[1., 2.]]), tf.constant([[1., 2.]])],
                         ids=['list', 'float64_array', 'tensor'])
def test_matmul_of_a_list_or_array_and_a_variable(left):
    w = tf.Variable([[1., 0.], [2., 1.]])
    result = left @ w
    assert isinstance(result, torch.Tensor) and result.dtype == torch.float32
    np.testing.assert_array_equal(result.numpy(), [[5., 2.]])
    np.testing.assert_array_equal((w @ [[1.], [1.]]).numpy(), [[1.], [3.]])
    np.testing.assert_array_equal((w + [1., 1.]).numpy(), [[2., 1.], [3., 2.]])


class Dense(tf.Module):
    def __init__(self, units, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.ones([2, units]), name='w')
        self.b = tf.Variable(tf.zeros([units]), trainable=False, name='b')

    @tf.Module.with_name_scope
    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class Stack(tf.Module):
    def __init__(self):
        super().__init__()
        self.layers = [Dense(2, name='first'), Dense(2, name='second')]
        self.scale = tf.Variable(3.)
        self.keras_layer = keras.layers.Dense(1)
        self.keras_layer.build((None, 2))
        self.shared = self.layers[0]  # listed once


def test_module_finds_variables_and_submodules():
    stack = Stack()
    assert stack.name == 'stack' and stack.name_scope.name == 'stack/'
    first, second = stack.layers
    # attributes in the order of their names, a Keras layer being a module too (as in TF)
    assert [m.name for m in stack.submodules] == [stack.keras_layer.name, 'first', 'second']
    expected = [first.b, first.w, second.b, second.w, stack.keras_layer.kernel,
                stack.keras_layer.bias, stack.scale]
    assert [id(v) for v in sorted(stack.variables, key=id)] == sorted(map(id, expected))
    assert len(stack.variables) == 7
    assert set(map(id, stack.trainable_variables)) == set(map(id, expected)) - {
        id(first.b), id(second.b)}
    with stack.name_scope:
        np.testing.assert_array_equal(first(tf.ones([1, 2])).numpy(), [[2., 2.]])


def test_module_name_is_checked():
    with pytest.raises(ValueError, match="'2x' is not valid"):
        tf.Module(name='2x')


def test_get_shape_of_a_variable_and_of_a_keras_weight():
    """keras-io's PixelCNN: `np.zeros(shape=self.conv.kernel.get_shape())`."""
    assert tf.Variable(np.ones((2, 3))).get_shape().as_list() == [2, 3]
    conv = keras.layers.Conv2D(2, 3)
    conv.build((None, 5, 5, 1))
    shape = conv.kernel.get_shape()
    assert isinstance(shape, tf.TensorShape) and np.zeros(shape).shape == (3, 3, 1, 2)


def test_numpy_of_a_variable_is_a_copy():
    """TF's optimizers guide keeps `x_old = x.numpy()` while it updates `x`."""
    x = tf.Variable([1.0, 2.0])
    before = x.numpy()
    x.assign_sub([0.5, 0.5])
    np.testing.assert_array_equal(before, [1.0, 2.0])
    np.testing.assert_array_equal(x.numpy(), [0.5, 1.5])


@pytest.mark.parametrize('other', [np.float32(1.5), 1.5, np.array([1.5, 2.0], 'float32'),
                                   [1.5, 2.0], torch.tensor([1.5, 2.0])],
                         ids=['numpy_scalar', 'number', 'array', 'list', 'tensor'])
def test_a_variable_compares_with_values_element_wise(other):
    """TF's optimizers guide stops when `x == x_old` (a variable and its earlier numpy)."""
    x = tf.Variable([1.5, 3.0])
    expected = np.asarray(x.numpy()) == np.asarray(other)
    np.testing.assert_array_equal((x == other).numpy(), expected)
    np.testing.assert_array_equal((x != other).numpy(), ~expected)


def test_a_variable_compares_with_variables_by_identity():
    x, y = tf.Variable(1.5), tf.Variable(1.5)
    assert x == x and not x == y and x != y and x in [y, x] and {x: 1}[x] == 1


def test_numpy_of_an_expression_of_variables():
    """TF's time-series tutorial: `linear.layers[0].kernel[:, 0].numpy()`; a slice of a Keras
    weight is a Keras symbol, whose `.numpy()` is its value now. One that depends on a
    placeholder has no value: K.eval's error names it."""
    dense = keras.layers.Dense(3)
    dense.build((None, 4))
    kernel = dense.kernel.detach().numpy()
    np.testing.assert_array_equal(dense.kernel[:, 0].numpy(), kernel[:, 0])
    np.testing.assert_allclose((dense.kernel * 2 + 1).numpy(), kernel * 2 + 1)
    with pytest.raises(Exception, match='placeholder'):
        (keras.backend.placeholder(shape=(None, 4)) + 1).numpy()


def test_tf_initializers_are_tf_keras_initializers():
    """TF 2's `tf.initializers` is `tf.keras.initializers` (TF's time-series tutorial:
    `kernel_initializer=tf.initializers.zeros()`)."""
    assert tf.initializers is keras.initializers
    dense = keras.layers.Dense(2, kernel_initializer=tf.initializers.zeros())
    dense.build((None, 3))
    np.testing.assert_array_equal(dense.kernel.detach().numpy(), np.zeros((3, 2)))
    assert callable(tf.zeros_initializer)
