"""Files written whole or not at all: what `model.save`, `save_weights` and the `.keras`
writer write goes to a temporary file beside the target, renamed over it once complete.

`saving_model_atomically` and `saving_weights_atomically` are the overrides of Keras 2.3.1's
`keras.engine.saving.save_model` (which `Network.save` and `ModelCheckpoint` call) and
`Network.save_weights` (`torchk.overrides`).
"""
import contextlib
import functools
import os
import sys
import tempfile


@contextlib.contextmanager
def replacing(filepath):
    """A context manager yielding a temporary path beside `filepath` to write; when the block
    completes, that file takes `filepath`'s place. An exception (or a kill) mid-write leaves
    the previous file as it was; on an exception the temporary file is removed.

    The file gets the previous file's permissions, else those the umask gives a new file
    (`mkstemp` creates its files readable by their owner only).
    """
    directory, name = os.path.split(os.path.abspath(filepath))
    handle, temporary = tempfile.mkstemp(prefix='.%s.' % name, suffix='.saving', dir=directory)
    os.close(handle)
    try:
        os.chmod(temporary, _mode_for(filepath))
        yield temporary
        os.replace(temporary, filepath)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def _mode_for(filepath):
    if os.path.exists(filepath):
        return os.stat(filepath).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def saving_model_atomically(save_model):
    """Override of `keras.engine.saving.save_model` (saving.py:497): `_saving_atomically`,
    asking `keras.engine.saving.ask_to_proceed_with_overwrite`."""
    return _saving_atomically(save_model, sys.modules['keras.engine.saving'])


def saving_weights_atomically(save_weights):
    """Override of `Network.save_weights` (network.py:1154): `_saving_atomically`, asking
    `keras.engine.network.ask_to_proceed_with_overwrite`."""
    return _saving_atomically(save_weights, sys.modules['keras.engine.network'])


def _saving_atomically(save, module):
    """`save(obj, filepath, overwrite=True, ...)` made to write a temporary file beside
    `filepath` and rename it over `filepath` once complete: an exception or a kill mid-write
    leaves the previous file as it was. Other targets (h5py groups, file objects, `gs://`
    paths) are saved as Keras does. With `overwrite=False`, the prompt is
    `module.ask_to_proceed_with_overwrite`, looked up at each call as `save` itself does, so
    that a patch there (Keras' tests patch `keras.engine.saving`'s) answers it."""
    @functools.wraps(save)
    def save_atomically(obj, filepath, overwrite=True, *args, **kwargs):
        if not isinstance(filepath, (str, os.PathLike)) or str(filepath).startswith('gs://'):
            return save(obj, filepath, overwrite, *args, **kwargs)
        filepath = os.fspath(filepath)
        if not overwrite and os.path.isfile(filepath):
            if not module.ask_to_proceed_with_overwrite(filepath):
                return None
        with replacing(filepath) as temporary:
            return save(obj, temporary, True, *args, **kwargs)
    return save_atomically
