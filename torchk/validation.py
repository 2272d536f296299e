"""Checks of user input made before torch kernels that could crash, corrupt memory or hit a
device-side assert on it.

Every check raises a `ValueError` that names the op, the Keras layer being built when there is
one (from the current `K.name_scope`), the argument, and the expected and actual values, so
that a user's typo costs an exception, never the process.
"""
import torch

from . import graph
from . import variables


def _where(op):
    scope = variables.current_scope()
    return '%s (in layer %r)' % (op, scope) if scope else op


def fail(op, message):
    """Raises the `ValueError` of a failed check of `op`'s input, prefixed with the op and
    the Keras layer being built."""
    raise ValueError('%s: %s' % (_where(op), message))


def format_shape(shape):
    """`shape` written as Keras prints shapes: `(None, 3)`, `(5,)`."""
    shape = tuple(shape)
    if len(shape) == 1:
        return '(%s,)' % ('None' if shape[0] is None else shape[0])
    return '(%s)' % ', '.join('None' if d is None else str(d) for d in shape)


def check_shape(op, argument, actual, expected):
    """Checks that `actual` (a shape) matches `expected`, whose `None` entries match any size.

    # Raises
        ValueError: naming `op`, `argument` and both shapes, if the ranks or a known size differ.
    """
    actual, expected = tuple(actual), tuple(expected)
    if len(actual) != len(expected) or any(
            e is not None and e != a for a, e in zip(actual, expected)):
        fail(op, '%s must have shape %s, got %s.'
             % (argument, format_shape(expected), format_shape(actual)))


def check_index_range(op, argument, indices, size):
    """Checks that every value of the integer tensor `indices` lies in `[0, size)`.

    On meta tensors and while static shapes are inferred (the example values are made up)
    nothing is checked; an exported program (`graph.exporting()`) has no values
    to check either. On CUDA the check reads two numbers back (one device sync): a CUDA
    kernel's own index assert would leave the process's CUDA context unusable.

    # Raises
        ValueError: naming `op`, `argument`, the valid range and the first bad index.
    """
    if (indices.device.type == 'meta' or graph.inferring() or graph.exporting()
            or indices.numel() == 0):
        return
    low, high = torch.stack(torch.aminmax(indices)).tolist()
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        fail(op, '%s must lie in [0, %d), got %d.' % (argument, size, bad))


def check_window_fits(op, argument, sizes, kernel_sizes, dilations, padding):
    """Checks that with `padding` 'valid' each window, `(kernel_size - 1) * dilation + 1`,
    fits in its spatial size (torch raises an unnamed RuntimeError, TF a shape error).

    # Raises
        ValueError: naming `op`, `argument`, the window and the input's spatial sizes.
    """
    windows = tuple((k - 1) * d + 1 for k, d in zip(kernel_sizes, dilations))
    if padding == 'valid' and any(w > s for s, w in zip(sizes, windows)):
        fail(op, "with padding 'valid', the %s window %s (dilated) must fit in the input's "
             'spatial shape %s.' % (argument, format_shape(windows), format_shape(sizes)))
