"""The C allocator's settings for training loops, applied once when torchk is imported.

glibc serves every allocation above a threshold (128 KiB to 32 MiB, adjusted at run time)
with its own `mmap` and returns it to the system when freed, so each training step
page-faults its large intermediates (gradients, optimizer temporaries) in anew: an MLP step
ran 1.6 times slower than with freed memory kept in the process. torchk raises glibc's mmap
and trim thresholds with `mallopt`, the usual PyTorch advice on CPUs, so that freed blocks are
reused. The process then keeps its peak heap instead of returning it.

Nothing is changed with `TORCHK_MALLOPT=0`, when the user set `MALLOC_MMAP_THRESHOLD_` or
`MALLOC_TRIM_THRESHOLD_` (glibc's own variables for the same settings), when another
allocator is preloaded (`LD_PRELOAD`), or outside glibc.
"""
import ctypes
import os
import platform
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 1 << 30
_configured = None


def _wanted():
    if os.environ.get('TORCHK_MALLOPT') == '0':
        return False
    if any(name in os.environ for name in ('MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_')):
        return False
    if os.environ.get('LD_PRELOAD'):
        return False
    return sys.platform.startswith('linux') and platform.libc_ver()[0] == 'glibc'


def configure():
    """Applies the thresholds once; returns True if glibc accepted them."""
    global _configured
    if _configured is None:
        _configured = False
        if _wanted():
            libc = ctypes.CDLL(None)
            _configured = bool(libc.mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)
                               and libc.mallopt(_M_TRIM_THRESHOLD, _THRESHOLD))
    return _configured
