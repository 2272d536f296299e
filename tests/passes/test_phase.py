"""The learning-phase pass (torchk/passes/phase.py): `K.function` graphs run specialised and
unspecialised give the same outputs and variable updates, and the branch not taken is not
computed."""
import numpy as np
import pytest

from torchk import core as K
from torchk import graph
from torchk.passes import phase


def _run(build, specialised, phases):
    """Builds `(inputs, outputs, updates, variables, feeds)` with `build` and calls the
    function once per learning phase in `phases` (fed as the last input); returns the
    outputs of each call and the variables' values after each call."""
    phase.set_enabled(specialised)
    try:
        inputs, outputs, updates, variables, feeds = build()
        f = K.function(inputs + [K.learning_phase()], outputs, updates=updates)
        results = []
        for value in phases:
            results.append((f(feeds + [value]), [K.get_value(v) for v in variables]))
    finally:
        phase.set_enabled(None)
    return results, f


def _both(build, phases=(0, 1, 1, 0)):
    specialised, function = _run(build, True, phases)
    unspecialised, _ = _run(build, False, phases)
    for (outputs, values), (expected_outputs, expected_values) in zip(specialised,
                                                                      unspecialised):
        for got, expected in zip(outputs + values, expected_outputs + expected_values):
            np.testing.assert_array_equal(got, expected)
    return specialised, function


def _x():
    return np.arange(6, dtype='float32').reshape(2, 3)


def test_in_train_phase_with_tensors_and_callables():
    def build():
        x = K.placeholder(shape=(None, 3))
        return [x], [K.in_train_phase(x * 2., x - 1.),
                     K.in_train_phase(lambda: K.exp(x), lambda: K.sqrt(x)),
                     K.in_test_phase(x + 5., x * x)], [], [], [_x()]
    results, _ = _both(build)
    x = _x()
    np.testing.assert_allclose(results[0][0][0], x - 1.)
    np.testing.assert_allclose(results[1][0][1], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(results[1][0][2], x * x)


def test_switch_on_a_value_computed_from_the_learning_phase():
    def build():
        x = K.placeholder(shape=(None, 3))
        training = K.cast(K.learning_phase(), 'float32')
        return [x], [K.switch(K.greater(training, 0.5), x * 3., -x),
                     training * x], [], [], [_x()]
    results, _ = _both(build)
    np.testing.assert_array_equal(results[0][0][0], -_x())
    np.testing.assert_array_equal(results[1][0][0], _x() * 3.)
    np.testing.assert_array_equal(results[1][0][1], _x())


def test_branch_picks_a_constant():
    def build():
        x = K.placeholder(shape=(None, 3))
        return [x], [K.in_train_phase(K.constant(7.), x) + x], [], [], [_x()]
    results, _ = _both(build)
    np.testing.assert_array_equal(results[1][0][0], _x() + 7.)


def test_updates_and_gradients_through_the_phase():
    """A batch-norm-like layer: moving statistics updated from batch statistics, the output
    normalised by either, and a weight trained through it."""
    def build():
        x = K.placeholder(shape=(None, 3))
        w = K.variable(np.full((3,), 0.5, 'float32'))
        moving = K.variable(np.zeros(3, 'float32'))
        y = x * w
        batch_mean = K.mean(y, axis=0)
        out = K.in_train_phase(y - batch_mean, y - moving)
        loss = K.sum(K.square(out))
        grad, = K.gradients(loss, [w])
        updates = [K.update(moving, K.in_train_phase(0.9 * moving + 0.1 * batch_mean, moving)),
                   K.update_sub(w, 0.01 * grad)]
        return [x], [loss, out], updates, [w, moving], [_x()]
    results, _ = _both(build)
    assert not np.array_equal(results[1][1][0], results[0][1][0])


def test_metric_outputs_see_updated_values():
    def build():
        x = K.placeholder(shape=(None, 3))
        v = K.variable(np.ones(3, 'float32'))
        metric = K.in_train_phase(v * 10., v)
        metric._is_metric = True
        return [x], [K.sum(x * v), metric], [K.update_add(v, K.in_train_phase(
            K.ones_like(v), K.zeros_like(v)))], [v], [_x()]
    results, _ = _both(build)
    np.testing.assert_array_equal(results[1][0][1], np.full(3, 20.))


def test_a_fed_intermediate_tensor_is_kept():
    def build():
        x = K.placeholder(shape=(None, 3))
        hidden = K.in_train_phase(x * 2., x)
        return [hidden], [hidden + 1.], [], [], [_x()]
    results, _ = _both(build)
    np.testing.assert_array_equal(results[1][0][0], _x() + 1.)


def _spy(monkeypatch, module, name):
    """Replaces the op `module.name` with one that counts the calls of its kernel."""
    calls = []
    kernel = getattr(module, name).__wrapped__

    def counted(*args, **kwargs):
        if not graph.inferring():
            calls.append(1)
        return kernel(*args, **kwargs)
    monkeypatch.setattr(module, name, graph.op(counted))
    return calls


@pytest.mark.parametrize('specialised', [True, False])
def test_the_branch_not_taken_is_not_computed(monkeypatch, specialised):
    calls = _spy(monkeypatch, K, 'exp')
    phase.set_enabled(specialised)
    try:
        x = K.placeholder(shape=(None, 3))
        f = K.function([x, K.learning_phase()], [K.in_train_phase(K.exp(x), x)])
        f([_x(), 0])
    finally:
        phase.set_enabled(None)
    assert len(calls) == (0 if specialised else 1)
    f([_x(), 1])
    assert len(calls) == (1 if specialised else 2)


def test_one_program_per_phase_built_on_first_use():
    def build():
        x = K.placeholder(shape=(None, 3))
        return [x], [K.in_train_phase(x * 2., x)], [], [], [_x()]
    _, f = _both(build, phases=(0, 0, True, 1., np.array(0)))
    assert sorted(f._programs) == [False, True]


def test_an_unfed_learning_phase_is_zero(monkeypatch):
    calls = _spy(monkeypatch, K, 'exp')
    x = K.placeholder(shape=(None, 3))
    f = K.function([x], [K.in_train_phase(K.exp(x), x - 1.)])
    np.testing.assert_array_equal(f([_x()])[0], _x() - 1.)
    assert calls == [] and f._defaults == []


def test_the_recorded_graph_is_not_modified():
    x = K.placeholder(shape=(None, 3))
    out = K.in_train_phase(x * 2., x)
    node, args = out.node, out.node.args
    np.testing.assert_array_equal(
        K.function([x, K.learning_phase()], [out])([_x(), 1])[0], _x() * 2.)
    assert out.node is node and out.node.args is args
    np.testing.assert_array_equal(K.function([x], [out])([_x()])[0], _x())
    np.testing.assert_array_equal(
        K.function([x, K.learning_phase()], [out * 1.])([_x(), 1])[0], _x() * 2.)


def test_switch_turns_the_pass_off(monkeypatch):
    monkeypatch.setenv('TORCHK_PHASE', '0')
    assert not phase.enabled()
    monkeypatch.setenv('TORCHK_PHASE', '1')
    assert phase.enabled()
