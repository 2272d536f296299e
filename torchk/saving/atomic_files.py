"""Files written whole or not at all: what `model.save`, `save_weights` and the `.keras`
writer write goes to a temporary file beside the target, renamed over it once complete."""
import contextlib
import os
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
