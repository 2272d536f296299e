"""glibc allocator thresholds set at import (torchk/passes/allocator.py), and their opt-outs."""
import platform
import sys

import pytest

from torchk.passes import allocator

GLIBC = sys.platform.startswith('linux') and platform.libc_ver()[0] == 'glibc'


@pytest.fixture
def clean_env(monkeypatch):
    for name in ('TORCHK_MALLOPT', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_',
                 'LD_PRELOAD'):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.skipif(not GLIBC, reason='mallopt is glibc-only')
def test_applied_at_import_on_glibc(clean_env):
    clean_env.setattr(allocator, '_configured', None)
    assert allocator._wanted()
    assert allocator.configure() is True


@pytest.mark.parametrize('name, value', [('TORCHK_MALLOPT', '0'),
                                         ('MALLOC_MMAP_THRESHOLD_', '65536'),
                                         ('MALLOC_TRIM_THRESHOLD_', '65536'),
                                         ('LD_PRELOAD', 'libjemalloc.so')])
def test_user_settings_win(clean_env, name, value):
    clean_env.setenv(name, value)
    assert not allocator._wanted()
