"""The update fusion pass (torchk/passes/fusion.py) on `K.function` graphs: every case runs with the
pass on and off, against values computed by hand, and checks which rewrites were made."""
import numpy as np
import pytest

from torchk import core as K
from torchk.passes import fusion


def _run(build, fused, calls=3):
    """Builds `(inputs, outputs, updates, variables, feeds)` with `build`, runs the function
    `calls` times; returns the outputs of each call, the variables' values and the source."""
    fusion.set_enabled(fused)
    try:
        inputs, outputs, updates, variables, feeds = build()
        f = K.function(inputs, outputs, updates=updates)
    finally:
        fusion.set_enabled(None)
    results = [f(feeds) for _ in range(calls)]
    return results, [K.get_value(v) for v in variables], f._program.source


def _both(build, calls=3):
    fused = _run(build, True, calls)
    unfused = _run(build, False, calls)
    for a, b in zip(fused[0] + [fused[1]], unfused[0] + [unfused[1]]):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert 'out=' not in unfused[2]
    return fused


def test_variable_read_as_output_and_updated_keeps_pre_update_value():
    def build():
        v = K.variable([1., 2.])
        return [], [v, v * 1.], [K.update(v, v * 3.)], [v], []
    results, (value,), source = _both(build)
    np.testing.assert_array_equal(results[0][0], [1., 2.])
    np.testing.assert_array_equal(results[2][1], [9., 18.])
    np.testing.assert_array_equal(value, [27., 54.])
    assert 'out=' not in source  # the variable is an output: no direct write


@pytest.mark.parametrize('view', [lambda v: K.reshape(v, (2, 2)), lambda v: v[0],
                                  lambda v: K.transpose(v)])
def test_output_viewing_an_updated_variable_keeps_pre_update_value(view):
    def build():
        v = K.variable([[1., 2.], [3., 4.]])
        return [], [view(v)], [K.update(v, v - 1.)], [v], []
    results, (value,), source = _both(build)
    start = np.array([[1., 2.], [3., 4.]], 'float32')
    for step, outputs in enumerate(results):
        np.testing.assert_array_equal(outputs[0], np.asarray(view(start - step)))
    np.testing.assert_array_equal(value, start - 3)


def test_switch_returning_a_branch_keeps_that_branch_intact():
    """`K.switch` on a scalar returns the branch tensor itself: an op after it must not
    write into that tensor (a loss-scale optimizer's skip-on-overflow looks like this)."""
    def build():
        v, m = K.variable(np.ones(4)), K.variable(np.zeros(4))
        x = K.placeholder(shape=(4,))
        new_m = m * 0.9 + x * 2. * 0.1
        new_v = v - new_m * 0.5
        finite = K.all(K.greater(x, -1.))
        updates = [(m, K.switch(finite, new_m, m)), (v, K.switch(finite, new_v, v))]
        return [x], [], updates, [m, v], [np.ones(4, 'float32')]
    _, (m, v), _ = _both(build)
    expected_m, expected_v = 0., 1.
    for _ in range(3):
        expected_m = expected_m * 0.9 + 0.2
        expected_v = expected_v - expected_m * 0.5
    np.testing.assert_allclose(m, np.full(4, expected_m), rtol=1e-6)
    np.testing.assert_allclose(v, np.full(4, expected_v), rtol=1e-6)


def test_metric_output_sees_post_update_value():
    def build():
        v = K.variable([1., 2.])
        metric = v * 10.
        metric._is_metric = True
        return [], [v * 10., metric], [K.update(v, v + 1.)], [v], []
    results, (value,), source = _both(build)
    np.testing.assert_array_equal(results[0][0], [10., 20.])
    np.testing.assert_array_equal(results[0][1], [20., 30.])
    np.testing.assert_array_equal(value, [4., 5.])
    assert 'out=w0' in source


def test_updates_read_each_other_before_any_write():
    def build():
        a, b = K.variable([1., 2.]), K.variable([10., 20.])
        return [], [], [K.update(a, b + 0.5), K.update(b, a * 2.)], [a, b], []
    results, (a, b), _ = _both(build, calls=2)
    np.testing.assert_array_equal(a, [2.5, 4.5])  # (1, 2) -> (10.5, 20.5) -> (2.5, 4.5)
    np.testing.assert_array_equal(b, [21., 41.])  # (10, 20) -> (2, 4) -> (21, 41)


def test_new_value_reused_by_another_update_and_an_output():
    def build():
        v, w = K.variable([1., 2.]), K.variable([0., 0.])
        new = v * 2.
        return [], [new - 1.], [K.update(v, new), K.update(w, new + 1.)], [v, w], []
    results, (v, w), source = _both(build, calls=2)
    np.testing.assert_array_equal(results[1][0], [3., 7.])
    np.testing.assert_array_equal(v, [4., 8.])
    np.testing.assert_array_equal(w, [5., 9.])


def test_gradient_step_writes_into_the_variable_after_the_gradient():
    def build():
        x = K.placeholder(shape=(None, 3))
        v = K.variable(np.arange(3.).reshape(3, 1))
        loss = K.sum(K.square(K.dot(x, v)))
        grad = K.gradients(loss, [v])[0]
        return [x], [loss], [K.update(v, v - 0.01 * grad)], [v], [np.ones((4, 3), 'float32')]
    results, (value,), source = _both(build, calls=2)
    assert 'out=w' in source
    v = np.arange(3.).reshape(3, 1)
    x = np.ones((4, 3))
    for outputs in results[:2]:
        np.testing.assert_allclose(outputs[0], np.sum((x @ v) ** 2), rtol=1e-6)
        v = v - 0.01 * 2 * x.T @ (x @ v)
    np.testing.assert_allclose(value, v, rtol=1e-6)


def test_dead_intermediates_are_reused_and_live_ones_are_not():
    def build():
        x = K.placeholder(shape=(2, 3))
        a = x * 2.
        b = (a + 1.) / 3.
        c = K.square(b) - b  # `b` is read twice: the subtraction writes into the square
        return [x], [a, c], [], [], [np.arange(6.).reshape(2, 3)]
    results, _, source = _both(build, calls=1)
    x = np.arange(6.).reshape(2, 3)
    b = (x * 2. + 1.) / 3.
    np.testing.assert_allclose(results[0][0], x * 2.)
    np.testing.assert_allclose(results[0][1], b ** 2 - b, rtol=1e-6)
    assert source.count('out=') == 2  # `b` into `a + 1`'s memory, `c` into the square's
    assert 'out=p0' not in source


def test_switch_turns_the_pass_off(monkeypatch):
    v = K.variable([1.])
    monkeypatch.setenv('TORCHK_FUSION', '0')
    assert not fusion.enabled()
    assert 'out=' not in K.function([], [], updates=[K.update(v, v * 2.)])._program.source
    monkeypatch.setenv('TORCHK_FUSION', '1')
    assert 'out=' in K.function([], [], updates=[K.update(v, v * 2.)])._program.source
