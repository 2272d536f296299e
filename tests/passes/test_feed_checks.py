"""The feed checks pass (torchk/passes/feed_checks.py): gathers at fed indices are checked on
the fed value, before the program runs and without reading the device, with the same results
and the same errors as the gather's own check."""
import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchk import core as K
from torchk.passes import feed_checks

TABLE = np.arange(12., dtype='float32').reshape(4, 3)


class _DeviceReads(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.reads += 1
        return func(*args, **(kwargs or {}))


def _step(enabled, dtype):
    """An Embedding's step: rows at the fed (cast) indices, and an update of the table."""
    feed_checks.set_enabled(enabled)
    try:
        table = K.variable(TABLE)
        indices = K.placeholder(shape=(None, 2), dtype=dtype)
        rows = K.gather(table, K.cast(indices, 'int32') if dtype != 'int32' else indices)
        loss = K.sum(rows)
        grad = K.gradients(loss, [table])[0]
        return K.function([indices], [rows], updates=[K.update(table, table - grad)]), table
    finally:
        feed_checks.set_enabled(None)


@pytest.mark.parametrize('dtype, fed', [
    ('int32', np.array([[0, 3], [2, 2]], 'int32')),
    ('int64', np.array([[0, 3], [2, 2]], 'int64')),
    ('float32', np.array([[0.2, 3.9], [2., 2.5]], 'float32')),   # the cast truncates
])
def test_checked_where_fed_with_the_same_values(dtype, fed):
    checked, table = _step(True, dtype)
    plain, plain_table = _step(False, dtype)
    assert len(checked._checks) == 1 and not plain._checks
    with _DeviceReads() as counted:
        rows = checked([fed])
    np.testing.assert_array_equal(rows, plain([fed]))
    np.testing.assert_array_equal(K.get_value(table), K.get_value(plain_table))
    np.testing.assert_array_equal(rows[0], TABLE[[[0, 3], [2, 2]]])
    assert counted.reads == 0


@pytest.mark.parametrize('dtype, fed, bad', [
    ('int64', [[0, 4]], '4'),
    ('int32', [[-1, 0]], '-1'),
    ('float32', [[0., 4.3]], '4'),
    ('float32', [[-1., 0.]], '-1'),
    ('float32', [[np.nan, 0.]], 'nan'),
])
@pytest.mark.parametrize('enabled', [True, False])
def test_out_of_range_indices_raise_naming_the_range(dtype, fed, bad, enabled):
    step, table = _step(enabled, dtype)
    # the gather's own check names the index as the cast made it (NaN becomes an int)
    bad = bad if enabled or bad != 'nan' else '-?[0-9]+'
    with pytest.raises(ValueError, match=r'gather.*\[0, 4\), got %s\.' % bad):
        step([np.array(fed, dtype)])
    if enabled:  # checked before the program runs: nothing was updated
        np.testing.assert_array_equal(K.get_value(table), TABLE)


def test_fed_tensors_are_checked_too():
    step, _ = _step(True, 'int64')
    with pytest.raises(ValueError, match=r'\[0, 4\), got 7'):
        step([torch.tensor([[1, 7]])])


def test_computed_indices_keep_the_gather_check():
    def build():
        indices = K.placeholder(shape=(2,), dtype='int32')
        return K.function([indices], [K.gather(K.variable(TABLE), indices + 1)])
    step = build()
    assert not step._checks
    np.testing.assert_array_equal(step([np.array([0, 2], 'int32')])[0], TABLE[[1, 3]])
    with pytest.raises(ValueError, match=r'\[0, 4\), got 4'):
        step([np.array([0, 3], 'int32')])
