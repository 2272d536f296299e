"""Checks of user input made before torch kernels that could crash, corrupt memory or hit a
device-side assert on it.

Every check raises a `ValueError` that names the op, the Keras layer being built when there is
one (from the current `K.name_scope`), the argument, and the expected and actual values, so
that a user's typo costs an exception, never the process.
"""
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
