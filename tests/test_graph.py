"""Symbolic tensors: operators, identity semantics, static shapes, eager vs lazy dispatch."""
import operator

import numpy as np
import pytest
import torch

from torchk import config
from torchk import core as K
from torchk import graph

X_VALUE = np.arange(12, dtype='float32').reshape(3, 4) - 5.
Y_VALUE = np.linspace(1., 2., 12, dtype='float32').reshape(3, 4)


def run(outputs, feeds):
    """Evaluates symbolic outputs with placeholders fed from {placeholder: value}."""
    return K.function(list(feeds), outputs)(list(feeds.values()))


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize('fn', BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize('other', ['tensor', 'float', 'int', 'numpy0d', 'variable'])
def test_binary_operators_both_sides(fn, other):
    x = K.placeholder(shape=(None, 4))
    values = {'tensor': Y_VALUE, 'float': 1.5, 'int': 2, 'numpy0d': np.array(1.5, 'float32'),
              'variable': Y_VALUE}
    value = values[other]
    if other == 'tensor':
        operand = K.placeholder(shape=(None, 4))
        feeds = {x: X_VALUE, operand: value}
    elif other == 'variable':
        operand = K.variable(value)
        feeds = {x: X_VALUE}
    else:
        operand = value
        feeds = {x: X_VALUE}
    base = np.abs(X_VALUE) + 1. if fn is operator.pow else X_VALUE
    feeds[x] = base
    left, right = run([fn(x, operand), fn(operand, x)], feeds)
    np.testing.assert_allclose(left, fn(base, value), rtol=1e-6)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(right, fn(value, base), rtol=1e-6)


@pytest.mark.parametrize('fn', [operator.neg, operator.pos, operator.abs])
def test_unary_operators(fn):
    x = K.placeholder(shape=(3, 4))
    np.testing.assert_allclose(run([fn(x)], {x: X_VALUE})[0], fn(X_VALUE))


def test_augmented_assignment_returns_new_tensors():
    x = K.placeholder(shape=(3, 4))
    original = x
    x *= 2.
    x += 1.
    assert x is not original
    np.testing.assert_allclose(run([x, original], {original: X_VALUE})[0], X_VALUE * 2. + 1.)


def test_augmented_assignment_on_variable_is_not_in_place():
    v = K.variable(Y_VALUE)
    w = v
    w *= 3.
    assert w is not v
    np.testing.assert_allclose(K.get_value(v), Y_VALUE)
    np.testing.assert_allclose(K.eval(w), Y_VALUE * 3., rtol=1e-6)


KEYS = [(slice(None), slice(1, 3)), 1, -1, (Ellipsis, 2), (slice(None, None, -1),),
        (slice(None), None), (slice(1, None), slice(None, None, -2)), (None, Ellipsis, 0)]


@pytest.mark.parametrize('key', KEYS, ids=repr)
def test_getitem(key):
    x = K.placeholder(shape=(None, 4))
    result = run([x[key]], {x: X_VALUE})[0]
    expected = X_VALUE[key]
    np.testing.assert_array_equal(result, expected)
    inferred = K.int_shape(x[key])
    assert len(inferred) == expected.ndim
    assert all(d is None or d == e for d, e in zip(inferred, expected.shape))


def test_getitem_with_symbolic_scalar_index():
    x = K.placeholder(shape=(None, 4))
    index = K.argmax(K.sum(x, axis=0))
    np.testing.assert_array_equal(run([x[:, index]], {x: X_VALUE})[0], X_VALUE[:, 3])


def test_shape_vector_indexing_and_slicing():
    x = K.placeholder(shape=(None, 4))
    shape = K.shape(x)
    first, rest = run([shape[0], shape[1:]], {x: X_VALUE})
    assert first == 3 and list(rest) == [4]
    assert K.int_shape(shape) == (2,)


def test_identity_equality_and_hash():
    x = K.placeholder(shape=(2,))
    y = K.placeholder(shape=(2,))
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert len({x, y, x}) == 2
    assert x in [y, x]
    v = K.variable([1., 2.])
    assert (v == v) is True and (v == K.variable([1., 2.])) is False
    assert v in {v}


def test_bool_of_symbolic_tensor_raises():
    x = K.placeholder(shape=(2,))
    with pytest.raises(TypeError, match='truth value of the symbolic tensor'):
        bool(x)
    with pytest.raises(TypeError, match='no value yet'):
        np.asarray(x)


def test_numpy_on_left_defers_to_keras():
    x = K.placeholder(shape=(2,))
    result = np.float32(3.) * x
    assert isinstance(result, graph.KerasTensor)
    result = np.array([1., 2.], 'float32') + x
    assert isinstance(result, graph.KerasTensor)
    np.testing.assert_allclose(run([result], {x: np.ones(2)})[0], [2., 3.])


def test_tensors_accept_new_attributes_and_default_learning_phase_flag():
    x = K.placeholder(shape=(2,))
    assert x._uses_learning_phase is False
    assert not hasattr(x, '_keras_history')
    x._keras_history = ('layer', 0, 0)
    assert K.is_keras_tensor(x)


@pytest.mark.parametrize('build, expected', [
    (lambda x: K.dot(x, K.variable(np.ones((4, 5)))), (None, 5)),
    (lambda x: K.reshape(x, (K.shape(x)[0], 2, 2)), (None, 2, 2)),
    (lambda x: K.batch_flatten(K.expand_dims(x)), (None, 4)),
    (lambda x: K.concatenate([x, x], axis=0), (None, 4)),
    (lambda x: K.sum(x, axis=1), (None,)),
    (lambda x: K.mean(x, axis=[]), (None, 4)),
    (lambda x: K.permute_dimensions(K.expand_dims(x, 1), (2, 0, 1)), (4, None, 1)),
    (lambda x: K.tile(x, [1, 3]), (None, 12)),
    (lambda x: K.softmax(x)[:, :2], (None, 2)),
])
def test_static_shape_inference(build, expected):
    x = K.placeholder(shape=(None, 4))
    result = build(x)
    assert K.int_shape(result) == expected
    assert K.ndim(result) == len(expected)


def test_unknown_dims_unify_with_other_inputs():
    target = K.placeholder(ndim=2)
    output = K.placeholder(shape=(None, 3))
    loss = K.categorical_crossentropy(target, output)
    assert K.int_shape(loss) == (None,)


def test_shape_errors_surface_at_build_time_with_a_note():
    x = K.placeholder(shape=(None, 4))
    with pytest.raises(ValueError, match=r'x.shape\[-1\] \(4\) != y.shape\[0\] \(3\)') as info:
        K.dot(x, K.variable(np.ones((3, 2))))
    assert 'inferring the static shape' in ''.join(getattr(info.value, '__notes__', []))


def test_keras_shape_keeps_inferred_shape_over_keras_guess():
    x = K.placeholder(shape=(None, 4))
    summed = K.sum(x, axis=1, keepdims=True)
    summed._keras_shape = (None, 4)
    assert K.int_shape(summed) == (None, 1)
    unknown = K.placeholder(ndim=2)
    unknown._keras_shape = (None, 7)
    assert K.int_shape(unknown) == (None, 7)


def test_eager_inputs_stay_eager():
    value = torch.randn(3, 4)
    result = K.softmax(value)
    assert isinstance(result, torch.Tensor)
    np.testing.assert_allclose(result.sum(-1).numpy(), np.ones(3), rtol=1e-6)


def test_variable_argument_makes_op_lazy():
    v = K.variable(Y_VALUE)
    total = K.sum(v)
    assert isinstance(total, graph.KerasTensor)
    K.set_value(v, Y_VALUE * 2.)
    np.testing.assert_allclose(K.eval(total), Y_VALUE.sum() * 2., rtol=1e-6)


def test_nested_symbolic_argument_makes_op_lazy():
    x = K.placeholder(shape=(None, 4))
    stacked = K.stack([K.shape(x)[0], 2])
    assert isinstance(stacked, graph.KerasTensor)
    np.testing.assert_array_equal(run([stacked], {x: X_VALUE})[0], [3, 2])


def test_torch_functions_on_keras_tensors_record_lazily():
    x = K.placeholder(shape=(None, 4))
    layer = torch.nn.Linear(4, 2).to(config.device())
    y = layer(torch.tanh(x))
    assert isinstance(y, graph.KerasTensor) and K.int_shape(y) == (None, 2)
    expected = layer(torch.tanh(torch.as_tensor(X_VALUE, device=config.device()))).detach()
    expected = expected.cpu().numpy()
    np.testing.assert_allclose(run([y], {x: X_VALUE})[0], expected, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Static shapes: an unknown dimension is made consistent with a known one, as TF unifies them

@pytest.mark.parametrize('make, expected_shape', [
    # noise_shape fixes the batch the input leaves unknown.
    (lambda x: K.dropout(x, 0.5, noise_shape=(8, 1)), (8, 4)),
    # A constant with a batch of 8 next to an unknown batch.
    (lambda x: x + K.variable(np.ones((8, 4))), (8, 4)),
    (lambda x: K.concatenate([x, K.constant(np.ones((8, 2)))], axis=-1), (8, 6)),
])
def test_unknown_batch_unifies_with_a_concrete_size(make, expected_shape):
    x = K.placeholder(shape=(None, 4))
    y = make(x)
    assert K.int_shape(y) == expected_shape
    assert K.function([x], [y])([np.ones((8, 4))])[0].shape == expected_shape


@pytest.mark.parametrize('shape, axis, loss_shape', [
    ((None, 4, 4, 5), -1, (None, 4, 4)),
    ((None, 5, 4, 4), 1, (None, 4, 4)),
])
def test_sparse_labels_of_rank_only_target_take_the_output_shape(shape, axis, loss_shape):
    target = K.placeholder(ndim=4)  # what Keras builds for a sparse loss' target
    output = K.placeholder(shape=shape)
    loss = K.sparse_categorical_crossentropy(target, output, axis=axis)
    assert K.int_shape(loss) == loss_shape
    labels = np.zeros([2] + [1 if i == axis % 4 else d for i, d in enumerate(shape)][1:])
    probabilities = np.full((2,) + shape[1:], 0.2, dtype='float32')
    values = K.function([target, output], [loss])([labels, probabilities])[0]
    np.testing.assert_allclose(values, np.full((2, 4, 4), -np.log(0.2)), rtol=1e-6)


@pytest.mark.parametrize('make', [
    lambda: K.placeholder(shape=(3, 4)) + K.variable(np.ones((8, 4))),
    lambda: K.placeholder(shape=(None, 5)) + K.variable(np.ones((8, 4))),
    lambda: K.dropout(K.placeholder(shape=(4, 3)), 0.5, noise_shape=(8, 1)),
])
def test_definite_mismatches_still_fail_at_build_time(make):
    with pytest.raises(RuntimeError, match='must match the size'):
        make()


# ---------------------------------------------------------------------------------------------
# Binary operators take nested lists and tuples of numbers, converted to the symbol's dtype

ROW = [[1., 2., 3., 4.]]


@pytest.mark.parametrize('make, expected', [
    (lambda x: x - ROW, lambda x, row: x - row),
    (lambda x: ROW - x, lambda x, row: row - x),
    (lambda x: x * ((1, 2, 3, 4),), lambda x, row: x * row),  # ints take x's dtype, as in TF
    (lambda x: x / ROW[0], lambda x, row: x / row[0]),
    (lambda x: x ** [2, 2, 2, 2], lambda x, row: x ** 2),
    (lambda x: x > ROW, lambda x, row: x > row),
    (lambda x: K.maximum(x, ROW), np.maximum),
])
def test_binary_operators_take_nested_lists(make, expected):
    x = K.placeholder(shape=(None, 4))
    result = K.function([x], [make(x)])([X_VALUE])[0]
    reference = expected(X_VALUE, np.array(ROW, dtype='float32'))
    assert result.dtype == reference.dtype
    np.testing.assert_allclose(result, reference, rtol=1e-6)


@pytest.mark.parametrize('axes', [(1,), (-1,)])
def test_dynamic_axes_leave_an_axis_unknown_however_it_is_numbered(axes):
    """An axis whose size depends on the values stays unknown, also named from the end
    (a text layer's ragged token axis); the example runs would give it a size."""
    first_rows = graph.op(lambda x: x[:, :0], dynamic_axes=axes)
    y = first_rows(K.placeholder(shape=(None, 5)))
    assert K.int_shape(y) == (None, None)
    x = K.placeholder(shape=(None, 5))
    assert K.function([x], [first_rows(x)])([np.ones((2, 5))])[0].shape == (2, 0)


def test_ops_after_an_empty_dynamic_axis_leave_it_unknown():
    """The examples of a dynamic axis were empty (0 tokens of the empty example text); later
    ops do not take 0 for the axis' size (keras-io's preprocessing guide: a GRU on an
    Embedding of TextVectorization's ids)."""
    first_rows = graph.op(lambda x: x[:, :0], dynamic_axes=(1,))
    y = first_rows(K.placeholder(shape=(None, 5)))
    embedded = K.gather(K.ones((10, 3)), K.cast(y, 'int32'))
    assert K.int_shape(embedded) == (None, None, 3)
    assert K.int_shape(K.sum(embedded, axis=1)) == (None, 3)


def test_a_dynamic_axis_of_the_inputs_size_keeps_its_examples():
    """keras-io's position embedding: `tf.range(tf.shape(x)[-1])` is a dynamic axis whose
    examples have x's size; added to the embedded tokens they broadcast against x's."""
    x = K.placeholder(shape=(None, 7))
    positions = K.arange(0, K.shape(x)[-1])
    summed = K.expand_dims(K.cast(x, 'int32'), -1) + K.expand_dims(positions, -1)
    assert K.int_shape(summed)[0] is None and K.int_shape(summed)[2] == 1
    np.testing.assert_array_equal(
        K.function([x], [summed])([np.zeros((2, 7))])[0][..., 0],
        np.tile(np.arange(7), (2, 1)))
