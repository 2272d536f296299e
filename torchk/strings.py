"""Text on the host: numpy arrays of `bytes`, and the string operations text models use.

torch has no string tensors, so torchk keeps text where TensorFlow keeps its `tf.string`
tensors' bytes: numpy object arrays whose elements are `bytes` (Python `str` is encoded as
UTF-8 on the way in, as TensorFlow does). `as_bytes` makes one from anything a user passes
as text; `StringTensor` wraps one with a tensor's face (`numpy()`, `shape`, `dtype`) for the
tf facade and for layers that return text; `RaggedStrings` holds rows of tokens of
different lengths (what `tf.strings.split` gives as a `RaggedTensor`).

The operations follow TensorFlow's kernels: `lower` and `upper` change ASCII letters only
unless an encoding is given, whitespace is ASCII whitespace, regular expressions are RE2's
common syntax run by Python's `re` on the decoded text with ASCII classes (`\\w`, `\\d`,
`\\s` as RE2 reads them); a literal pattern, or a class of ASCII characters replaced by
nothing or by one character (TextVectorization's punctuation), is applied to the bytes
directly, much faster and with the same result. Each operation works element-wise on whole
arrays and returns numpy arrays (numbers as numpy arrays too: callers make tensors).
"""
import re

import numpy as np

from . import dtypes
from .fingerprint import fingerprint64, siphash

_ASCII_WHITESPACE = b' \t\n\v\f\r'
_REGEX_SPECIAL = set('.^$*+?{}[]|()\\')


def _object_array(items, shape):
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array.reshape(shape)


def _as_text_item(item, argument):
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode('utf-8')
    if isinstance(item, np.bytes_):
        return bytes(item)
    raise TypeError('%s must be strings (str or bytes); got an element %r of type %s.'
                    % (argument, item, type(item).__name__))


def as_bytes(value, argument='value'):
    """`value` as host text: a numpy object array of `bytes` (`str` encoded as UTF-8).

    # Arguments
        value: a `str` or `bytes`, a (nested) list or tuple of them, a numpy array of
            strings (unicode, bytes or object dtype), or a `StringTensor`.
        argument: the name the error messages give `value`.

    # Returns
        A numpy array of dtype object holding `bytes`, of `value`'s shape.

    # Raises
        TypeError: naming `argument` if `value` holds anything but strings.
    """
    if isinstance(value, StringTensor):
        return value.__array__()
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return _object_array([_as_text_item(value, argument)], ())
    if isinstance(value, (list, tuple)):
        value = np.array(value, dtype=object) if value else np.empty((0,), dtype=object)
    elif not isinstance(value, np.ndarray):
        raise TypeError('%s must be strings (str or bytes); got %s%s.' % (
            argument, type(value).__name__,
            ' of dtype %s' % value.dtype if hasattr(value, 'dtype') else ''))
    if value.dtype.kind not in 'USO':
        raise TypeError('%s must be strings (str or bytes); got an array of dtype %s.'
                        % (argument, value.dtype))
    flat = value.ravel().tolist()
    if value.dtype.kind == 'U':
        items = [item.encode('utf-8') for item in flat]
    elif value.dtype.kind == 'O' and all(type(item) is bytes for item in flat):
        if value.flags.c_contiguous or value.ndim < 2:
            return value
        items = flat
    else:
        items = [_as_text_item(item, argument) for item in flat]
    return _object_array(items, value.shape)


def is_text(value):
    """True if `value` is text by its type (a `str`/`bytes`, a `StringTensor`, a numpy array
    of strings, a non-empty list or tuple whose first leaf is a string)."""
    if isinstance(value, (str, bytes, np.str_, np.bytes_, StringTensor, RaggedStrings)):
        return True
    if isinstance(value, np.ndarray):
        if value.dtype.kind in 'US':
            return True
        return value.dtype.kind == 'O' and value.size > 0 and isinstance(
            value.flat[0], (str, bytes))
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
        if isinstance(value, (str, bytes)):
            return True
    return False


def to_text(array):
    """Host text (bytes) as `str`, decoded from UTF-8, in a numpy array of `array`'s shape
    (a `str` for a 0-d array)."""
    array = as_bytes(array)
    if array.ndim == 0:
        return array.item().decode('utf-8', 'replace')
    return _object_array([item.decode('utf-8', 'replace') for item in array.ravel().tolist()],
                         array.shape)


class StringTensor:
    """A tensor of strings on the host (TensorFlow's `tf.string` tensors): numpy `bytes`
    with a tensor's `numpy()`, `shape`, `dtype` (`'string'`), indexing and iteration.

    # Arguments
        value: anything `as_bytes` takes.
    """
    __array_priority__ = 1000

    def __init__(self, value):
        self._values = as_bytes(value)

    def numpy(self):
        """The values: a numpy object array of `bytes` (a `bytes` for a scalar)."""
        return self._values.item() if self._values.ndim == 0 else self._values

    @property
    def shape(self):
        return self._values.shape

    @property
    def ndim(self):
        return self._values.ndim

    @property
    def dtype(self):
        return dtypes.STRING

    def __array__(self, dtype=None, copy=None):
        return self._values if dtype is None else self._values.astype(dtype)

    def __len__(self):
        if self._values.ndim == 0:
            raise TypeError('len() of a scalar string tensor.')
        return len(self._values)

    def __getitem__(self, key):
        return StringTensor(self._values[key])

    def __iter__(self):
        if self._values.ndim == 0:
            raise TypeError('Cannot iterate over a scalar string tensor.')
        return (StringTensor(self._values[i]) for i in range(len(self._values)))

    def __eq__(self, other):
        if isinstance(other, (StringTensor, str, bytes, list, np.ndarray)):
            return self._values == as_bytes(other)
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else ~equal

    __hash__ = object.__hash__

    def __add__(self, other):
        """Element-wise concatenation with another string tensor or text (broadcast), as
        TF's `+` on strings."""
        if not isinstance(other, (StringTensor, str, bytes, list, np.ndarray)):
            return NotImplemented
        return StringTensor(_CONCATENATE(self._values, as_bytes(other)))

    def __radd__(self, other):
        if not isinstance(other, (str, bytes, list, np.ndarray)):
            return NotImplemented
        return StringTensor(_CONCATENATE(as_bytes(other), self._values))

    def __repr__(self):
        return '<tf.Tensor: shape=%s, dtype=string, numpy=%r>' % (self.shape, self.numpy())


_CONCATENATE = np.frompyfunc(lambda a, b: a + b, 2, 1)


class RaggedStrings:
    """Rows of strings of different lengths (a ragged string tensor of rank 2), as
    `tf.strings.split` of a batch gives: `rows` is a list of lists of `bytes`.

    # Arguments
        rows: an iterable of iterables of strings.
    """

    def __init__(self, rows):
        self.rows = [list(row) for row in rows]

    @property
    def shape(self):
        return (len(self.rows), None)

    @property
    def dtype(self):
        return dtypes.STRING

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return StringTensor(_object_array(self.rows[index], (len(self.rows[index]),)))

    def __iter__(self):
        return (self[i] for i in range(len(self.rows)))

    def nrows(self):
        return len(self.rows)

    def row_lengths(self):
        """The length of each row (int64 numpy array)."""
        return np.fromiter(map(len, self.rows), dtype=np.int64, count=len(self.rows))

    @property
    def flat_values(self):
        """Every string, row after row, as a 1-D `StringTensor`."""
        flat = [item for row in self.rows for item in row]
        return StringTensor(_object_array(flat, (len(flat),)))

    def to_list(self):
        return [list(row) for row in self.rows]

    def to_tensor(self, default_value=b'', shape=None):
        """The rows padded with `default_value` to the longest (or to `shape`'s width), as a
        `StringTensor` of shape `(rows, width)`."""
        width = max(map(len, self.rows), default=0)
        if shape is not None and shape[-1] is not None:
            width = int(shape[-1])
        fill = _as_text_item(default_value, 'default_value')
        padded = [row[:width] + [fill] * (width - len(row[:width])) for row in self.rows]
        return StringTensor(_object_array([i for row in padded for i in row],
                                          (len(self.rows), width)))

    def __repr__(self):
        return '<tf.RaggedTensor %r>' % (self.rows,)


def _map(function, strings):
    flat = strings.ravel().tolist()
    return _object_array([function(item) for item in flat], strings.shape)


def lower(strings, encoding=''):
    """Lowercases ASCII letters (all letters if `encoding` is given, e.g. `'utf-8'`)."""
    strings = as_bytes(strings, 'input')
    if encoding:
        return _map(lambda s: s.decode(encoding).lower().encode(encoding), strings)
    return _map(bytes.lower, strings)


def upper(strings, encoding=''):
    """Uppercases ASCII letters (all letters if `encoding` is given)."""
    strings = as_bytes(strings, 'input')
    if encoding:
        return _map(lambda s: s.decode(encoding).upper().encode(encoding), strings)
    return _map(bytes.upper, strings)


def strip(strings):
    """Removes leading and trailing ASCII whitespace."""
    return _map(bytes.strip, as_bytes(strings, 'input'))


def _unescaped(pattern, start):
    """(character, next index) of the possibly escaped character at `start`, or None for
    an escape that is a class (`\\d`, `\\w`, ...)."""
    if pattern[start] != '\\':
        return pattern[start], start + 1
    if start + 1 < len(pattern) and not pattern[start + 1].isalnum():
        return pattern[start + 1], start + 2
    return None


def _literal(pattern):
    """The text a pattern without special characters matches, else None."""
    characters, index = [], 0
    while index < len(pattern):
        if pattern[index] in _REGEX_SPECIAL - {'\\'}:
            return None
        found = _unescaped(pattern, index)
        if found is None:
            return None
        characters.append(found[0])
        index = found[1]
    return ''.join(characters)


def _ascii_class(pattern):
    """The set of characters of a pattern that is one class of ASCII characters
    (`[!"#$%&()*+,-./]`), else None."""
    if len(pattern) < 3 or pattern[0] != '[' or pattern[-1] != ']' or pattern[1] == '^':
        return None
    body, index, members = pattern[1:-1], 0, set()
    while index < len(body):
        found = _unescaped(body, index)
        if found is None or (found[0] in '[]' and body[index] != '\\'):
            return None
        first, index = found
        if index + 1 < len(body) and body[index] == '-':
            found = _unescaped(body, index + 1)
            if found is None:
                return None
            last, index = found
            members.update(chr(c) for c in range(ord(first), ord(last) + 1))
        else:
            members.add(first)
    return members if all(ord(c) < 128 for c in members) else None


def _python_template(rewrite):
    """RE2's rewrite string (`\\1` a group, `\\\\` a backslash) as a Python template."""
    parts, index = [], 0
    while index < len(rewrite):
        character = rewrite[index]
        if character == '\\' and index + 1 < len(rewrite):
            following = rewrite[index + 1]
            parts.append('\\g<%s>' % following if following.isdigit() else '\\\\')
            index += 2
            continue
        parts.append('\\\\' if character == '\\' else character)
        index += 1
    return ''.join(parts)


def regex_replace(strings, pattern, rewrite, replace_global=True):
    """Replaces the matches of the regular expression `pattern` by `rewrite` (`\\1` names a
    group), every match or the first (`replace_global=False`), as `tf.strings.regex_replace`.

    # Raises
        ValueError: if `pattern` is not a valid regular expression.
    """
    strings = as_bytes(strings, 'input')
    pattern = pattern.decode('utf-8') if isinstance(pattern, bytes) else str(pattern)
    rewrite = rewrite.decode('utf-8') if isinstance(rewrite, bytes) else str(rewrite)
    count = 0 if replace_global else 1
    literal, members = _literal(pattern), _ascii_class(pattern)
    if literal and '\\' not in rewrite:
        old, new = literal.encode('utf-8'), rewrite.encode('utf-8')
        return _map(lambda s: s.replace(old, new, count or -1), strings)
    if members is not None and replace_global and '\\' not in rewrite and len(
            rewrite.encode('utf-8')) <= 1:
        deleted = ''.join(sorted(members)).encode('ascii')
        if not rewrite:
            return _map(lambda s: s.translate(None, deleted), strings)
        table = bytes.maketrans(deleted, rewrite.encode('ascii') * len(deleted))
        return _map(lambda s: s.translate(table), strings)
    try:
        compiled = re.compile(pattern, re.ASCII)
    except re.error as error:
        raise ValueError('regex_replace: pattern %r is not a valid regular expression (%s).'
                         % (pattern, error)) from error
    template = _python_template(rewrite)
    return _map(lambda s: compiled.sub(template, s.decode('utf-8', 'surrogateescape'),
                                       count).encode('utf-8', 'surrogateescape'), strings)


def regex_full_match(strings, pattern):
    """True where the whole string matches `pattern` (a bool numpy array)."""
    compiled = re.compile(pattern.decode('utf-8') if isinstance(pattern, bytes) else pattern,
                          re.ASCII)
    strings = as_bytes(strings, 'input')
    flat = [compiled.fullmatch(s.decode('utf-8', 'surrogateescape')) is not None
            for s in strings.ravel().tolist()]
    return np.array(flat, dtype=bool).reshape(strings.shape)


def _rows(strings, function, name):
    strings = as_bytes(strings, 'input')
    if strings.ndim == 0:
        tokens = function(strings.item())
        return _object_array(tokens, (len(tokens),))
    if strings.ndim != 1:
        raise ValueError('%s: torchk splits a scalar or a vector of strings (rank 0 or 1); '
                         'got shape %s. Reshape it to a vector first.' % (name, strings.shape))
    return RaggedStrings(map(function, strings.tolist()))


def split(strings, sep=None, maxsplit=-1):
    """Splits each string on `sep` (on runs of ASCII whitespace if None, dropping empty
    pieces), as `tf.strings.split`.

    # Returns
        For a scalar, a 1-D array of pieces; for a vector, `RaggedStrings`.
    """
    if sep is not None:
        sep = sep.encode('utf-8') if isinstance(sep, str) else bytes(sep)
        if not sep:
            raise ValueError('split: sep must not be empty; use None to split on whitespace.')
    return _rows(strings, lambda s: s.split(sep, maxsplit), 'split')


def _characters(text, errors='replace'):
    return [c.encode('utf-8') for c in text.decode('utf-8', errors)]


def unicode_split(strings, input_encoding='UTF-8', errors='replace'):
    """Splits each string into its UTF-8 characters (invalid bytes become U+FFFD, as
    TensorFlow's default `errors='replace'`)."""
    if input_encoding.upper().replace('-', '') != 'UTF8':
        raise ValueError("unicode_split: torchk reads input_encoding='UTF-8' only; got %r."
                         % (input_encoding,))
    handling = {'replace': 'replace', 'ignore': 'ignore', 'strict': 'strict'}.get(errors)
    if handling is None:
        raise ValueError("unicode_split: errors must be 'replace', 'ignore' or 'strict'; "
                         "got %r." % (errors,))
    return _rows(strings, lambda s: _characters(s, handling), 'unicode_split')


def token_rows(value, argument='input'):
    """Rows of tokens (a list of lists of bytes) from `RaggedStrings`, a 2-D string array
    (empty strings are padding, as TextVectorization reads a dense split), or a list of
    lists."""
    if isinstance(value, RaggedStrings):
        return value.rows
    if isinstance(value, (list, tuple)) and all(isinstance(row, (list, tuple))
                                                for row in value):
        return [[_as_text_item(item, argument) for item in row] for row in value]
    array = as_bytes(value, argument)
    if array.ndim != 2:
        raise ValueError('%s: expected rows of tokens (ragged or of rank 2); got shape %s.'
                         % (argument, array.shape))
    return [[item for item in row if item] for row in array.tolist()]


def ngram_rows(rows, widths, separator=b' ', preserve_short_sequences=False):
    """The n-grams of each row of tokens: for each width in `widths` in turn, every run of
    that many consecutive tokens joined by `separator` (`tf.strings.ngrams`)."""
    separator = separator.encode('utf-8') if isinstance(separator, str) else separator
    widths = (widths,) if isinstance(widths, int) else tuple(widths)
    result = []
    for row in rows:
        grams = []
        for width in widths:
            if width == 1:
                grams.extend(row)
            elif len(row) >= width:
                grams.extend(separator.join(row[i:i + width])
                             for i in range(len(row) - width + 1))
        if not grams and preserve_short_sequences and row:
            grams.append(separator.join(row))
        result.append(grams)
    return result


def ngrams(data, ngram_width, separator=' ', pad_values=None, padding_width=None,
           preserve_short_sequences=False):
    """`tf.strings.ngrams` of rows of tokens (`RaggedStrings`, a 2-D array) or of one
    vector of tokens, without padding.

    # Raises
        ValueError: if `pad_values` is given (torchk does not pad n-grams).
    """
    if pad_values is not None:
        raise ValueError('ngrams: pad_values is not supported by torchk; pad the tokens '
                         'before.')
    if not isinstance(data, RaggedStrings) and np.ndim(as_bytes(data, 'data')) == 1:
        row = ngram_rows([as_bytes(data, 'data').tolist()], ngram_width, separator,
                         preserve_short_sequences)[0]
        return _object_array(row, (len(row),))
    return RaggedStrings(ngram_rows(token_rows(data, 'data'), ngram_width, separator,
                                    preserve_short_sequences))


def length(strings, unit='BYTE'):
    """The length of each string in bytes, or in characters (`unit='UTF8_CHAR'`): int32."""
    strings = as_bytes(strings, 'input')
    if unit == 'BYTE':
        measure = len
    elif unit == 'UTF8_CHAR':
        def measure(s):
            return len(s.decode('utf-8', 'replace'))
    else:
        raise ValueError("length: unit must be 'BYTE' or 'UTF8_CHAR'; got %r." % (unit,))
    return np.array([measure(s) for s in strings.ravel().tolist()],
                    dtype=np.int32).reshape(strings.shape)


def substr(strings, pos, len, unit='BYTE'):  # noqa: A002  (TF's argument name)
    """The substring of `len` units from position `pos` (negative: from the end) of each
    string; `pos` and `len` are numbers or arrays broadcast with `strings`.

    # Raises
        ValueError: if a position is out of its string.
    """
    if unit not in ('BYTE', 'UTF8_CHAR'):
        raise ValueError("substr: unit must be 'BYTE' or 'UTF8_CHAR'; got %r." % (unit,))
    strings = as_bytes(strings, 'input')
    strings, positions, lengths = np.broadcast_arrays(strings, np.asarray(pos),
                                                      np.asarray(len))
    out = []
    for text, start, size in zip(strings.ravel().tolist(), positions.ravel().tolist(),
                                 lengths.ravel().tolist()):
        units = text.decode('utf-8', 'replace') if unit == 'UTF8_CHAR' else text
        total = units.__len__()
        if not -total <= start <= total:
            raise ValueError('substr: position %d is out of a string of length %d.'
                             % (start, total))
        start = start + total if start < 0 else start
        piece = units[start:start + max(size, 0)]
        out.append(piece.encode('utf-8') if unit == 'UTF8_CHAR' else piece)
    return _object_array(out, strings.shape)


def join(inputs, separator=''):
    """Joins the strings of a list of arrays (broadcast together) element-wise."""
    separator = separator.encode('utf-8') if isinstance(separator, str) else separator
    arrays = np.broadcast_arrays(*[as_bytes(item, 'inputs') for item in inputs])
    flat = [a.ravel().tolist() for a in arrays]
    return _object_array([separator.join(parts) for parts in zip(*flat)], arrays[0].shape)


def reduce_join(inputs, axis=None, keepdims=False, separator=''):
    """Joins the strings along `axis` (all of them if None)."""
    separator = separator.encode('utf-8') if isinstance(separator, str) else separator
    array = as_bytes(inputs, 'inputs')
    if axis is None:
        joined = separator.join(array.ravel().tolist())
        return _object_array([joined], (1,) * array.ndim if keepdims else ())
    moved = np.moveaxis(array, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1]).tolist()
    result = _object_array([separator.join(row) for row in rows], moved.shape[:-1])
    return np.expand_dims(result, axis) if keepdims else result


def to_number(strings, out_type='float32'):
    """Parses each string as a number of `out_type` (a numpy array).

    # Raises
        ValueError: naming the string that is not a number.
    """
    strings = as_bytes(strings, 'string_tensor')
    target = np.dtype(str(out_type))
    parse = float if target.kind == 'f' else int
    values = []
    for text in strings.ravel().tolist():
        try:
            values.append(parse(text))
        except ValueError as error:
            raise ValueError('to_number: %r is not a number of type %s.'
                             % (text, target.name)) from error
    return np.array(values, dtype=target).reshape(strings.shape)


def as_string(values, precision=-1, scientific=False, shortest=False, width=-1, fill=''):
    """Formats numbers as strings, as `tf.strings.as_string`: integers in decimal, floats
    with `%f` (six decimals unless `precision`), `%e` if `scientific`, `%g` if `shortest`,
    booleans as `true`/`false`; `width` pads on the left with `fill` (`''`: spaces).

    # Raises
        ValueError: for incompatible options or a `fill` longer than one character.
        TypeError: for values that are not numbers.
    """
    array = np.asarray(values)
    if len(fill) > 1:
        raise ValueError('as_string: fill must be at most one character; got %r.' % (fill,))
    if scientific and shortest:
        raise ValueError('as_string: scientific and shortest cannot both be set.')
    pad = '%' + fill + (str(width) if width > -1 else '')
    if array.dtype.kind == 'b':
        items = [b'true' if v else b'false' for v in array.ravel().tolist()]
        return _object_array(items, array.shape)
    if array.dtype.kind in 'iu':
        if precision > -1 or scientific or shortest:
            raise ValueError('as_string: precision, scientific and shortest apply to floats '
                             'only.')
        template = (pad + 'd').encode()
    elif array.dtype.kind == 'f':
        kind = 'g' if shortest else 'e' if scientific else 'f'
        template = (pad + ('.%d' % precision if precision > -1 else '') + kind).encode()
    else:
        raise TypeError('as_string: expected numbers or booleans; got dtype %s.'
                        % array.dtype)
    return _object_array([template % v for v in array.ravel().tolist()], array.shape)


def to_hash_bucket_fast(strings, num_buckets):
    """Each string's bucket in `[0, num_buckets)` by FarmHash `Fingerprint64`, as
    TensorFlow's `to_hash_bucket_fast` (int64)."""
    strings = as_bytes(strings, 'input')
    if int(num_buckets) < 1:
        raise ValueError('to_hash_bucket_fast: num_buckets must be at least 1; got %r.'
                         % (num_buckets,))
    hashes = fingerprint64(strings.ravel().tolist()) % np.uint64(num_buckets)
    return hashes.astype(np.int64).reshape(strings.shape)


def to_hash_bucket_strong(strings, num_buckets, key):
    """Each string's bucket in `[0, num_buckets)` by SipHash-2-4 keyed with `key` (two
    integers), as TensorFlow's `to_hash_bucket_strong` (int64)."""
    strings = as_bytes(strings, 'input')
    if int(num_buckets) < 1:
        raise ValueError('to_hash_bucket_strong: num_buckets must be at least 1; got %r.'
                         % (num_buckets,))
    if len(key) != 2:
        raise ValueError('to_hash_bucket_strong: key must be two integers; got %r.' % (key,))
    buckets = [siphash(s, key) % int(num_buckets) for s in strings.ravel().tolist()]
    return np.array(buckets, dtype=np.int64).reshape(strings.shape)
