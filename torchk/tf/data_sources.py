"""The file sources of `tf.data`: `TextLineDataset` (lines of text files), `TFRecordDataset`
(the records of TFRecord files), `experimental.CsvDataset` and `experimental.make_csv_dataset`
(the records of CSV files, RFC 4180, as Python's `csv` module reads them).

Files are read when the dataset is iterated, in Python, one line at a time; each element is
a string scalar (`torchk.strings.StringTensor`), as TF's `tf.string` elements.
"""
import csv
import glob
import gzip
import io
import os
import struct
import zlib

import numpy as np

import torch

from .. import strings
from .. import tf_dtypes as dtypes
from .dataset import Dataset
from .op_errors import DataLossError, InvalidArgumentError, NotFoundError
from .tensors import convert_to_tensor

__all__ = ['TextLineDataset', 'TFRecordDataset', 'CsvDataset', 'make_csv_dataset']


def _text(value):
    return strings.StringTensor(np.array(value, dtype=object))


def file_names(filenames, source):
    """`filenames` (a path, a list of them, a string tensor, or a `Dataset` of paths) as an
    iterable of `str` paths, read anew on each iteration of a `Dataset`."""
    if isinstance(filenames, Dataset):
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


class TextLineDataset(Dataset):
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
    files = Dataset(lambda: iter(paths))

    def per_file(path):
        return Dataset(lambda: read(path))
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


class TFRecordDataset(Dataset):
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


_CSV_DTYPES = ('float32', 'float64', 'int32', 'int64', 'string')
_INT_RANGES = {'int32': (-2 ** 31, 2 ** 31 - 1), 'int64': (-2 ** 63, 2 ** 63 - 1)}


class _Column:
    """A CSV column's dtype and default (None: the field is required)."""

    def __init__(self, record_default, index):
        if not isinstance(record_default, (dtypes.DType, torch.dtype, type, np.dtype)) and (
                isinstance(record_default, (int, float, str, bytes, list, tuple, np.ndarray,
                                            torch.Tensor, strings.StringTensor))):
            value = convert_to_tensor(record_default)
            self.dtype = dtypes.as_dtype(value.dtype)
            flat = np.asarray(value.numpy() if isinstance(value, strings.StringTensor)
                              else value.detach().cpu().numpy()).reshape(-1)
            if flat.size > 1:
                raise ValueError('tf.data.experimental.CsvDataset: record_defaults[%d] must '
                                 'have at most one element; it has %d.' % (index, flat.size))
            self.default = flat[0] if flat.size else None
        else:
            self.dtype, self.default = dtypes.as_dtype(record_default), None
        if self.dtype.name not in _CSV_DTYPES:
            raise TypeError('tf.data.experimental.CsvDataset: record_defaults[%d] has dtype %s; '
                            'CSV columns are one of %s.' % (index, self.dtype.name,
                                                            ', '.join(_CSV_DTYPES)))

    def parse(self, field, na_value, column, record):
        if field == '' or field == na_value:
            if self.default is None:
                raise InvalidArgumentError('tf.data.experimental.CsvDataset: field %d is '
                                           'required but missing in record %d.'
                                           % (column, record))
            value = self.default
        elif self.dtype.name == 'string':
            value = field.encode('utf-8', 'surrogateescape')
        elif self.dtype.name in _INT_RANGES:
            low, high = _INT_RANGES[self.dtype.name]
            try:
                value = int(field.strip())
            except ValueError:
                value = None
            if value is None or not low <= value <= high:
                raise InvalidArgumentError('tf.data.experimental.CsvDataset: field %d in '
                                           'record %d is not a valid %s: %r.'
                                           % (column, record, self.dtype.name, field))
        else:
            try:
                value = float(field.strip())
            except ValueError as error:
                raise InvalidArgumentError('tf.data.experimental.CsvDataset: field %d in '
                                           'record %d is not a valid float: %r.'
                                           % (column, record, field)) from error
        if self.dtype.name == 'string':
            return _text(value)
        return torch.tensor(value, dtype=self.dtype.torch_dtype,
                            device=convert_to_tensor(0).device)


def _csv_rows(path, compression_type, header, delimiter, use_quote_delim):
    """The fields (`str`, undecodable bytes kept as surrogates) of a CSV file's records,
    with their record numbers."""
    with _opened(path, compression_type, 'tf.data.experimental.CsvDataset') as handle:
        lines = (line.decode('utf-8', 'surrogateescape') for line in handle)
        reader = csv.reader(lines, delimiter=delimiter,
                            quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
        for number, fields in enumerate(reader):
            if number == 0 and header:
                continue
            yield number, fields or ['']


class CsvDataset(Dataset):
    """The records of CSV files as tuples of scalars, one per selected column
    (`tf.data.experimental.CsvDataset`).

    # Arguments
        filenames: a path, a list of paths, a string tensor of them or a `Dataset` of them.
        record_defaults: one per column read: a dtype (float32, float64, int32, int64,
            string: the field is required) or a default value (a number, a string, or a
            tensor of one element, or of none: required) used where the field is empty or
            `na_value`.
        compression_type: `None` or `""` (plain), `"GZIP"` or `"ZLIB"`.
        buffer_size: accepted (Python buffers the reads).
        header: whether each file's first record is a header to skip.
        field_delim: the field separator.
        use_quote_delim: whether double quotes quote fields (RFC 4180).
        na_value: a field value that is read as missing.
        select_cols: the sorted indices of the columns to read (default all).
        exclude_cols: the indices of the columns not to read (instead of `select_cols`).

    # Raises
        tf.errors.InvalidArgumentError: when iterated, for a record with another number of
            fields, a required field missing, or a field that is not a number of its dtype.
    """

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=',', use_quote_delim=True, na_value='',
                 select_cols=None, exclude_cols=None, name=None):
        paths = file_names(filenames, 'tf.data.experimental.CsvDataset')
        kind = _compression(compression_type, 'tf.data.experimental.CsvDataset')
        columns = [_Column(default, i) for i, default in enumerate(record_defaults)]
        if select_cols is not None and exclude_cols is not None:
            raise ValueError('tf.data.experimental.CsvDataset: give select_cols or '
                             'exclude_cols, not both.')
        if exclude_cols is not None:
            excluded = set(int(i) for i in exclude_cols)
            select_cols = [i for i in range(len(columns) + len(excluded)) if i not in excluded]
        if select_cols is not None:
            select_cols = [int(i) for i in select_cols]
            if select_cols != sorted(set(select_cols)) or len(select_cols) != len(columns):
                raise ValueError('tf.data.experimental.CsvDataset: select_cols must be sorted '
                                 'distinct indices, one per record default; got %s for %d '
                                 'defaults.' % (select_cols, len(columns)))

        def read(path):
            for number, fields in _csv_rows(path, kind, header, field_delim, use_quote_delim):
                indices = select_cols or range(len(columns))
                if (len(fields) != len(columns) if select_cols is None
                        else len(fields) <= indices[-1]):
                    raise InvalidArgumentError(
                        'tf.data.experimental.CsvDataset: expected %d fields but record %d '
                        'of %s has %d.' % (len(columns) if select_cols is None
                                           else indices[-1] + 1, number, path, len(fields)))
                yield tuple(column.parse(fields[i], na_value, i, number)
                            for column, i in zip(columns, indices))
        super().__init__(_files(paths, None, read))


def _glob(file_pattern, source, error=ValueError):
    """The sorted paths matching a glob pattern or any of a list of them (hidden files too,
    as TF's matching)."""
    if isinstance(file_pattern, (str, bytes, os.PathLike)):
        patterns = [os.fsdecode(file_pattern)]
    else:
        patterns = [name.decode('utf-8') for name in strings.as_bytes(
            file_pattern, '%s: file_pattern' % source).reshape(-1).tolist()]
    names = [name for pattern in patterns
             for name in glob.glob(pattern, include_hidden=True)]
    if not names:
        raise error('%s: no files match %s.' % (source, ', '.join(patterns)))
    return sorted(names)


def list_files(file_pattern, shuffle=None, seed=None, name=None):
    """A dataset of the paths matching `file_pattern` (a glob pattern or a list of them),
    as string scalars (`tf.data.Dataset.list_files`).

    # Arguments
        file_pattern: a glob pattern, a list of them, or a string tensor of them.
        shuffle: whether to shuffle the paths, anew for each iteration (default True;
            False: sorted).
        seed: the shuffle's seed.

    # Raises
        tf.errors.InvalidArgumentError: if no file matches.
    """
    paths = _glob(file_pattern, 'tf.data.Dataset.list_files', InvalidArgumentError)
    dataset = Dataset.from_tensor_slices(paths)
    if shuffle is False:
        return dataset
    return dataset.shuffle(len(paths), seed)


def _infer_dtype(values, na_value):
    """TF's inference: the first of int32, int64, float32, float64, string that every
    non-missing value of the column fits."""
    kinds = ['int32', 'int64', 'float32', 'float64', 'string']
    fits = {
        'int32': lambda v: _is_int(v, *_INT_RANGES['int32']),
        'int64': lambda v: _is_int(v, *_INT_RANGES['int64']),
        'float32': lambda v: _is_float(v, np.float32),
        'float64': lambda v: _is_float(v, np.float64),
        'string': lambda v: True,
    }
    present = [v for v in values if v not in ('', na_value)]
    if not present:
        return 'string'
    return next(kind for kind in kinds if all(fits[kind](v) for v in present))


def _is_int(value, low, high):
    try:
        return low <= int(value) <= high
    except ValueError:
        return False


def _is_float(value, kind):
    try:
        with np.errstate(over='ignore'):
            return bool(kind(value) < np.inf)
    except ValueError:
        return False


def _header_and_rows(path, compression_type, delimiter, use_quote_delim, count):
    with _opened(path, compression_type, 'tf.data.experimental.make_csv_dataset') as handle:
        if isinstance(handle, _Lines):
            raise ValueError('tf.data.experimental.make_csv_dataset: cannot read the columns '
                             'of a ZLIB file; give column_names and column_defaults.')
        text = io.TextIOWrapper(handle, encoding='utf-8', newline='')
        reader = csv.reader(text, delimiter=delimiter,
                            quoting=csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE)
        rows = []
        for row in reader:
            rows.append(row)
            if count is not None and len(rows) > count:
                break
        return rows


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=',',
                     use_quote_delim=True, na_value='', header=True, num_epochs=None,
                     shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                     num_rows_for_inference=100, compression_type=None, ignore_errors=False,
                     encoding='utf-8'):
    """Batches of CSV records as `(features, label)`: `features` a dict of column name to a
    1-D tensor (in column order), `label` the `label_name` column's
    (`tf.data.experimental.make_csv_dataset`).

    # Arguments
        file_pattern: a glob pattern or a list of them (the files read in sorted order,
            shuffled if `shuffle`).
        batch_size: the records per batch.
        column_names: the columns' names (default: the files' header).
        column_defaults: one per column read, as `CsvDataset`'s `record_defaults` (default:
            the dtype of the first `num_rows_for_inference` records' values, TF's inference,
            with 0 or '' for missing values).
        label_name: the column returned apart as the label (None: features only).
        select_columns: the columns to read, by name or index.
        num_epochs: how many times to read the files (None: forever, and every batch is
            full).
        shuffle, shuffle_buffer_size, shuffle_seed: shuffling of the records.
        field_delim, use_quote_delim, na_value, header, compression_type: as `CsvDataset`.
        num_parallel_reads: how many files are read at once (interleaved); default one.

    # Raises
        ValueError: for a pattern matching no file, unknown or duplicate columns, or a
            `label_name` that is no column.
    """
    if ignore_errors:
        raise ValueError('make_csv_dataset(ignore_errors=True) is not supported by torchk.')
    paths = _glob(file_pattern, 'tf.data.experimental.make_csv_dataset')
    kind = _compression(compression_type, 'tf.data.experimental.make_csv_dataset')
    if column_names is None or column_defaults is None:
        rows = _header_and_rows(paths[0], kind, field_delim, use_quote_delim,
                                num_rows_for_inference)
    if column_names is None:
        if not header:
            raise ValueError('make_csv_dataset: give column_names or header=True.')
        if not rows:
            raise ValueError('make_csv_dataset: %s has no header line.' % paths[0])
        column_names = rows[0]
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        raise ValueError('make_csv_dataset: duplicate column names in %s.' % column_names)
    selected = None
    if select_columns is not None:
        positions = {name: i for i, name in enumerate(column_names)}
        try:
            selected = sorted({c if isinstance(c, int) else positions[c]
                               for c in select_columns})
        except KeyError as error:
            raise ValueError('make_csv_dataset: select_columns names %s, which is not one of '
                             'the columns %s.' % (error, column_names)) from None
        if len(selected) != len(select_columns):
            raise ValueError('make_csv_dataset: select_columns has duplicates: %s.'
                             % (select_columns,))
    indices = selected if selected is not None else list(range(len(column_names)))
    if column_defaults is None:
        records = rows[1:] if header else rows
        if num_rows_for_inference is not None:
            records = records[:num_rows_for_inference]
        column_defaults = []
        for i in indices:
            inferred = _infer_dtype([r[i] for r in records if len(r) > i], na_value)
            column_defaults.append(b'' if inferred == 'string' else convert_to_tensor(
                np.array(0, dtype=inferred)))
    names = [column_names[i] for i in indices]
    if label_name is not None and label_name not in names:
        raise ValueError('make_csv_dataset: label_name %r is not one of the columns %s.'
                         % (label_name, names))
    files = Dataset.from_tensor_slices(paths)
    if shuffle:
        files = files.shuffle(len(paths), shuffle_seed)

    def read(path):
        return CsvDataset(path, column_defaults, compression_type=kind, header=header,
                          field_delim=field_delim, use_quote_delim=use_quote_delim,
                          na_value=na_value, select_cols=selected)
    records = files.interleave(read, cycle_length=num_parallel_reads or 1)
    if shuffle:
        records = records.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        records = records.repeat(num_epochs)

    def organize(*columns):
        features = dict(zip(names, columns))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label
    return records.batch(batch_size, drop_remainder=num_epochs is None).map(organize)
