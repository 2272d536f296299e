"""Vocabulary files: the saved state of the text and lookup layers, read as data.

tf.keras keeps an adapted vocabulary beside a model, as a text file of one token per line:
the `vocabulary.txt` asset of a layer in a `.keras` zip, a SavedModel's string tensor, or a
file given as `vocabulary=` to a layer. Whichever the source, its text goes through `lines`:
its size is checked against `MAX_BYTES` and charged to the load's memory budget
(`validation.charge`) before it is decoded, and text that is not UTF-8 is a ModelFileError
naming the file. A vocabulary is only ever data: nothing in it is evaluated.

Keras 2's HDF5 files have no place for state beyond weights: while one is written
(`inlining_state`), the text and categorical layers put their adapted vocabulary, IDF weights
or boundaries into their configuration, as if given to their constructor (tf.keras refuses to
write such layers to HDF5; it reads these files, as torchk does).
"""
import contextlib
import contextvars
import os

from . import validation
from .errors import ModelFileError

ASSET_NAME = 'vocabulary.txt'

_INLINING = contextvars.ContextVar('torchk_inlining_state', default=False)

MAX_BYTES = 2 ** 30
"""The largest vocabulary file read (a vocabulary of a million tokens takes ~10 MB)."""


def lines(data, source):
    """The tokens of a vocabulary file's bytes, one per line.

    # Arguments
        data: the file's bytes.
        source: the file (or `where`) it came from, for errors.

    # Returns
        A list of `str`.

    # Raises
        ModelFileError: naming `source`, for a file over `MAX_BYTES` or over the load's
            memory budget, or not UTF-8.
    """
    if len(data) > MAX_BYTES:
        raise ModelFileError(source, 'its vocabulary has %d bytes, more than the %d a '
                             'vocabulary may have' % (len(data), MAX_BYTES))
    validation.charge(len(data) * 4, 'a vocabulary of %d bytes' % len(data))
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as e:
        raise ModelFileError(source, 'its vocabulary is not UTF-8 text (%s)' % e) from e
    return text.split('\n')


def read_file(path):
    """The tokens of a vocabulary file given to a layer (`vocabulary='vocab.txt'`): one per
    line, a final newline ending the last line, not starting another.

    # Raises
        ValueError: if the file does not exist.
        ModelFileError: as `lines`.
    """
    if not os.path.isfile(path):
        raise ValueError('vocabulary: the file %r does not exist.' % (path,))
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        raise ModelFileError(path, 'its vocabulary has %d bytes, more than the %d a '
                             'vocabulary may have' % (size, MAX_BYTES))
    with open(path, 'rb') as f:
        data = f.read(MAX_BYTES + 1)
    tokens = lines(data, path)
    return tokens[:-1] if data.endswith(b'\n') else tokens


def write(tokens):
    """A vocabulary file's bytes, as tf.keras writes it: the tokens joined by newlines."""
    return '\n'.join(tokens).encode('utf-8')


@contextlib.contextmanager
def inlining_state():
    """Inside, `inlining()` is True: configurations carry the layers' adapted state."""
    token = _INLINING.set(True)
    try:
        yield
    finally:
        _INLINING.reset(token)


def inlining():
    """Whether a configuration written now should carry adapted state (`inlining_state`)."""
    return _INLINING.get()
