"""The Adam fusion pass (torchk/passes/adam_fusion.py): Keras' Adam chains run as one fused update,
against a numpy reference of Keras' formula and against the program without the pass."""
import numpy as np
import pytest
import torch
from dispatched import DispatchedOps

from torchk.passes import adam_fusion
from torchk import core as K

_X = np.array([[1., -2., .5], [.3, 0., -1.], [2., 1., 1.]], 'float32')
_W = np.array([[.1, -.2], [.4, .3], [-.5, .6]], 'float32')
_LR, _B1, _B2, _EPS = .01, .9, .999, 1e-7


def _reference(steps):
    """Keras' Adam on `mean(square(x @ w))` for `steps` steps, in float64."""
    w, m, v = _W.astype('float64'), np.zeros_like(_W, 'float64'), np.zeros_like(_W, 'float64')
    x = _X.astype('float64')
    for t in range(1, steps + 1):
        g = x.T @ (2. * (x @ w)) / (x @ w).size
        lr_t = _LR * np.sqrt(1. - _B2 ** t) / (1. - _B1 ** t)
        m = _B1 * m + (1. - _B1) * g
        v = _B2 * v + (1. - _B2) * g * g
        w = w - lr_t * m / (np.sqrt(v) + _EPS)
    return w, m, v


def _adam(extra_outputs=lambda **symbols: [], constraint=None):
    """A `K.function` training `w` with Keras' Adam, built as `Adam.get_updates` builds it.
    Returns (function, w, m, v)."""
    x = K.placeholder(shape=(None, 3))
    w = K.variable(_W)
    loss = K.mean(K.square(K.dot(x, w)))
    g = K.gradients(loss, [w])[0]
    lr, b1, b2, iterations = (K.variable(_LR), K.variable(_B1), K.variable(_B2),
                              K.variable(0., dtype='int64'))
    t = K.cast(iterations, 'float32') + 1
    lr_t = lr * (K.sqrt(1. - K.pow(b2, t)) / (1. - K.pow(b1, t)))
    m, v = K.zeros((3, 2)), K.zeros((3, 2))
    m_t = (b1 * m) + (1. - b1) * g
    v_t = (b2 * v) + (1. - b2) * K.square(g)
    p_t = w - lr_t * m_t / (K.sqrt(v_t) + _EPS)
    if constraint is not None:
        p_t = constraint(p_t)
    updates = [K.update_add(iterations, 1), K.update(m, m_t), K.update(v, v_t),
               K.update(w, p_t)]
    outputs = [loss] + extra_outputs(w=w, m_t=m_t, v_t=v_t, g=g)
    return K.function([x], outputs, updates=updates), w, m, v


def _fused(function):
    return any(isinstance(c, adam_fusion.Update) for c in function._program.__globals__.values())


def _build(enabled, **kwargs):
    adam_fusion.set_enabled(enabled)
    try:
        return _adam(**kwargs)
    finally:
        adam_fusion.set_enabled(None)


@pytest.mark.parametrize('enabled', [True, False])
def test_adam_matches_keras_formula(enabled):
    f, w, m, v = _build(enabled)
    assert _fused(f) == enabled
    for _ in range(4):
        f([_X])
    reference = _reference(4)
    for variable, expected in zip((w, m, v), reference):
        np.testing.assert_allclose(K.get_value(variable), expected, rtol=2e-5, atol=1e-7)


def test_output_of_the_weight_keeps_pre_update_value():
    f, w, _, _ = _build(True, extra_outputs=lambda w, **_: [w, w * 1.])
    assert _fused(f)
    _, before, scaled = f([_X])
    np.testing.assert_array_equal(before, _W)
    np.testing.assert_array_equal(scaled, _W)
    assert not np.array_equal(K.get_value(w), _W)


@pytest.mark.parametrize('extra', [
    lambda m_t, **_: [m_t],             # a new moment read as an output
    lambda v_t, **_: [K.sum(v_t)],      # ... or by another node
])
def test_chain_read_elsewhere_is_not_fused(extra):
    f, w, m, v = _build(True, extra_outputs=extra)
    assert not _fused(f)
    for _ in range(2):
        f([_X])
    np.testing.assert_allclose(K.get_value(w), _reference(2)[0], rtol=2e-5, atol=1e-7)


def test_constrained_update_is_not_fused():
    f, w, _, _ = _build(True, constraint=lambda p: K.clip(p, -.35, .35))
    assert not _fused(f)
    f([_X])
    np.testing.assert_allclose(K.get_value(w), np.clip(_reference(1)[0], -.35, .35),
                               rtol=2e-5, atol=1e-7)


def test_gradient_read_as_output_stays_intact():
    f, _, _, _ = _build(True, extra_outputs=lambda g, **_: [g])
    assert _fused(f)
    _, gradient = f([_X])
    np.testing.assert_allclose(gradient, _X.T @ (2. * (_X @ _W)) / (_X @ _W).size, rtol=1e-6)


@pytest.mark.parametrize('layout', ['dense', 'transposed gradient', 'transposed weight',
                                    'all transposed'])
def test_apply_on_any_layout(layout):
    """`apply` with the fused kernel, on a gradient it makes contiguous, on four tensors
    laid out alike (a convolution kernel's, `variables.lay_out`) without a copy, or the
    in-place fallback for a weight the kernel cannot write as it is (strided otherwise than
    its moments)."""
    rng = np.random.RandomState(0)
    p0, g0 = rng.randn(4, 6).astype('float32'), rng.randn(4, 6).astype('float32')
    m0, v0 = rng.rand(4, 6).astype('float32'), rng.rand(4, 6).astype('float32')
    p, g, m, v = (torch.tensor(a) for a in (p0, g0, m0, v0))
    if layout == 'transposed gradient':
        g = torch.tensor(g0.T.copy()).t()
    if layout == 'transposed weight':
        p = torch.tensor(p0.T.copy()).t()
    if layout == 'all transposed':
        p, g, m, v = (torch.tensor(a.T.copy()).t() for a in (p0, g0, m0, v0))
    with DispatchedOps() as dispatched:
        adam_fusion.Update()([p], [g], [m], [v], torch.tensor(.01), torch.tensor(.9), .999,
                             1e-7)
    copies = dispatched.names.count('aten::empty_like')  # the gradient laid out as p
    fused = any(name.startswith('aten::_fused_adam_') for name in dispatched.names)
    assert fused == (layout != 'transposed weight')
    assert copies == (layout == 'transposed gradient')
    m_ref = .9 * m0 + .1 * g0
    v_ref = .999 * v0 + .001 * g0 * g0
    np.testing.assert_allclose(m.numpy(), m_ref, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), v_ref, rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), p0 - .01 * m_ref / (np.sqrt(v_ref) + 1e-7),
                               rtol=1e-6, atol=1e-7)


def test_environment_variable_turns_the_pass_off(monkeypatch):
    monkeypatch.setenv('TORCHK_ADAM_FUSION', '0')
    f, _, _, _ = _adam()
    assert not adam_fusion.enabled() and not _fused(f)
