"""Opt-in whole-program compile (torchk/compiled.py): same values as the plain program,
and a failing compile falls back to it with one message."""
import numpy as np
import pytest
import torch

from torchk import compiled
from torchk import core as K


@pytest.fixture
def compiling():
    compiled.set_enabled(True)
    yield
    compiled.set_enabled(None)


def _sgd_function():
    x = K.placeholder(shape=(4, 3))
    w = K.variable(np.linspace(-1., 1., 6).reshape(3, 2))
    loss = K.mean(K.square(K.dot(x, w)))
    grad = K.gradients(loss, [w])[0]
    return w, K.function([x], [loss], updates=[K.update(w, w - 0.1 * grad)])


def _check_training(steps, rtol):
    """Runs `_sgd_function` for `steps` calls against numpy; returns the function."""
    w, f = _sgd_function()
    x = np.arange(12.).reshape(4, 3) / 10.
    losses = [float(f([x.astype('float32')])[0]) for _ in range(steps)]
    expected = np.linspace(-1., 1., 6).reshape(3, 2)
    for step in range(steps):
        np.testing.assert_allclose(losses[step], np.mean((x @ expected) ** 2), rtol=rtol)
        expected = expected - 0.1 * 2. * x.T @ (x @ expected) / (x @ expected).size
    np.testing.assert_allclose(K.get_value(w), expected, rtol=rtol)
    return f


def test_compiled_program_matches_the_reference(compiling, capsys):
    f = _check_training(4, rtol=1e-5)
    assert f._program.error is None and f._program.compile_seconds > 0
    assert capsys.readouterr().err.count('torchk: compiled K.function') == 1


def test_failing_compile_falls_back_once(compiling, capsys, monkeypatch):
    def broken(fn):
        def run(*args):
            raise RuntimeError('no compiler here')
        return run
    monkeypatch.setattr(torch, 'compile', broken)
    f = _check_training(3, rtol=1e-6)
    assert isinstance(f._program.error, RuntimeError)
    assert capsys.readouterr().err.count('no compiler here') == 1


def test_off_by_default(monkeypatch):
    monkeypatch.delenv('TORCHK_COMPILE', raising=False)
    assert not compiled.enabled()
    assert not isinstance(_sgd_function()[1]._program, compiled.CompiledProgram)
