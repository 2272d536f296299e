"""`tf.profiler.experimental` on torch's profiler: `start(logdir)` ... `stop()` profiles what
runs in between (CPU, and CUDA where torch uses a GPU) and writes torch's trace into `logdir`
(`<host>.<time>.pt.trace.json`, which TensorBoard's PyTorch profiler plugin and Chrome's
`chrome://tracing` read; not TF's `.xplane.pb`). `Trace(name)` names a span of the profile.
"""
import atexit
import os
import socket
import time

import torch

from .namespaces import Namespace, module_getattr

__all__ = ['experimental']

_active = []  # the running profiler and its log folder


class ProfilerOptions(object):
    """TF's profiler options (`tf.profiler.experimental.ProfilerOptions`): accepted, unused
    (torch's profiler records host and device activity as it is)."""

    def __init__(self, host_tracer_level=2, python_tracer_level=0, device_tracer_level=1,
                 delay_ms=None):
        self.host_tracer_level = host_tracer_level


def start(logdir, options=None):
    """Starts profiling; `stop` writes the trace into `logdir`.

    # Raises
        RuntimeError: if a profile is already running (TF's `AlreadyExistsError` case).
    """
    if _active:
        raise RuntimeError('tf.profiler.experimental.start: a profile is already running '
                           '(into %s); stop it first.' % _active[0][1])
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    profile = torch.profiler.profile(activities=activities)
    profile.__enter__()
    _active.append((profile, os.fspath(logdir)))
    atexit.unregister(_discard_at_exit)
    atexit.register(_discard_at_exit)


def _discard_at_exit():
    """A profile never stopped ends with the process, unwritten (as TF's)."""
    if _active:
        finish(False)


def stop(save=True):
    """Stops the profile `start` began and (with `save`) writes its trace.

    # Returns
        The trace file written, or None.

    # Raises
        RuntimeError: if no profile is running (TF's `UnavailableError` case).
    """
    return finish(None if save else False)


def finish(logdir=None):
    """Stops the running profile and writes its trace into `logdir` (None: the folder given
    to `start`; False: nowhere).

    # Returns
        The trace file written, or None.

    # Raises
        RuntimeError: if no profile is running.
    """
    if not _active:
        raise RuntimeError('tf.profiler.experimental.stop: no profile is running (start it '
                           'with tf.profiler.experimental.start(logdir)).')
    profile, started_logdir = _active.pop()
    profile.__exit__(None, None, None)
    if logdir is False:
        return None
    logdir = started_logdir if logdir is None else os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, '%s.%d.pt.trace.json' % (socket.gethostname(),
                                                        int(time.time() * 1000)))
    profile.export_chrome_trace(path)
    return path


class Trace(object):
    """Names a span of the profile (`with tf.profiler.experimental.Trace('train', step_num=1)`),
    as torch's `record_function`."""

    def __init__(self, name, **kwargs):
        label = name + ''.join('#%s=%s' % item for item in sorted(kwargs.items()))
        self._record = torch.profiler.record_function(label)

    def __enter__(self):
        self._record.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._record.__exit__(*exc_info)


experimental = Namespace('tf.profiler.experimental', {
    'start': start, 'stop': stop, 'Trace': Trace, 'ProfilerOptions': ProfilerOptions})

__getattr__ = module_getattr('tf.profiler')
