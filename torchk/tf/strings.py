"""`tf.strings`: the string functions text pipelines use, on host text.

Text is a `StringTensor` (numpy `bytes`, `torchk/strings.py`): these functions take string
tensors, numpy arrays of strings, lists or Python strings, and return string tensors (text),
`RaggedStrings` (`split`, `unicode_split`, `ngrams` of a batch, TF's `RaggedTensor`s) or
torch tensors (numbers: `length`, `to_number`, the hash buckets), as TensorFlow does.
"""
from .. import strings
from .namespaces import module_getattr
from .tensors import convert_to_tensor
from .text_ops import as_text as _text, numpy_numbers as _numpy_numbers

__all__ = ['as_string', 'join', 'length', 'lower', 'ngrams', 'reduce_join', 'regex_full_match',
           'regex_replace', 'split', 'strip', 'substr', 'to_hash_bucket_fast',
           'to_hash_bucket_strong', 'to_number', 'unicode_split', 'upper']


def _numbers(result, dtype=None):
    return convert_to_tensor(result, dtype=dtype)


def lower(input, encoding='', name=None):  # noqa: A002  (TF's argument names)
    """Lowercases ASCII letters (every letter with `encoding='utf-8'`)."""
    return _text(strings.lower(input, encoding))


def upper(input, encoding='', name=None):  # noqa: A002
    """Uppercases ASCII letters (every letter with `encoding='utf-8'`)."""
    return _text(strings.upper(input, encoding))


def strip(input, name=None):  # noqa: A002
    """Removes leading and trailing whitespace."""
    return _text(strings.strip(input))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces the matches of `pattern` with `rewrite` (`\\1`: a group)."""
    return _text(strings.regex_replace(input, pattern, rewrite, replace_global))


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each string matches `pattern` whole (a bool tensor)."""
    return _numbers(strings.regex_full_match(input, pattern))


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits strings on `sep` (whitespace if None): a vector of pieces for a scalar,
    `RaggedStrings` for a vector."""
    return _text(strings.split(input, sep, maxsplit))


def unicode_split(input, input_encoding, errors='replace', replacement_char=65533,  # noqa: A002
                  name=None):
    """Splits strings into their characters (UTF-8)."""
    return _text(strings.unicode_split(input, input_encoding, errors))


def ngrams(data, ngram_width, separator=' ', pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The n-grams of tokens (a vector, or `RaggedStrings` rows)."""
    return _text(strings.ngrams(data, ngram_width, separator, pad_values, padding_width,
                                preserve_short_sequences))


def length(input, unit='BYTE', name=None):  # noqa: A002
    """The length of each string in bytes or in characters (`unit='UTF8_CHAR'`): int32."""
    return _numbers(strings.length(input, unit))


def substr(input, pos, len, unit='BYTE', name=None):  # noqa: A002
    """The substring of `len` units from `pos` (numbers or tensors) of each string."""
    return _text(strings.substr(input, _numpy_numbers(pos), _numpy_numbers(len), unit))


def join(inputs, separator='', name=None):
    """Joins a list of string tensors element-wise with `separator`."""
    return _text(strings.join(inputs, separator))


def reduce_join(inputs, axis=None, keepdims=False, separator='', name=None):
    """Joins the strings along `axis` (all if None)."""
    return _text(strings.reduce_join(inputs, axis, keepdims, separator))


def to_number(string_tensor, out_type='float32', name=None):
    """Parses each string as a number of `out_type`: a tensor."""
    return _numbers(strings.to_number(string_tensor, str(out_type)), dtype=str(out_type))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1,  # noqa: A002
              fill='', name=None):
    """Formats numbers (a tensor, array or list) as strings."""
    return _text(strings.as_string(_numpy_numbers(input), precision, scientific, shortest,
                                   width, fill))


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string's bucket by FarmHash Fingerprint64 (int64), as TensorFlow's."""
    return _numbers(strings.to_hash_bucket_fast(input, num_buckets), dtype='int64')


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Each string's bucket by SipHash-2-4 keyed by `key` (int64), as TensorFlow's."""
    return _numbers(strings.to_hash_bucket_strong(input, num_buckets, key), dtype='int64')


__getattr__ = module_getattr('tf.strings')
