"""K.function, gradients, updates, learning phase, switch, and their errors."""
import numpy as np
import pytest
import torch
from dispatched import DispatchedOps

from torchk import core as K
from torchk.function import convert_feed


def test_function_returns_list_of_numpy_with_0d_scalars():
    x = K.placeholder(shape=(None, 3))
    f = K.function([x], [K.sum(x), x * 2.])
    total, doubled = f([np.ones((2, 3))])
    assert isinstance(f([np.ones((2, 3))]), list)
    assert isinstance(total, np.ndarray) and total.shape == ()
    assert float(total) == 6.
    np.testing.assert_array_equal(doubled, np.full((2, 3), 2., 'float32'))


def test_single_output_and_tuple_structures():
    x = K.placeholder(shape=(2,))
    assert K.function([x], x * 3.)([np.ones(2)]).tolist() == [3., 3.]
    result = K.function([x], (x, x + 1.))([np.ones(2)])
    assert isinstance(result, tuple) and result[1].tolist() == [2., 2.]


def test_feeds_are_cast_to_the_placeholder_dtype():
    x = K.placeholder(shape=(None,), dtype='float32')
    result = K.function([x], [x])([np.array([1, 2], dtype='int64')])[0]
    assert result.dtype == np.float32


def test_updates_use_pre_call_state_and_apply_together():
    a = K.variable(1.)
    b = K.variable(10.)
    f = K.function([], [a + b], updates=[K.update(a, b), K.update(b, a), K.update_add(a, 5.)])
    assert float(f([])[0]) == 11.
    assert float(K.get_value(a)) == 10. and float(K.get_value(b)) == 1.


def test_raw_tuple_and_nested_updates():
    counter = K.variable(0, dtype='int64')
    total = K.variable(0.)
    f = K.function([], [], updates=[[(counter, counter + 1)], K.update_add(total, 2.)])
    f([])
    f([])
    assert int(K.get_value(counter)) == 2 and float(K.get_value(total)) == 4.


def test_metric_outputs_see_post_update_state():
    total = K.variable(0.)
    x = K.placeholder(shape=(None,))
    result = K.identity(total / 2.)
    result._is_metric = True
    before = total * 1.
    f = K.function([x], [before, result], updates=[K.update_add(total, K.sum(x))])
    pre, post = f([np.array([1., 3.])])
    assert float(pre) == 0. and float(post) == 2.


def test_variable_output_keeps_pre_update_value():
    v = K.variable(1.)
    f = K.function([], [v], updates=[K.update(v, 7.)])
    assert float(f([])[0]) == 1. and float(K.get_value(v)) == 7.


def test_update_with_wrong_shape_raises():
    v = K.variable(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r'shape \(2, 3\) with a value of shape \(3, 2\)'):
        K.function([], [], updates=[K.update(v, K.variable(np.zeros((3, 2))))])


def test_wrong_feed_shape_names_placeholder_and_shapes():
    x = K.placeholder(shape=(None, 3), name='pixels')
    f = K.function([x], [x])
    with pytest.raises(ValueError, match=r"shape \(2, 4\) to input 0 \('pixels'\), which has "
                                         r"shape \(None, 3\)"):
        f([np.ones((2, 4))])
    with pytest.raises(ValueError, match=r'shape \(3,\)'):
        f([np.ones(3)])


def test_wrong_number_of_feeds():
    x = K.placeholder(shape=(None,))
    f = K.function([x], [x], name='fn')
    with pytest.raises(ValueError, match='expects 1 input value'):
        f([np.ones(1), np.ones(1)])
    with pytest.raises(TypeError, match='list of input values'):
        f(np.ones(1))


@pytest.mark.parametrize('value', [np.array(['a', 'b']), np.array([b'a', b'b']),
                                   ['1.5', '2']])
def test_string_feeds_raise_type_error(value):
    x = K.placeholder(shape=(None,), name='x')
    with pytest.raises(TypeError, match=r"input 0 \('x'\): values of dtype .*strings.* float32"):
        K.function([x], [x])([value])


def test_unconvertible_object_feed_raises_type_error():
    x = K.placeholder(shape=(None,), name='x')
    with pytest.raises(TypeError, match=r"input 0 \('x'\): values of dtype object"):
        K.function([x], [x])([np.array([None, {}], dtype=object)])


@pytest.mark.parametrize('dtype, value', [
    ('int32', np.array([1.7, -1.7, 0., 3.])),       # floats truncate, as np.asarray does
    ('int64', np.array([True, False, True, True])),
    ('float32', np.array([1, 2, 3, 4], dtype=np.int64)),
    ('float32', np.array([True, False, True, False])),
    ('float32', np.array([1.5, 2, 3, 4], dtype=object)),
    ('float32', np.array([1.5, 2, 3, 4], dtype=np.longdouble)),
    ('bool', np.array([0., 1., 2., 0.])),
    ('float64', [1, 2, 3, 4]),
    ('int32', torch.tensor([1.7, -1.7, 0., 3.])),
])
def test_feeds_convert_to_the_placeholder_dtype_like_a_tf_session(dtype, value):
    x = K.placeholder(shape=(None,), dtype=dtype)
    result = K.function([x], [x])([value])[0]
    expected = np.asarray(value.numpy() if isinstance(value, torch.Tensor) else value,
                          dtype=dtype)
    assert result.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(result, expected)


def test_feed_of_the_placeholder_dtype_is_not_copied():
    x = K.placeholder(shape=(None, 2))
    value = np.ones((3, 2), dtype=np.float32)
    assert convert_feed(x, value, 0, torch.device('cpu')).data_ptr() == value.ctypes.data


def test_negative_stride_feeds_are_accepted():
    x = K.placeholder(shape=(None, 3))
    value = np.arange(6, dtype=np.float32).reshape(2, 3)[::-1, ::-1]
    np.testing.assert_array_equal(K.function([x], [x * 2.])([value])[0], value * 2.)


def test_missing_placeholder_is_an_error_naming_it():
    x = K.placeholder(shape=(2,), name='needed')
    y = K.placeholder(shape=(2,), name='given')
    with pytest.raises(ValueError, match="needed"):
        K.function([y], [x + y])
    with pytest.raises(ValueError, match='needed'):
        K.eval(x * 2.)


def test_unknown_function_kwargs_raise():
    with pytest.raises(ValueError, match='fetches'):
        K.function([], [], fetches=[])


def test_intermediate_tensors_can_be_fed_and_unused_inputs_ignored():
    x = K.placeholder(shape=(None, 2))
    unused = K.placeholder(shape=(3,))
    hidden = x * 10.
    out = hidden + 1.
    f = K.function([hidden, unused], [out])
    np.testing.assert_array_equal(f([np.ones((1, 2)), np.zeros(3)])[0], [[2., 2.]])


def test_unknown_dtype_string():
    with pytest.raises(TypeError, match="Unknown dtype 'float33'"):
        K.placeholder(shape=(2,), dtype='float33')
    with pytest.raises(TypeError, match="Unknown dtype"):
        K.variable(1., dtype='strange')


def test_gradients_against_torch_autograd():
    x_value = np.random.RandomState(0).randn(4, 3).astype('float32')
    w = K.variable(np.random.RandomState(1).randn(3, 2))
    b = K.variable(np.zeros(2))
    x = K.placeholder(shape=(None, 3))
    loss = K.mean(K.square(K.tanh(K.dot(x, w) + b)))
    grads = K.gradients(loss, [w, b, x])
    got = K.function([x], grads)([x_value])
    xt = torch.tensor(x_value, requires_grad=True)
    wt = torch.tensor(K.get_value(w), requires_grad=True)
    bt = torch.zeros(2, requires_grad=True)
    torch.mean(torch.tanh(xt @ wt + bt) ** 2).backward()
    for value, reference in zip(got, [wt.grad, bt.grad, xt.grad]):
        np.testing.assert_allclose(value, reference.numpy(), rtol=1e-5, atol=1e-7)


def test_gradients_of_a_non_scalar_loss_are_those_of_its_sum():
    # TF differentiates a non-scalar target as its sum (a custom train_step's per-sample
    # `mean_squared_error`); the gradient node runs where autograd does not record.
    x_value = np.random.RandomState(0).randn(5, 3).astype('float32')
    w = K.variable(np.random.RandomState(1).randn(3, 1))
    x = K.placeholder(shape=(None, 3))
    per_sample = K.mean(K.square(K.dot(x, w)), axis=-1)
    got = K.function([x], K.gradients(per_sample, [w]))([x_value])[0]
    wt = torch.tensor(K.get_value(w), requires_grad=True)
    torch.sum(torch.mean((torch.tensor(x_value) @ wt) ** 2, -1)).backward()
    np.testing.assert_allclose(got, wt.grad.numpy(), rtol=1e-5)


def test_gradients_finite_differences_on_ops():
    w = K.variable(np.array([[0.3, -0.2], [0.5, 0.1]]), dtype='float64')
    loss = K.logsumexp(K.softplus(w) * K.sigmoid(w))
    grad = K.eval(K.gradients(loss, [w])[0])
    value = K.get_value(w)
    eps = 1e-6
    for index in np.ndindex(value.shape):
        plus, minus = value.copy(), value.copy()
        plus[index] += eps
        minus[index] -= eps
        K.set_value(w, plus)
        up = float(K.eval(loss))
        K.set_value(w, minus)
        down = float(K.eval(loss))
        np.testing.assert_allclose(grad[index], (up - down) / (2 * eps), rtol=1e-5)


def test_unconnected_gradient_is_none():
    w = K.variable(1.)
    other = K.variable(2.)
    assert K.gradients(w * 3., [w, other])[1] is None


def test_second_order_gradients():
    w = K.variable(np.array([1., 2.]))
    grad = K.gradients(K.sum(w ** 3), [w])[0]
    second = K.gradients(K.sum(grad), [w])[0]
    np.testing.assert_allclose(K.eval(second), 6. * np.array([1., 2.]))


def test_stop_gradient():
    w = K.variable(2.)
    grad = K.gradients(w * K.stop_gradient(w), [w])[0]
    assert float(K.eval(grad)) == 2.


def test_learning_phase_defaults_to_zero_and_accepts_int_and_float():
    x = K.placeholder(shape=(2,))
    out = K.in_train_phase(x * 2., x)
    assert out._uses_learning_phase is True
    np.testing.assert_array_equal(K.function([x], [out])([np.ones(2)])[0], [1., 1.])
    f = K.function([x, K.learning_phase()], [out])
    assert f([np.ones(2), 1])[0].tolist() == [2., 2.]
    assert f([np.ones(2), 1.])[0].tolist() == [2., 2.]
    assert f([np.ones(2), 0])[0].tolist() == [1., 1.]


def test_a_fed_learning_phase_selects_its_program_without_reading_a_tensor():
    """The phase is read from the value as fed; the program gets a host tensor made once."""
    x = K.placeholder(shape=(2,))
    f = K.function([x, K.learning_phase()], [K.in_train_phase(x * 2., x)])
    value = torch.ones(2)
    for phase in (1, 0):
        f([value, phase])
        with DispatchedOps() as dispatched:
            assert f([value, np.int64(phase)])[0].tolist() == [1. + phase] * 2
        assert 'aten::_local_scalar_dense' not in dispatched.names
        assert 'aten::lift_fresh' not in dispatched.names
    with pytest.raises(TypeError, match='The learning phase must be fed 0 or 1'):
        f([value, [1, 0]])


def test_set_learning_phase_and_scope():
    try:
        K.set_learning_phase(1)
        assert K.learning_phase() == 1
        assert K.in_train_phase(lambda: 'train', 'test') == 'train'
        with K.learning_phase_scope(0):
            assert K.in_train_phase('train', lambda: 'test') == 'test'
        assert K.learning_phase() == 1
        with pytest.raises(ValueError, match='0 or 1'):
            K.set_learning_phase(2)
    finally:
        K.clear_session()
    assert not isinstance(K.learning_phase(), int)


def test_switch_scalar_and_elementwise():
    x = K.placeholder(shape=(3, 2))
    value = np.arange(6, dtype='float32').reshape(3, 2)
    scalar = K.switch(K.greater(K.sum(x), 100.), x, -x)
    rowwise = K.switch(K.greater(K.sum(x, axis=1), 2.), x, -x)
    got_scalar, got_rows = K.function([x], [scalar, rowwise])([value])
    np.testing.assert_array_equal(got_scalar, -value)
    np.testing.assert_array_equal(got_rows, np.where(value.sum(1, keepdims=True) > 2, value,
                                                     -value))
    assert K.switch(True, lambda: 1, lambda: 2) == 1


def test_eval_and_get_value_of_expressions():
    v = K.variable([1., 2.])
    assert K.get_value(v * 2.).tolist() == [2., 4.]
    assert K.eval(v).tolist() == [1., 2.]
    assert K.batch_get_value([v, v + 1.])[1].tolist() == [2., 3.]


def test_program_is_straight_line_code():
    x = K.placeholder(shape=(None, 3))
    f = K.function([x], [K.relu(x * 2. + 1.)])
    source = f._program.source
    assert source.startswith('def program(p0')
    assert 'for ' not in source and 'while ' not in source


def test_session_compatibility_run():
    x = K.placeholder(shape=(2,))
    assert K.get_session().run(x * 2., feed_dict={x: np.ones(2)}).tolist() == [2., 2.]


def test_print_tensor_prints_at_run_time(capsys):
    x = K.placeholder(shape=(2,))
    out = K.print_tensor(x, message='value:')
    assert capsys.readouterr().out == ''
    K.function([x], [out])([np.ones(2)])
    assert 'value:' in capsys.readouterr().out


def test_in_test_phase_is_in_train_phase_reversed():
    x = K.placeholder(shape=(2,))
    out = K.in_test_phase(x * 2., x)
    f = K.function([x, K.learning_phase()], [out])
    assert f([np.ones(2), 0])[0].tolist() == [2., 2.]
    assert f([np.ones(2), 1])[0].tolist() == [1., 1.]
    assert K.in_test_phase('test', 'train', training=1) == 'train'


def test_control_dependencies_is_a_context_manager_for_any_argument():
    v = K.variable(0.)
    for control_inputs in ([K.update_add(v, 1.)], K.update_add(v, 1.), None):
        with K.control_dependencies(control_inputs) as value:
            assert value is None


def test_session_objects_and_manual_initialization_are_accepted():
    session = K.get_session()
    K.set_session(None)
    try:
        assert K.get_session() is None
    finally:
        K.set_session(session)
    assert K.manual_variable_initialization(True) is None


@pytest.mark.parametrize('bounds', [[(0, 2), (2, 4), (4, 6)], [(4, 6), (0, 1)]])
def test_column_slices_of_one_tensor_become_one_split(bounds):
    x_value = np.random.RandomState(0).randn(3, 6).astype('float32')
    kernel = np.random.RandomState(1).randn(6, 6).astype('float32')
    x = K.placeholder(shape=(None, 6))
    w = K.variable(kernel)
    product = K.dot(x, w)
    parts = [product[:, a:b] for a, b in bounds]
    loss = sum(K.sum(K.tanh(part) * (i + 1.)) for i, part in enumerate(parts))
    f = K.function([x], [loss] + K.gradients(loss, [w]) + parts)
    assert 'torch.split' in f._program.source
    got = f([x_value])

    wt = torch.tensor(kernel, requires_grad=True)
    zt = torch.tensor(x_value) @ wt
    expected = sum(torch.tanh(zt[:, a:b]).sum() * (i + 1.) for i, (a, b) in enumerate(bounds))
    expected.backward()
    np.testing.assert_allclose(got[0], expected.item(), rtol=1e-5)
    np.testing.assert_allclose(got[1], wt.grad.numpy(), rtol=1e-5, atol=1e-6)
    for value, (a, b) in zip(got[2:], bounds):
        np.testing.assert_allclose(value, zt.detach().numpy()[:, a:b], rtol=1e-5)


def test_overlapping_column_slices_are_left_alone():
    x = K.placeholder(shape=(None, 6))
    f = K.function([x], [x[:, 0:4], x[:, 2:6]])
    assert 'torch.split' not in f._program.source
    first, second = f([np.arange(12.).reshape(2, 6)])
    assert first.tolist() == [[0., 1., 2., 3.], [6., 7., 8., 9.]]
    assert second.tolist() == [[2., 3., 4., 5.], [8., 9., 10., 11.]]
