"""The first bytes by which model files are recognised, shared by `formats` and `keras_zip`."""

HDF5_SIGNATURE = b'\x89HDF\r\n\x1a\n'
# A zip starts with a local file header, or, when empty, with its end of central directory.
ZIP_SIGNATURES = (b'PK\x03\x04', b'PK\x05\x06')


def starts_with(path, signatures):
    """Whether the file at `path` starts with one of `signatures` (False for a directory or a
    file that cannot be opened).

    # Arguments
        path: a file path.
        signatures: a tuple of byte strings.

    # Returns
        A bool.
    """
    try:
        with open(path, 'rb') as f:
            return f.read(max(len(s) for s in signatures)).startswith(signatures)
    except (IsADirectoryError, FileNotFoundError, PermissionError):
        return False
