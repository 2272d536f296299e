"""TF's errors (`tf.errors`) and the one that torchk raises where torch raised another
(`tf_error`)."""
import torch


class OpError(Exception):
    """TF's base error type (`tf.errors.OpError`)."""


class InvalidArgumentError(OpError, ValueError):
    """`tf.errors.InvalidArgumentError`; torchk's ops raise ValueError and TypeError."""


class ResourceExhaustedError(OpError, RuntimeError):
    """`tf.errors.ResourceExhaustedError`."""


class NotFoundError(OpError, OSError):
    """`tf.errors.NotFoundError`."""


class OutOfRangeError(OpError, IndexError):
    """`tf.errors.OutOfRangeError`."""


class UnimplementedError(OpError, NotImplementedError):
    """`tf.errors.UnimplementedError`."""


class DataLossError(OpError, IOError):
    """`tf.errors.DataLossError`: a file's content is truncated or corrupted."""


def tf_error(error):
    """The `tf.errors` exception TF raises where torch (or torchk's checks) raised `error`:
    `ResourceExhaustedError` for memory, `UnimplementedError` for what a kernel does not
    implement, `InvalidArgumentError` for the rest (shapes, dtypes, values). Each is also a
    subclass of the Python exception it replaces (`ValueError`, `RuntimeError`,
    `NotImplementedError`), so handlers of either catch it."""
    if isinstance(error, OpError):
        return error
    if isinstance(error, torch.OutOfMemoryError):
        return ResourceExhaustedError(str(error))
    if isinstance(error, NotImplementedError):
        return UnimplementedError(str(error))
    return InvalidArgumentError(str(error))
