"""The host scalars pass (torchk/passes/host_scalars.py): every case runs with the pass on and
off against values computed by hand, and checks what runs on the host and that a step reads
nothing back from the device."""
import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchk import core as K
from torchk import variables
from torchk.passes import host_scalars


class _DeviceReads(TorchDispatchMode):
    """Counts the ATen ops that read a tensor's value on the host (`.item()`, `float()`)."""

    def __init__(self):
        super().__init__()
        self.reads = 0
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        if func is torch.ops.aten._local_scalar_dense.default:
            self.reads += 1
        return func(*args, **(kwargs or {}))


def _run(build, hosted, calls=3):
    """Builds `(inputs, outputs, updates, variables, feeds)`, runs the function `calls` times
    (the last one counted); returns the outputs of each call, the variables' values, the
    program's source and the counting mode."""
    host_scalars.set_enabled(hosted)
    try:
        inputs, outputs, updates, watched, feeds = build()
        f = K.function(inputs, outputs, updates=updates)
    finally:
        host_scalars.set_enabled(None)
    results = [f(feeds) for _ in range(calls - 1)]
    with _DeviceReads() as counted:
        results.append(f(feeds))
    return results, [K.get_value(v) for v in watched], f._program.source, counted


def _both(build, calls=3, rtol=0.):
    hosted = _run(build, True, calls)
    plain = _run(build, False, calls)
    for a, b in zip(hosted[0] + [hosted[1]], plain[0] + [plain[1]]):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=rtol)
    assert '_host_scalar' not in plain[2]
    return hosted, plain


def _adam_like():
    """Keras' Adam scalars: `t = iterations + 1`, the bias-corrected rate, the counter's
    update; the rate scales a weight's update."""
    iterations = K.variable(0, dtype='int64')
    lr, beta_1, beta_2 = K.variable(0.1), K.variable(0.9), K.variable(0.999)
    w = K.variable([1., -2.])
    t = K.cast(iterations, 'float32') + 1
    lr_t = lr * (K.sqrt(1. - K.pow(beta_2, t)) / (1. - K.pow(beta_1, t)))
    updates = [K.update_add(iterations, 1), K.update(w, w - lr_t * w)]
    return [], [], updates, [iterations, w], []


def test_optimizer_scalars_are_computed_on_the_host_without_device_reads():
    (results, (iterations, w), source, counted), _ = _both(_adam_like, calls=4, rtol=1e-6)
    assert iterations == 4
    expected = np.array([1., -2.])
    for t in range(1, 5):
        expected = expected - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * expected
    np.testing.assert_allclose(w, expected, rtol=1e-6)
    assert '_fill(' in source and '_host_scalar(' in source
    assert counted.reads == 0
    # the step is two kernels: the weight's update and the counter's fill
    assert counted.ops <= 4


def test_a_variable_changed_by_set_value_is_read_again():
    def build():
        scale = K.variable(2.)
        w = K.variable([1., 1.])
        build.scale = scale
        return [], [], [K.update(w, w * (scale + 0.))], [w], []
    host_scalars.set_enabled(True)
    try:
        _, _, updates, (w,), _ = build()
        f = K.function([], [], updates=updates)
    finally:
        host_scalars.set_enabled(None)
    f([])
    K.set_value(build.scale, 3.)
    f([])
    np.testing.assert_array_equal(K.get_value(w), [6., 6.])


def test_sizes_from_shapes_are_python_numbers():
    def build():
        x = K.placeholder(shape=(None, 3))
        n = K.cast(K.prod([K.shape(x)[0], K.shape(x)[1]]), 'float32')
        mean = K.sum(x) / n
        corrected = x * (n / (n - 1.001))
        return [x], [mean, corrected], [], [], [np.arange(6.).reshape(2, 3)]
    (results, _, source, counted), (plain, _, _, plain_counted) = _both(build, rtol=1e-7)
    np.testing.assert_allclose(results[0][0], 2.5)
    np.testing.assert_allclose(results[0][1], np.arange(6.).reshape(2, 3) * 6 / 4.999,
                               rtol=1e-6)
    assert counted.reads == 0
    assert counted.ops < plain_counted.ops


def test_a_size_read_as_a_tensor_stays_a_tensor():
    def build():
        x = K.placeholder(shape=(None, 3))
        return [x], [K.shape(x), K.size(x) * 2], [], [], [np.ones((4, 3))]
    (results, _, source, _), _ = _both(build, calls=1)
    np.testing.assert_array_equal(results[0][0], [4, 3])
    assert results[0][1] == 24
    assert '_host_scalar' not in source


def test_a_variable_gradients_flow_to_is_read_as_a_tensor():
    def build():
        x = K.placeholder(shape=(2,))
        scale = K.variable(3.)
        loss = K.sum(x * (scale * 2.))
        return [x], K.gradients(loss, [scale]), [], [], [np.array([1., 2.])]
    (results, _, source, _), _ = _both(build, calls=1)
    np.testing.assert_allclose(results[0][0], 6.)
    assert '_host_scalar' not in source


def test_integer_host_values_follow_torch_promotion():
    def build():
        x = K.placeholder(shape=(None, 4))
        n = K.shape(x)[0]
        return [x], [x / n, x * (n // 3), n * 2.5 + x], [], [], [np.ones((7, 4), 'float32')]
    (results, _, _, _), _ = _both(build, calls=1)
    np.testing.assert_allclose(results[0][0], np.full((7, 4), 1 / 7), rtol=1e-6)
    np.testing.assert_array_equal(results[0][1], np.full((7, 4), 2.))
    np.testing.assert_array_equal(results[0][2], np.full((7, 4), 18.5))
    assert all(r.dtype == np.float32 for r in results[0])


@pytest.mark.parametrize('value, dtype, expected', [
    (1 / 3, torch.float32, float(np.float32(1 / 3))),
    (1 / 3, torch.float64, 1 / 3),
    (-2.7, torch.int64, -2),
    (0.5, torch.bool, True),
])
def test_host_values_are_rounded_to_the_node_dtype(value, dtype, expected):
    assert host_scalars._round(value, dtype) == expected


def test_host_scalar_reads_the_device_once_per_change():
    v = K.variable(1.5)
    with _DeviceReads() as counted:
        assert variables.host_scalar(v) == 1.5
        assert variables.host_scalar(v) == 1.5
    assert counted.reads == 1
    K.set_value(v, 2.5)
    assert variables.host_scalar(v) == 2.5
