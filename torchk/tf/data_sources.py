"""The file sources of `tf.data`: `TextLineDataset` (lines of text files), `TFRecordDataset`
(the records of TFRecord files).

Files are read when the dataset is iterated, in Python, one line at a time; each element is
a string scalar (`torchk.strings.StringTensor`), as TF's `tf.string` elements.
"""
import gzip
import os
import struct
import zlib

import numpy as np

from .. import strings
from . import data
from .op_errors import DataLossError, NotFoundError

__all__ = ['TextLineDataset', 'TFRecordDataset']


def _text(value):
    return strings.StringTensor(np.array(value, dtype=object))


def file_names(filenames, source):
    """`filenames` (a path, a list of them, a string tensor, or a `Dataset` of paths) as an
    iterable of `str` paths, read anew on each iteration of a `Dataset`."""
    if isinstance(filenames, data.Dataset):
        return _Names(filenames)
    if isinstance(filenames, os.PathLike):
        filenames = os.fspath(filenames)
    names = strings.as_bytes(filenames, '%s: filenames' % source)
    if names.ndim > 1:
        raise ValueError('%s: filenames must be a path or a 1-D list of paths; got shape %s.'
                         % (source, names.shape))
    return [name.decode('utf-8') for name in names.reshape(-1).tolist()]


class _Names:
    def __init__(self, dataset):
        self._dataset = dataset

    def __iter__(self):
        return (strings.as_bytes(name).item().decode('utf-8') for name in self._dataset)


def _opened(path, compression_type, source):
    try:
        if compression_type == 'GZIP':
            return gzip.open(path, 'rb')
        handle = open(path, 'rb')
    except FileNotFoundError as error:
        raise NotFoundError('%s: %s; No such file or directory' % (source, path)) from error
    if compression_type == 'ZLIB':
        with handle:
            return _Lines(zlib.decompress(handle.read()))
    return handle


class _Lines:
    """Decompressed bytes with a file's line iteration and context manager."""

    def __init__(self, content):
        self._lines = content.splitlines(keepends=True)

    def __enter__(self):
        return iter(self._lines)

    def __exit__(self, *exc):
        return False


def _compression(compression_type, source):
    kind = (compression_type or '').upper()
    if kind not in ('', 'GZIP', 'ZLIB'):
        raise ValueError('%s: compression_type must be "", "GZIP" or "ZLIB"; got %r.'
                         % (source, compression_type))
    return kind


def _lines(path, compression_type):
    with _opened(path, compression_type, 'tf.data.TextLineDataset') as handle:
        for line in handle:
            if line.endswith(b'\n'):
                line = line[:-1]
                if line.endswith(b'\r'):
                    line = line[:-1]
            yield _text(line)


class TextLineDataset(data.Dataset):
    """The lines of text files, without their line endings (`\\n`, `\\r\\n`), as string
    scalars: file after file, or `num_parallel_reads` files interleaved line by line.

    # Arguments
        filenames: a path, a list of paths, a string tensor of them or a `Dataset` of them.
        compression_type: `None` or `""` (plain), `"GZIP"` or `"ZLIB"`.
        buffer_size: accepted (Python buffers the reads).
        num_parallel_reads: how many files to read at once, their lines interleaved (TF's
            order); default one at a time.

    # Raises
        tf.errors.NotFoundError: when iterated, for a file that does not exist.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        paths = file_names(filenames, 'tf.data.TextLineDataset')
        kind = _compression(compression_type, 'tf.data.TextLineDataset')
        super().__init__(_files(paths, num_parallel_reads, lambda path: _lines(path, kind)))


def _files(paths, num_parallel_reads, read):
    """The iteration of the elements `read(path)` yields for each of `paths`: file after
    file, or `num_parallel_reads` files interleaved element by element (TF's order)."""
    files = data.Dataset(lambda: iter(paths))

    def per_file(path):
        return data.Dataset(lambda: read(path))
    if num_parallel_reads in (None, 1):
        return files.flat_map(per_file)._iterate
    return files.interleave(per_file, cycle_length=num_parallel_reads)._iterate


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def _masked_crc(content):
    """TFRecord's checksum: CRC-32C (Castagnoli), rotated and offset."""
    crc = 0xFFFFFFFF
    for byte in content:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _read(handle, size, path):
    content = handle.read(size)
    if len(content) != size:
        raise DataLossError('tf.data.TFRecordDataset: %s is truncated: a record needs %d '
                            'more bytes than the file has.' % (path, size - len(content)))
    return content


def _records(path, compression_type):
    with _opened(path, compression_type, 'tf.data.TFRecordDataset') as handle:
        if isinstance(handle, _Lines):
            raise ValueError('tf.data.TFRecordDataset: compression_type "ZLIB" is not '
                             'supported by torchk; use "GZIP" or none.')
        while True:
            header = handle.read(12)
            if not header:
                return
            if len(header) != 12:
                _read(handle, 12 - len(header), path)
            length, length_crc = struct.unpack('<QI', header)
            if _masked_crc(header[:8]) != length_crc:
                raise DataLossError('tf.data.TFRecordDataset: %s is not a TFRecord file, or '
                                    'is corrupted (a record length fails its checksum).' % path)
            record = _read(handle, length, path)
            (record_crc,) = struct.unpack('<I', _read(handle, 4, path))
            if _masked_crc(record) != record_crc:
                raise DataLossError('tf.data.TFRecordDataset: %s is corrupted (a record fails '
                                    'its checksum).' % path)
            yield _text(record)


class TFRecordDataset(data.Dataset):
    """The records of TFRecord files (each a length, its checksum, the bytes, theirs) as
    string scalars (serialized `tf.train.Example`s, usually), checksums verified.

    # Arguments
        filenames: a path, a list of paths, a string tensor of them or a `Dataset` of them.
        compression_type: `None` or `""` (plain) or `"GZIP"`.
        buffer_size: accepted (Python buffers the reads).
        num_parallel_reads: how many files to read at once, their records interleaved
            (TF's order); default one at a time.

    # Raises
        tf.errors.NotFoundError: when iterated, for a file that does not exist;
        tf.errors.DataLossError: for a truncated or corrupted file.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        paths = file_names(filenames, 'tf.data.TFRecordDataset')
        kind = _compression(compression_type, 'tf.data.TFRecordDataset')
        super().__init__(_files(paths, num_parallel_reads, lambda path: _records(path, kind)))
