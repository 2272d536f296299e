"""`tf.summary`: TensorBoard event files written by torch's `SummaryWriter` (the writer of
torchk's `TensorBoard` callback): `create_file_writer`, a writer's `as_default()`, and
`scalar`, `histogram`, `text` and `image` written to the default writer.

`trace_on` ... `trace_export(name, step)` writes, as the text summary `name`, each
`tf.function` called in between: its input signature and its Python source (TF writes the
graph it traced; torchk's programs are torch code, not TF graphs). With `profiler=True`,
torch's profiler runs too, its trace written into `profiler_outdir` (`tf.profiler`).
"""
import contextlib
import inspect
import textwrap

import numpy as np

from . import profiler as tf_profiler
from . import tracing
from .namespaces import module_getattr

__all__ = ['create_file_writer', 'scalar', 'histogram', 'text', 'image', 'flush', 'trace_on',
           'trace_off', 'trace_export']

_default = []  # the writers made default, innermost last


class SummaryWriter(object):
    """A `tf.summary` file writer: events of `logdir` (`create_file_writer`)."""

    def __init__(self, logdir, max_queue=None, flush_millis=None, filename_suffix=None):
        import keras  # noqa: F401  (first: torchk.callbacks is a Keras-facing module)
        from ..callbacks import _summary_writer_class
        options = {}
        if max_queue is not None:
            options['max_queue'] = max_queue
        if flush_millis is not None:
            options['flush_secs'] = max(1, flush_millis // 1000)
        self._writer = _summary_writer_class()(logdir, filename_suffix=filename_suffix or '',
                                               **options)

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Makes this the writer of the `tf.summary` ops inside the `with` block."""
        _default.append(self)
        try:
            yield self
        finally:
            _default.remove(self)
            self._writer.flush()

    def set_as_default(self, step=None):
        """Makes this the writer of the `tf.summary` ops from now on."""
        _default.append(self)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False):
    """A `SummaryWriter` of event files in `logdir`."""
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix)


def _write(method, name, value, step, **options):
    """Writes with the default writer; False (as TF) when there is none."""
    if not _default:
        return False
    if step is None:
        raise ValueError('tf.summary: no step given (torchk has no default step; pass '
                         'step=...).')
    getattr(_default[-1]._writer, method)(name, value, int(step), **options)
    return True


def _numpy(data):
    return np.asarray(data.detach().cpu() if hasattr(data, 'detach') else data)


def scalar(name, data, step=None, description=None):
    """Writes the scalar `data` at `step`."""
    return _write('add_scalar', name, float(_numpy(data)), step)


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes the histogram of `data` at `step` (`buckets` bins, default 30, as TF)."""
    return _write('add_histogram', name, _numpy(data).reshape(-1), step, bins=buckets or 30)


def text(name, data, step=None, description=None):
    """Writes the text `data` at `step`."""
    value = data if isinstance(data, str) else _numpy(data).reshape(-1)[0]
    return _write('add_text', name, value.decode() if isinstance(value, bytes) else value,
                  step)


def image(name, data, step=None, max_outputs=3, description=None):
    """Writes up to `max_outputs` images of the batch `data` (`(n, height, width,
    channels)`, floats in [0, 1] or uint8) at `step`."""
    images = _numpy(data)[:max_outputs]
    return _write('add_images', name, images, step, dataformats='NHWC')


def flush(writer=None, name=None):
    """Flushes `writer` (default: the default writer)."""
    writer = writer or (_default[-1] if _default else None)
    if writer is not None:
        writer.flush()


_trace = {'calls': None, 'profiler': False}


def _observe(function, args, kwargs):
    from .function_capture import call_template
    calls = _trace['calls']
    signature = repr(call_template(args, kwargs))
    if (function, signature) not in calls:
        calls.append((function, signature))


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Starts listing the `tf.function`s called (and, with `profiler`, profiling), for
    `trace_export`."""
    trace_off()
    _trace['calls'] = []
    tracing.call_observers.append(_observe)
    if profiler:
        tf_profiler.start(profiler_outdir or '.')
        _trace['profiler'] = True


def trace_off():
    """Stops what `trace_on` started, writing nothing."""
    if _observe in tracing.call_observers:
        tracing.call_observers.remove(_observe)
    _trace['calls'] = None
    if _trace['profiler']:
        _trace['profiler'] = False
        tf_profiler.finish(False)


def _source(function):
    try:
        return textwrap.dedent(inspect.getsource(function.python_function))
    except (OSError, TypeError):
        return repr(function.python_function)


def trace_export(name, step=None, profiler_outdir=None):
    """Writes the `tf.function`s called since `trace_on` (signature and source) as the
    text summary `name` at `step`, and the profile into `profiler_outdir`, then stops.

    # Returns
        False if there was no trace or no default writer, else True.

    # Raises
        ValueError: if a default writer is set and `step` is None.
    """
    calls = _trace['calls']
    if calls is None:
        return False
    if _trace['profiler']:
        _trace['profiler'] = False
        tf_profiler.finish(profiler_outdir)
    trace_off()
    report = '\n\n'.join('tf.function %s, called with %s:\n\n    %s' % (
        function.__name__, signature, _source(function).replace('\n', '\n    '))
        for function, signature in calls) or 'No tf.function was called.'
    return _write('add_text', name, report, step)


__getattr__ = module_getattr('tf.summary')
