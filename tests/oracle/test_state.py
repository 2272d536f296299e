"""Variables, placeholders, K.function, gradients, the learning phase, uids and the session
functions against TF's Keras 2 backend; graph functions in a TF 1 graph, as Keras 2.3.1 ran."""
import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow as tf  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

from oracle import TK, TK231, assert_same, compare, covers, outcome, to_numpy  # noqa: E402
from strategies import FLOATS, arrays, shapes  # noqa: E402
from torchk import core as K  # noqa: E402


def on_both(scenario):
    """Runs `scenario(backend, evaluate)` on torchk and in a TF 1 graph (`evaluate` runs a
    list of tensors, in TF in the backend's session, which initializes the variables);
    asserts that both raise, or both return the same numpy values."""
    ours = outcome(lambda: scenario(K, K.batch_get_value))

    def on_tf():
        with tf.Graph().as_default():
            return scenario(TK231, lambda tensors: TK231.get_session(tensors).run(tensors))
    theirs = outcome(on_tf)
    assert ours[0] == theirs[0], (ours[1], theirs[1])
    if ours[0]:
        assert_same(ours[1], theirs[1])
    return theirs[1]


@covers('variable', 'is_variable', 'is_tensor', 'get_value', 'batch_get_value', 'set_value',
        'batch_set_value', 'count_params', 'eval', 'update', 'update_add', 'update_sub',
        'moving_average_update')
@given(data=st.data())
def test_variables(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    value = data.draw(arrays(dtype, shapes(max_side=3), -5, 5))
    other = data.draw(arrays(dtype, value.shape, -5, 5))
    momentum = data.draw(st.sampled_from([0., 0.9, 0.99]))

    def scenario(B, evaluate):
        v = B.variable(value, dtype=dtype)
        w = B.variable(value, dtype=dtype)
        # 2.3.1 counts with np.prod of the shape, a float 1.0 for a scalar: values compared.
        checks = [B.is_tensor(v), B.is_tensor(B.constant(value)), int(B.count_params(v)),
                  B.is_variable(v), B.is_variable(B.constant(value))]
        values = evaluate([v])
        B.set_value(v, other)
        values += B.batch_get_value([v, w]) + [B.get_value(v), B.eval(v * 2.)]
        B.batch_set_value([(v, value), (w, other)])
        values += evaluate([B.update(w, w + 1.)]) + evaluate([B.update_add(v, other)])
        values += evaluate([B.update_sub(v, value)])
        values += evaluate([B.moving_average_update(w, v, momentum)])
        return [np.asarray(c) for c in checks] + [np.asarray(x) for x in values]
    on_both(scenario)


@covers('placeholder', 'is_placeholder', 'is_keras_tensor', 'function', 'gradients',
        'print_tensor', 'identity', 'stop_gradient')
@given(data=st.data())
def test_function_and_gradients(data):
    x = data.draw(arrays('float32', shapes(1, 3, 1, 3), -2, 2))

    def scenario(B, evaluate):
        p = B.placeholder(ndim=x.ndim, dtype='float32')
        v = B.variable(np.ones(x.shape[-1:], 'float32'))
        y = B.print_tensor(B.sum(B.square(p * v) + B.stop_gradient(p) * v), 'y')
        grads = B.gradients(y, [p, v])
        run = B.function([p], [y] + grads, updates=[(v, v * 2.)])
        first, second = run([x]), run([x])
        return first + second + [np.asarray(B.is_placeholder(p)), np.asarray(B.is_keras_tensor(p)),
                                 np.asarray(B.int_shape(p), dtype=object)]
    on_both(scenario)
    compare(lambda: K.is_keras_tensor(np.ones(2)), lambda: TK.is_keras_tensor(np.ones(2)),
            graph=False)


@covers('learning_phase', 'set_learning_phase', 'in_train_phase', 'in_test_phase')
@pytest.mark.parametrize('phase', [None, 0, 1])
def test_learning_phase(phase):
    x, alt = np.full((2,), 3., 'float32'), np.full((2,), -1., 'float32')

    def scenario(B, evaluate):
        p = B.placeholder(shape=(2,))
        q = p * 1.  # TF refuses to fetch the tensor it feeds, which `training=1` would pick
        train, test = B.in_train_phase(q, -p), B.in_test_phase(q, -p)
        fixed = [B.in_train_phase(q, -p, training=1), B.in_test_phase(q, -p, training=1)]
        if phase is None:
            inputs, feed = [p, B.learning_phase()], [x, 1]
        else:  # a new TF graph starts with no phase set; torchk's is reset below
            B.set_learning_phase(phase)
            inputs, feed = [p], [x]
        try:
            values = B.function(inputs, [train, test] + fixed)(feed)
            return values + B.function([p], [B.in_train_phase(q, -p)])([alt])
        finally:
            if B is K:
                K.clear_session()
    on_both(scenario)


@covers('get_uid', 'reset_uids', 'clear_session')
def test_uids():
    def uids(B):
        B.reset_uids()
        first = [B.get_uid('a'), B.get_uid('a'), B.get_uid('b')]
        B.clear_session()
        return np.array(first + [B.get_uid('a')])
    np.testing.assert_array_equal(uids(K), uids(TK))


@covers('name_scope', 'manual_variable_initialization', 'get_session', 'set_session')
def test_session_functions():
    def scenario(B, evaluate):
        session = B.get_session()
        B.set_session(session)
        with B.name_scope('block'):
            v = B.variable(np.arange(3.))
        B.manual_variable_initialization(False)
        return [np.asarray(B.get_session() is session)] + evaluate([v * 2.])
    on_both(scenario)


@covers('control_dependencies')
def test_control_dependencies_keep_the_values():
    def scenario(B, evaluate):
        p = B.placeholder(shape=(2,))
        with B.control_dependencies([B.constant(1.) * 2.]):
            y = B.identity(p)
        return B.function([p], [y * 2.])([np.ones(2)])
    on_both(scenario)


@pytest.mark.xfail(strict=True, reason='documented in docs/COMPATIBILITY.md: torchk accepts '
                   'control_dependencies but does not run the dependencies')
def test_control_dependencies_run_the_dependencies():
    def scenario(B, evaluate):
        v = B.variable(np.zeros(2, 'float32'))
        p = B.placeholder(shape=(2,))
        with B.control_dependencies([B.update_add(v, np.ones(2, 'float32'))]):
            y = B.identity(p)
        return B.function([p], [y])([np.ones(2)]) + [to_numpy(B.get_value(v))]
    on_both(scenario)
