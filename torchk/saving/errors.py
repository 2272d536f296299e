"""The one error a model file reader raises for a file it cannot read, and `reading`, which
makes every error of a load one."""
import contextlib
import contextvars
import json

CONFIGURATION = 'the configuration'
"""What errors name when the load reads a configuration, not a file."""

_SOURCE = contextvars.ContextVar('torchk_model_source', default=None)

# What Keras' deserializers and h5py raise on a file or configuration that is not what Keras
# wrote: each becomes a ModelFileError naming the source (its cause chained).
_FILE_ERRORS = (ValueError, OSError, LookupError, TypeError, AttributeError, AssertionError,
                RecursionError, RuntimeError, EOFError)


class ModelFileError(OSError, ValueError):
    """A model or weights file that is damaged, hostile or not what it claims to be.

    Both an `OSError` (as h5py's own errors for unreadable files) and a `ValueError` (as
    Keras' errors for invalid configurations), so that existing handlers of either catch it.

    # Arguments
        path: the file (or directory) read, or `CONFIGURATION`.
        what: what is wrong with it, in words a user can act on.
    """

    def __init__(self, path, what):
        super().__init__('%s: %s' % (path, what))
        self.path = path
        self.what = what


def source():
    """The file (or `CONFIGURATION`) that the enclosing load reads, None outside a load."""
    return _SOURCE.get()


@contextlib.contextmanager
def reading(path):
    """Runs a load of `path` (a file, a directory or `CONFIGURATION`): errors raised inside
    become ModelFileErrors naming it. A load inside another keeps the outer one's source.

    # Raises
        ModelFileError: for any of the errors a damaged or hostile file makes Keras, h5py or
            torchk's readers raise (`_FILE_ERRORS`), with the original as its cause.
    """
    if _SOURCE.get() is not None:
        yield
        return
    token = _SOURCE.set(str(path))
    try:
        yield
    except ModelFileError:
        raise
    except json.JSONDecodeError as e:
        raise ModelFileError(path, 'invalid JSON (%s)' % e) from e
    except RecursionError as e:
        raise ModelFileError(path, 'the configuration is nested too deeply to read') from e
    except _FILE_ERRORS as e:
        raise ModelFileError(path, _describe(e)) from e
    finally:
        _SOURCE.reset(token)


def _describe(error):
    message = str(error)
    if isinstance(error, (ValueError, OSError)) and message:
        return message
    return 'not a valid Keras model (%s: %s)' % (type(error).__name__, message or 'no message')
