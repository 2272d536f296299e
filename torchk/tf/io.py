"""`tf.io`: reading and writing whole files (`read_file`, `write_file`) and `tf.io.gfile`,
on the host's file system.

File contents are text: a scalar `StringTensor` of the file's bytes (`torchk/strings.py`),
as TF's `tf.string` tensors hold them.
"""
import glob as _glob
import os
import shutil

from .. import strings
from .namespaces import Namespace, module_getattr
from .op_errors import NotFoundError

__all__ = ['gfile', 'read_file', 'write_file']


def _path(filename, name):
    """A scalar file name (str, bytes, a scalar string tensor) as a `str`."""
    text = strings.as_bytes(filename, name)
    if text.ndim != 0:
        raise ValueError('tf.io: %s must be one file name (a scalar); got shape %s.'
                         % (name, text.shape))
    return os.fsdecode(text.item())


def read_file(filename, name=None):
    """The bytes of the file `filename`, as a scalar string tensor.

    # Raises
        tf.errors.NotFoundError: if there is no such file.
    """
    path = _path(filename, 'filename')
    try:
        with open(path, 'rb') as f:
            contents = f.read()
    except FileNotFoundError as error:
        raise NotFoundError('%s; No such file or directory' % path) from error
    return strings.StringTensor(contents)


def write_file(filename, contents, name=None):
    """Writes `contents` (a scalar string) to the file `filename`, creating or replacing it."""
    data = strings.as_bytes(contents, 'contents')
    if data.ndim != 0:
        raise ValueError('tf.io.write_file: contents must be a scalar string; got shape %s.'
                         % (data.shape,))
    with open(_path(filename, 'filename'), 'wb') as f:
        f.write(data.item())


def _listdir(path):
    """The names of the entries of the directory `path` (TF's order: unspecified)."""
    return os.listdir(_path(path, 'path'))


def _glob_files(pattern):
    return sorted(_glob.glob(_path(pattern, 'pattern')))


def _makedirs(path):
    os.makedirs(_path(path, 'path'), exist_ok=True)


def _rmtree(path):
    shutil.rmtree(_path(path, 'path'))


def _gfile_open(name, mode='r'):
    return open(_path(name, 'name'), mode)


gfile = Namespace('tf.io.gfile', {
    'listdir': _listdir, 'glob': _glob_files, 'makedirs': _makedirs, 'rmtree': _rmtree,
    'exists': lambda path: os.path.exists(_path(path, 'path')),
    'isdir': lambda path: os.path.isdir(_path(path, 'path')),
    'mkdir': lambda path: os.mkdir(_path(path, 'path')),
    'remove': lambda path: os.remove(_path(path, 'path')),
    'GFile': _gfile_open,
})
__getattr__ = module_getattr('tf.io')
