"""The one error a model file reader raises for a file it cannot read."""


class ModelFileError(OSError, ValueError):
    """A model or weights file that is damaged, hostile or not what it claims to be.

    Both an `OSError` (as h5py's own errors for unreadable files) and a `ValueError` (as
    Keras' errors for invalid configurations), so that existing handlers of either catch it.

    # Arguments
        path: the file (or directory) read.
        what: what is wrong with it, in words a user can act on.
    """

    def __init__(self, path, what):
        super().__init__('%s: %s' % (path, what))
        self.path = path
        self.what = what
