"""Opt-in whole-program compile (torchk/passes/compiled.py): same values as the plain program,
and a failing compile falls back to it with one message."""
import numpy as np
import pytest
import torch

from torchk import core as K
from torchk.passes import compiled


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
    def broken(fn, **options):
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


@pytest.fixture
def compiling_predict():
    compiled.set_enabled('predict')
    yield
    compiled.set_enabled(None)


def _conv_bn_relu6():
    """A convolution, an inference batch norm and a ReLU6: what freezing folds and fuses."""
    rng = np.random.RandomState(0)
    x = K.placeholder(shape=(None, 6, 6, 2))
    kernel = K.variable(rng.uniform(-1, 1, (3, 3, 2, 4)))
    statistics = [K.variable(rng.uniform(low, 1., 4)) for low in (-1., 0.5, -1., -1.)]
    y = K.conv2d(x, kernel, padding='same', data_format='channels_last')
    y = K.batch_normalization(y, *statistics, axis=-1, epsilon=1e-3)
    return x, kernel, K.relu(y, max_value=6.)


def test_compiled_predict_matches_plain_predict_and_follows_the_weights(
        compiling_predict, capsys):
    x, kernel, out = _conv_bn_relu6()
    f = K.function([x], [out])
    compiled.set_enabled(False)
    plain = K.function([x], [out])
    feed = np.random.RandomState(1).uniform(-2, 2, (3, 6, 6, 2)).astype('float32')
    for _ in range(3):
        np.testing.assert_allclose(f([feed])[0], plain([feed])[0], rtol=1e-5, atol=1e-5)
    assert isinstance(f._program, compiled.FrozenProgram)
    assert f._program.error is None and f._program.compile_seconds > 0
    assert capsys.readouterr().err.count('weights frozen') == 1
    K.set_value(kernel, K.get_value(kernel) * -2.)
    for _ in range(2):  # plain, then compiled again with the new weights
        np.testing.assert_allclose(f([feed])[0], plain([feed])[0], rtol=1e-5, atol=1e-5)
    assert capsys.readouterr().err.count('weights frozen') == 1


def test_compiled_predict_leaves_programs_with_gradients_alone(compiling_predict):
    f = _check_training(3, rtol=1e-6)
    assert not isinstance(f._program, compiled.CompiledProgram)


@pytest.mark.parametrize('value,mode', [('0', None), ('1', 'all'), ('predict', 'predict')])
def test_mode_from_the_environment(monkeypatch, value, mode):
    monkeypatch.setenv('TORCHK_COMPILE', value)
    assert compiled.mode() == mode


def test_unknown_mode_is_refused(monkeypatch):
    monkeypatch.setenv('TORCHK_COMPILE', 'yes')
    with pytest.raises(ValueError, match='TORCHK_COMPILE'):
        compiled.mode()
    with pytest.raises(ValueError, match='set_enabled'):
        compiled.set_enabled('always')


@pytest.mark.parametrize('value,mode', [(None, 'default'), ('reduce-overhead', 'reduce-overhead'),
                                        ('max-autotune', 'max-autotune')])
def test_torch_compile_mode_from_the_environment(monkeypatch, value, mode):
    if value is None:
        monkeypatch.delenv('TORCHK_COMPILE_MODE', raising=False)
    else:
        monkeypatch.setenv('TORCHK_COMPILE_MODE', value)
    assert compiled.compile_mode() == mode


def test_unknown_torch_compile_mode_is_refused(monkeypatch):
    monkeypatch.setenv('TORCHK_COMPILE_MODE', 'fast')
    with pytest.raises(ValueError, match="TORCHK_COMPILE_MODE must be one of .*'fast'"):
        compiled.compile_mode()
