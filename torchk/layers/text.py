"""tf.keras 2's text layers: `TextVectorization`, `StringLookup`, `IntegerLookup`.

Text stays on the host (numpy arrays of `bytes`, `torchk/strings.py`): `TextVectorization`
and `StringLookup` turn it into indices (or multi-hot, count, TF-IDF vectors) in Python, in
one step per batch, and return torch tensors, where the torch program of a model starts
(docs/ARCHITECTURE.md, "Text"). `IntegerLookup` maps numbers with torch operations (a sorted
table and `searchsorted`), so it stays inside the torch program.

Their arguments, outputs, vocabularies (the order `adapt` gives, ties broken as TensorFlow
does), TF-IDF weights and `get_config` are tf.keras 2.15's. Not supported: `sparse=True`
and `ragged=True` (torch has no such tensors; a ValueError names the argument).
"""
import collections
import itertools
import string

import numpy as np
import torch

from keras import backend as K

from .. import graph
from .. import strings
from ..saving import vocabulary as vocabulary_files
from .categorical import (COUNT, INT, MULTI_HOT, ONE_HOT, TF_IDF, PreprocessingLayer,
                          as_tensor, check_choice, check_dense, encode_categorical,
                          encoded_shape, output_dtype, run_or_record)

__all__ = ['TextVectorization', 'StringLookup', 'IntegerLookup']

LOWER_AND_STRIP_PUNCTUATION = 'lower_and_strip_punctuation'
STRIP_PUNCTUATION = 'strip_punctuation'
LOWER = 'lower'
WHITESPACE = 'whitespace'
CHARACTER = 'character'
# TextVectorization's punctuation (tf.keras' DEFAULT_STRIP_REGEX is exactly this class).
_PUNCTUATION = string.punctuation.encode('ascii')
_OOV = -2  # a lookup's mark for tokens not in the vocabulary, before OOV buckets
_DROPPED = -1  # an index encodings ignore: the mask token outside 'int' mode
# Between the strings of a batch split at once (`TextVectorization._whitespace_indices`): a
# token no string holds (checked), looked up as `_SEPARATOR_INDEX`.
_SEPARATOR = b'\x00'
_SEPARATOR_INDEX = -3


def _output_modes(output_mode):
    return {'binary': MULTI_HOT, 'tf-idf': TF_IDF}.get(output_mode, output_mode)


class IndexLookup(PreprocessingLayer):
    """What `StringLookup` and `IntegerLookup` share: the vocabulary, `adapt`, the special
    tokens (mask, OOV buckets), `invert`, the encodings and the saved state.

    Tokens are keys: `bytes` for text, Python ints for integers (`_key`).
    """

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype,
                 vocabulary=None, idf_weights=None, invert=False, output_mode=INT,
                 sparse=False, pad_to_max_tokens=False, **kwargs):
        layer = type(self).__name__
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError('%s: max_tokens must be greater than 1 if set; got max_tokens=%r.'
                             % (layer, max_tokens))
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError('%s: pad_to_max_tokens=True needs max_tokens; got max_tokens=None.'
                             % layer)
        if num_oov_indices < 0:
            raise ValueError('%s: num_oov_indices must be >= 0; got num_oov_indices=%r.'
                             % (layer, num_oov_indices))
        output_mode = _output_modes(output_mode)
        check_choice(output_mode, (INT, ONE_HOT, MULTI_HOT, COUNT, TF_IDF), 'output_mode', layer)
        if invert and output_mode != INT:
            raise ValueError("%s: output_mode must be 'int' when invert=True; got "
                             "output_mode=%r." % (layer, output_mode))
        check_dense(sparse, layer)
        if idf_weights is not None and output_mode != TF_IDF:
            raise ValueError("%s: idf_weights is only used with output_mode='tf_idf'; got "
                             "output_mode=%r." % (layer, output_mode))
        self._frozen_vocab_size = kwargs.pop('vocabulary_size', None)
        self._has_input_vocabulary = kwargs.pop('has_input_vocabulary',
                                                vocabulary is not None)
        kwargs.pop('has_static_table', None)
        super(IndexLookup, self).__init__(**output_dtype(kwargs, output_mode, layer))
        self.invert = invert
        self.max_tokens = max_tokens
        self.num_oov_indices = num_oov_indices
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.output_mode = output_mode
        self.sparse = sparse
        self.pad_to_max_tokens = pad_to_max_tokens
        self.vocabulary_dtype = vocabulary_dtype
        self.input_vocabulary = _listed(vocabulary)
        self.input_idf_weights = _listed(idf_weights)
        self._tokens = []
        self._idf_variable = None
        self._tables = {}
        self.reset_state()
        self._index_tokens()
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # Keys.
    def _key(self, token):
        raise NotImplementedError

    def _keys(self, data, argument):
        """`data` (an update or a vocabulary, named `argument` in errors) as a numpy array
        of keys."""
        raise NotImplementedError

    def _token(self, key):
        """A key as `get_vocabulary` returns it."""
        return key

    # Indices.
    def _oov_start_index(self):
        return 1 if self.mask_token is not None and self.output_mode == INT else 0

    def _token_start_index(self):
        return self._oov_start_index() + self.num_oov_indices

    def _index_tokens(self):
        """Builds the token -> index table after the vocabulary changed."""
        start = self._token_start_index()
        self._index = {key: start + i for i, key in enumerate(self._tokens)}
        if self.mask_token is not None:
            self._index[self._key(self.mask_token)] = 0 if self.output_mode == INT else _DROPPED
        self._tables = {}

    def vocabulary_size(self):
        """The size of the vocabulary, mask and OOV indices included."""
        return len(self._tokens) + self._token_start_index()

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary: a token's position is its index (with `include_special_tokens`,
        the mask and OOV tokens first), else the learned or given tokens only."""
        tokens = [self._token(key) for key in self._tokens]
        if not include_special_tokens:
            return tokens
        special = [self.oov_token] * self._token_start_index()
        if self.mask_token is not None and self.output_mode == INT:
            special[0] = self.mask_token
        return special + tokens

    def _depth(self):
        return self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size

    def _ensure_known_vocab_size(self):
        if self.output_mode != INT and not self.pad_to_max_tokens and (
                self._frozen_vocab_size is None):
            raise RuntimeError('%s: with output_mode=%r and pad_to_max_tokens=False the '
                               'vocabulary must be set before the layer is called: give '
                               'vocabulary=, or adapt the layer first.'
                               % (type(self).__name__, self.output_mode))

    def _record_vocabulary_size(self):
        size = self.vocabulary_size()
        if (self.output_mode != INT and not self.pad_to_max_tokens
                and self._frozen_vocab_size is not None and size != self._frozen_vocab_size):
            raise RuntimeError('%s: with output_mode=%r and pad_to_max_tokens=False the '
                               'vocabulary size cannot change once set; it was %d, now %d.'
                               % (type(self).__name__, self.output_mode,
                                  self._frozen_vocab_size, size))
        self._frozen_vocab_size = size

    # The vocabulary.
    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (and, for 'tf_idf', the IDF weights), replacing any.

        # Arguments
            vocabulary: a list, tuple, array or tensor of tokens, or the path of a text file
                of one token per line. It may start with the special tokens (the mask
                token, then the OOV tokens, as `get_vocabulary` lists them).
            idf_weights: for 'tf_idf', one weight per token of `vocabulary`.

        # Raises
            ValueError: naming the argument: a vocabulary with repeated tokens, a special
                token elsewhere than at the start, more than `max_tokens`, an empty one, or
                idf_weights missing, extra or of another length.
        """
        layer = type(self).__name__
        if self.output_mode == TF_IDF and idf_weights is None:
            raise ValueError("%s: idf_weights must be given with output_mode='tf_idf'." % layer)
        if self.output_mode != TF_IDF and idf_weights is not None:
            raise ValueError("%s: idf_weights is only used with output_mode='tf_idf'; got "
                             "output_mode=%r." % (layer, self.output_mode))
        if isinstance(vocabulary, str):
            if self.output_mode == TF_IDF:
                raise ValueError("%s: output_mode='tf_idf' cannot read the vocabulary from a "
                                 "file." % layer)
            vocabulary = vocabulary_files.read_file(vocabulary)
        keys = self._keys(vocabulary, 'vocabulary')
        if keys.ndim != 1 or keys.size == 0:
            raise ValueError('%s: vocabulary must be a non-empty list of tokens; got %r.'
                             % (layer, vocabulary))
        start = self._token_start_index()
        special = [self._key(token) for token in self.get_vocabulary()[:start]]
        found_special = special and keys[:start].tolist() == special
        tokens = keys[start:].tolist() if found_special else keys.tolist()
        repeated = [t for t, n in collections.Counter(tokens).items() if n > 1]
        if repeated:
            raise ValueError('%s: vocabulary has repeated tokens %s; each token must appear '
                             'once.' % (layer, [self._token(t) for t in repeated[:10]]))
        if self.mask_token is not None and self._key(self.mask_token) in tokens:
            raise ValueError('%s: vocabulary holds the mask token %r at index %d; special '
                             'tokens may only start the vocabulary, in the order %r.'
                             % (layer, self.mask_token,
                                tokens.index(self._key(self.mask_token)), special))
        if self.invert and self.oov_token is not None and self._key(self.oov_token) in tokens:
            raise ValueError('%s: vocabulary holds the OOV token %r at index %d; special tokens '
                             'may only start the vocabulary, in the order %r.'
                             % (layer, self.oov_token,
                                tokens.index(self._key(self.oov_token)), special))
        if self.max_tokens is not None and start + len(tokens) > self.max_tokens:
            raise ValueError('%s: vocabulary has %d tokens with the special ones, more than '
                             'max_tokens=%d.' % (layer, start + len(tokens), self.max_tokens))
        self._tokens = tokens
        self._index_tokens()
        self._record_vocabulary_size()
        if self.output_mode == TF_IDF and idf_weights is not False:
            self._set_idf_weights(idf_weights, len(keys), found_special)

    @property
    def _idf_weights(self):
        """The IDF weights ('tf_idf'): a numpy float32 array, or None before they are set.
        They are the layer's non-trainable weight `idf_weights`, as in tf.keras (a Keras 2
        HDF5 file holds them as the layer's weight), remade when their size changes."""
        if self._idf_variable is None:
            return None
        return np.asarray(K.get_value(self._idf_variable), dtype=np.float32)

    @_idf_weights.setter
    def _idf_weights(self, weights):
        weights = np.asarray(weights, dtype=np.float32)
        variable = self._idf_variable
        if variable is None or tuple(variable.shape) != weights.shape:
            if variable is not None:
                self._non_trainable_weights = [w for w in self._non_trainable_weights
                                               if w is not variable]
            variable = self.add_weight(name='idf_weights', shape=weights.shape,
                                       initializer='zeros', trainable=False)
            self._idf_variable = variable
        K.set_value(variable, weights)

    def _set_idf_weights(self, idf_weights, count, found_special):
        weights = np.asarray(_listed(idf_weights), dtype=np.float64)
        if weights.ndim != 1 or len(weights) != count:
            raise ValueError('%s: idf_weights must hold one weight per vocabulary token (%d); '
                             'got shape %s.' % (type(self).__name__, count, weights.shape))
        front = 0 if found_special else self._token_start_index()
        back = (self.max_tokens - front - len(weights)
                if self.pad_to_max_tokens and self.max_tokens is not None else 0)
        self._idf_weights = np.pad(weights, (front, back), constant_values=(
            np.average(weights), 0)).astype(np.float32)

    def update_state(self, data):
        if self._has_input_vocabulary:
            raise ValueError('%s: cannot adapt a layer whose vocabulary was given (the '
                             'vocabulary argument or set_vocabulary).' % type(self).__name__)
        keys = self._keys(data, 'data')
        if keys.ndim < 2:
            keys = keys.reshape(1, -1)
        self.update_rows(keys.reshape(len(keys), -1).tolist())

    def update_rows(self, rows):
        """Counts the tokens of `rows` (lists of keys; each row a document for TF-IDF)."""
        self._counts.update(itertools.chain.from_iterable(rows))
        if self.output_mode == TF_IDF:
            self._document_counts.update(itertools.chain.from_iterable(map(set, rows)))
            self._documents += len(rows)

    def finalize_state(self):
        if self._has_input_vocabulary or not self._counts:
            self._record_vocabulary_size()
            return
        counts = self._counts
        for special in (self.mask_token, self.oov_token):
            if special is not None:
                counts.pop(self._key(special), None)
        ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
        if self.max_tokens:
            ranked = ranked[:self.max_tokens - self._token_start_index()]
        self._tokens = [key for key, _ in ranked]
        self._index_tokens()
        if self.output_mode == TF_IDF:
            frequency = np.array([self._document_counts[key] for key in self._tokens],
                                 dtype=np.float64)
            idf = np.log(1 + self._documents / (1 + frequency)).astype(np.float32)
            back = (self.max_tokens - self._token_start_index() - len(idf)
                    if self.pad_to_max_tokens and self.max_tokens is not None else 0)
            self._idf_weights = np.pad(idf, (self._token_start_index(), back),
                                       constant_values=(idf.mean(dtype=np.float32), 0))
        self.reset_state()
        self._record_vocabulary_size()

    def reset_state(self):
        super(IndexLookup, self).reset_state()
        if self._has_input_vocabulary:
            return
        self._counts = collections.Counter()
        self._document_counts = collections.Counter()
        self._documents = 0

    # Lookups.
    def host_indices(self, keys, count=None, separated=False):
        """The indices of keys (numpy int64): OOV keys in their bucket, the mask token at 0
        ('int') or -1 (dropped by the encodings).

        # Arguments
            keys: a list of keys, or an iterable of `count` keys.
            separated: whether `_SEPARATOR` keys separate strings (`_SEPARATOR_INDEX`); the
                caller has checked that no token is one.

        # Raises
            ValueError: for an OOV key when `num_oov_indices` is 0.
        """
        if self.num_oov_indices != 1:
            keys = list(keys)
        count = len(keys) if count is None else count
        oov = self._oov_start_index() if self.num_oov_indices == 1 else _OOV
        index = self._index
        if separated:
            if 'separated' not in self._tables:
                self._tables['separated'] = {**self._index, _SEPARATOR: _SEPARATOR_INDEX}
            index = self._tables['separated']
        indices = np.fromiter(map(index.get, keys, itertools.repeat(oov, count)),
                              dtype=np.int64, count=count)
        if self.num_oov_indices != 1:
            missing = np.flatnonzero(indices == _OOV)
            if missing.size:
                self._bucket_oov(indices, missing, [keys[i] for i in missing])
        return indices

    def _bucket_oov(self, indices, missing, keys):
        if self.num_oov_indices == 0:
            raise ValueError('%s: with num_oov_indices=0 every input must be in the '
                             'vocabulary; found OOV values %s (set num_oov_indices=1).'
                             % (type(self).__name__, [self._token(k) for k in keys[:10]]))
        indices[missing] = self._oov_buckets(keys) + self._oov_start_index()

    def _encode(self, indices):
        idf = None
        if self.output_mode == TF_IDF:
            if self._idf_variable is not None:
                idf = self._idf_variable.detach()
            elif graph.inferring():  # a model built before its saved state is loaded
                idf = torch.zeros(self._depth())
            else:
                raise RuntimeError("%s %r: output_mode='tf_idf' needs IDF weights: adapt the "
                                   "layer, or give idf_weights with the vocabulary."
                                   % (type(self).__name__, self.name))
        return encode_categorical(indices, self.output_mode, self._depth(), self.dtype,
                                  idf_weights=idf)

    def _inverted(self, indices):
        """The tokens at `indices` (numpy), the OOV token outside the vocabulary."""
        vocabulary = self.get_vocabulary()
        keys = [self._key(t) for t in vocabulary]
        fill = self._key(self.oov_token)
        return [keys[i] if 0 <= i < len(keys) else fill for i in indices.tolist()]

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape, self.output_mode, self._depth())

    # Saved state (`torchk.saving.weights_h5`, "saved state"): tf.keras keeps the vocabulary
    # as a file (`.keras`) or a table's constants (SavedModel), the IDF weights as variables.
    def save_own_variables(self):
        """The layer's variables in a `.keras` file: `{name: array}` (the IDF weights)."""
        if self.output_mode == TF_IDF and self._idf_weights is not None:
            return {'idf_weights': self._idf_weights}
        return {}

    def load_own_variables(self, store):
        """Sets the variables `save_own_variables` gives, from `{name: array}`."""
        if self.output_mode == TF_IDF and 'idf_weights' in store:
            self._idf_weights = np.asarray(store['idf_weights'], dtype=np.float32)

    def save_assets(self):
        """The layer's asset files in a `.keras` file: `{name: bytes}` (the vocabulary,
        unless it is in the configuration)."""
        if self.input_vocabulary:
            return {}
        return {vocabulary_files.ASSET_NAME: vocabulary_files.write(
            [str(token) for token in self.get_vocabulary()])}

    def load_assets(self, assets):
        """Sets the vocabulary from asset files read by `torchk.saving`: `{name: lines}`."""
        if self.input_vocabulary or vocabulary_files.ASSET_NAME not in assets:
            return
        lines = assets[vocabulary_files.ASSET_NAME]
        self._set_saved_vocabulary(lines if self.vocabulary_dtype == 'string'
                                   else [int(v) for v in lines])

    def load_table(self, keys, values):
        """Sets the vocabulary from a SavedModel's lookup table: its keys (tokens, or indices
        if `invert`) and values."""
        tokens, indices = (values, keys) if self.invert else (keys, values)
        order = np.argsort(np.asarray(indices), kind='stable')
        self._set_saved_vocabulary([_listed(tokens[i]) for i in order.tolist()])

    def _set_saved_vocabulary(self, tokens):
        if self.input_vocabulary:
            return
        self.set_vocabulary(tokens, idf_weights=False if self.output_mode == TF_IDF else None)

    def _inline_state(self, config):
        """Puts the adapted vocabulary (and IDF weights) into `config`, as if given to the
        constructor, while an HDF5 file is written (`vocabulary_files.inlining`)."""
        if vocabulary_files.inlining() and config['vocabulary'] is None and self._tokens:
            config['vocabulary'] = self.get_vocabulary()
            if self.output_mode == TF_IDF and self._idf_weights is not None:
                config['idf_weights'] = self._idf_weights[:self.vocabulary_size()].tolist()
        return config

    def get_config(self):
        config = {
            'invert': self.invert, 'max_tokens': self.max_tokens,
            'num_oov_indices': self.num_oov_indices, 'oov_token': self.oov_token,
            'mask_token': self.mask_token, 'output_mode': self.output_mode,
            'sparse': self.sparse, 'pad_to_max_tokens': self.pad_to_max_tokens,
            'vocabulary_dtype': self.vocabulary_dtype, 'idf_weights': self.input_idf_weights,
            'vocabulary': self.input_vocabulary, 'vocabulary_size': self._frozen_vocab_size}
        return self._inline_state(dict(super(IndexLookup, self).get_config(), **config))


def _listed(value):
    """Arrays, tensors and string tensors as lists (tf.keras' `listify_tensors`)."""
    if isinstance(value, strings.StringTensor):
        value = strings.to_text(value)
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [v.decode('utf-8') if isinstance(v, bytes) else v for v in value.tolist()]
        return value.tolist()
    return value


class StringLookup(IndexLookup):
    """Maps strings to indices of a vocabulary (given, or learned by `adapt` by frequency),
    or indices back to strings (`invert=True`), as tf.keras' `StringLookup`.

    # Arguments
        max_tokens: the largest vocabulary, special tokens included (None: no limit).
        num_oov_indices: OOV indices; several: OOV strings are hashed among them (FarmHash
            Fingerprint64, as TensorFlow); 0: an OOV string is an error.
        mask_token: a string mapped to 0 (and dropped by the other encodings), or None.
        oov_token: the string `invert=True` returns for an OOV index.
        vocabulary: a list or array of strings, or a file of one per line.
        idf_weights: the IDF weights ('tf_idf').
        encoding: the text encoding (UTF-8).
        invert: map indices to strings.
        output_mode: 'int', 'one_hot', 'multi_hot', 'count' or 'tf_idf'.
        sparse: False (torchk returns dense tensors).
        pad_to_max_tokens: encode to `max_tokens` whatever the vocabulary size.
        **kwargs: the base layer's arguments.
    """

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token='[UNK]',
                 vocabulary=None, idf_weights=None, encoding='utf-8', invert=False,
                 output_mode=INT, sparse=False, pad_to_max_tokens=False, **kwargs):
        if kwargs.get('dtype') == 'string':
            del kwargs['dtype']
        self.encoding = encoding
        super(StringLookup, self).__init__(
            max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
            oov_token=oov_token, vocabulary=vocabulary, vocabulary_dtype='string',
            idf_weights=idf_weights, invert=invert, output_mode=output_mode, sparse=sparse,
            pad_to_max_tokens=pad_to_max_tokens, **kwargs)

    def _key(self, token):
        return strings.as_bytes(token, 'token').item()

    def _keys(self, data, argument):
        return strings.as_bytes(data, 'StringLookup: ' + argument)

    def _token(self, key):
        return key.decode(self.encoding)

    def _oov_buckets(self, keys):
        return strings.to_hash_bucket_fast(strings.as_bytes(keys), self.num_oov_indices)

    def call(self, inputs):
        self._ensure_known_vocab_size()
        if self.invert:
            if not graph.is_symbol(inputs):
                inputs = as_tensor(inputs)
            return run_or_record(self._tokens_of, inputs)
        return run_or_record(self._lookup, inputs)

    def _lookup(self, inputs):
        text = strings.as_bytes(inputs, 'inputs')
        indices = self.host_indices(text.ravel().tolist()).reshape(text.shape)
        return self._encode(torch.from_numpy(indices).to(graph.target_device()))

    def _tokens_of(self, indices):
        values = indices.detach().cpu().numpy()
        return strings.as_bytes(self._inverted(values.ravel())).reshape(values.shape)

    def get_config(self):
        config = dict(super(StringLookup, self).get_config(), encoding=self.encoding)
        del config['vocabulary_dtype']
        return config


class IntegerLookup(IndexLookup):
    """Maps integers to indices of a vocabulary (given, or learned by `adapt`), or indices
    back to integers (`invert=True`), as tf.keras' `IntegerLookup`; a torch operation.

    # Arguments
        max_tokens, num_oov_indices, vocabulary, idf_weights, invert, output_mode, sparse,
        pad_to_max_tokens: as `StringLookup`'s (several OOV indices: an OOV value `x` goes to
            bucket `x mod num_oov_indices`).
        mask_token: an integer mapped to 0, or None.
        oov_token: the integer `invert=True` returns for an OOV index (-1).
        vocabulary_dtype: 'int64' or 'int32'.
        **kwargs: the base layer's arguments.
    """

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype='int64', idf_weights=None, invert=False,
                 output_mode=INT, sparse=False, pad_to_max_tokens=False, **kwargs):
        if str(vocabulary_dtype) not in ('int64', 'int32'):
            raise ValueError("IntegerLookup: vocabulary_dtype must be an integer dtype "
                             "('int64' or 'int32'); got vocabulary_dtype=%r."
                             % (vocabulary_dtype,))
        if output_mode != INT and kwargs.get('dtype') == 'int64':
            del kwargs['dtype']
        for old, new in (('max_values', 'max_tokens'), ('mask_value', 'mask_token'),
                         ('oov_value', 'oov_token')):
            if old in kwargs:
                value = kwargs.pop(old)
                max_tokens, mask_token, oov_token = (
                    value if new == 'max_tokens' else max_tokens,
                    value if new == 'mask_token' else mask_token,
                    value if new == 'oov_token' else oov_token)
        super(IntegerLookup, self).__init__(
            max_tokens=max_tokens, num_oov_indices=num_oov_indices,
            mask_token=None if mask_token is None else int(mask_token),
            oov_token=None if oov_token is None else int(oov_token),
            vocabulary=vocabulary, vocabulary_dtype=str(vocabulary_dtype),
            idf_weights=idf_weights, invert=invert, output_mode=output_mode, sparse=sparse,
            pad_to_max_tokens=pad_to_max_tokens, **kwargs)

    def _key(self, token):
        return int(token)

    def _keys(self, data, argument):
        array = np.asarray(_listed(data))
        if array.dtype.kind not in 'iu':
            raise TypeError('IntegerLookup: %s must be integers; got %r (dtype %s).'
                            % (argument, data, array.dtype))
        return array.astype(np.int64)

    def _oov_buckets(self, keys):
        return np.mod(np.asarray(keys, dtype=np.int64), self.num_oov_indices)

    def _table(self, device):
        """The vocabulary as sorted keys and their indices, tensors on `device`."""
        if device not in self._tables:
            items = sorted((key, index) for key, index in self._index.items())
            keys = torch.tensor([k for k, _ in items], dtype=torch.int64, device=device)
            values = torch.tensor([v for _, v in items], dtype=torch.int64, device=device)
            inverse = torch.tensor([self._key(t) for t in self.get_vocabulary()],
                                   dtype=torch.int64, device=device)
            self._tables[device] = (keys, values, inverse)
        return self._tables[device]

    def call(self, inputs):
        self._ensure_known_vocab_size()
        if not graph.is_symbol(inputs):
            inputs = as_tensor(inputs)
        return run_or_record(self._invert if self.invert else self._lookup, inputs)

    def _lookup(self, inputs):
        keys, values, _ = self._table(inputs.device)
        x = inputs.long()
        if keys.numel():
            position = torch.searchsorted(keys, x).clamp(max=keys.numel() - 1)
            found = keys[position] == x
            indices = torch.where(found, values[position], torch.full_like(x, _OOV))
        else:
            found = torch.zeros_like(x, dtype=torch.bool)
            indices = torch.full_like(x, _OOV)
        missing = ~found
        if self.num_oov_indices == 1:
            indices = torch.where(missing, torch.full_like(x, self._oov_start_index()),
                                  indices)
        elif self.num_oov_indices == 0:
            if not graph.inferring() and bool(missing.any()):
                self._bucket_oov(None, None, x[missing].tolist())
        else:
            buckets = torch.remainder(x, self.num_oov_indices) + self._oov_start_index()
            indices = torch.where(missing, buckets, indices)
        return self._encode(indices)

    def _invert(self, inputs):
        _, _, inverse = self._table(inputs.device)
        x = inputs.long()
        inside = (x >= 0) & (x < inverse.numel())
        picked = inverse[x.clamp(0, max(inverse.numel() - 1, 0))]
        return torch.where(inside, picked, torch.full_like(x, self.oov_token)).to(
            getattr(torch, self.vocabulary_dtype))


def _deserialized_function(value, argument):
    """A `standardize`/`split` function of a configuration: a callable, or the name of a
    registered custom object (tf.keras saves functions by name)."""
    if value is None or callable(value) or value in (
            LOWER_AND_STRIP_PUNCTUATION, LOWER, STRIP_PUNCTUATION, WHITESPACE, CHARACTER):
        return value
    from keras.utils.generic_utils import get_custom_objects
    name = value
    if isinstance(value, dict):
        name = value.get('registered_name') or value.get('config')
    objects = get_custom_objects()
    for candidate in (name, str(name).split('>')[-1]):
        if candidate in objects:
            return objects[candidate]
    raise ValueError('TextVectorization: %s=%r names no function; pass it in '
                     'custom_objects (or register it) when loading.' % (argument, value))


class TextVectorization(PreprocessingLayer):
    """Turns text into token indices or vectors, as tf.keras' `TextVectorization`: each
    string is standardized, split into tokens, optionally made n-grams, and looked up in a
    vocabulary (given, or learned by `adapt`, most frequent first).

    # Arguments
        max_tokens: the largest vocabulary, the mask token '' and '[UNK]' included.
        standardize: 'lower_and_strip_punctuation' (default), 'lower', 'strip_punctuation',
            None, or a function of a string tensor (using `tf.strings`). Lowercasing changes
            ASCII letters only, and the punctuation is ASCII's, as in TensorFlow.
        split: 'whitespace' (default), 'character', None, or a function of a string tensor
            returning its tokens (`tf.strings.split`).
        ngrams: None, an int n (1- to n-grams) or a tuple of n-gram widths.
        output_mode: 'int' (default; indices padded with 0), 'multi_hot', 'count',
            'tf_idf', or None (the tokens).
        output_sequence_length: with 'int', pad or truncate to this length.
        pad_to_max_tokens: encode to `max_tokens` whatever the vocabulary size.
        vocabulary, idf_weights: as `StringLookup`'s.
        sparse, ragged: False (torch has no sparse or ragged outputs here).
        encoding: the text encoding (UTF-8).
        **kwargs: the base layer's arguments (`dtype` must be 'string').

    # Raises
        ValueError: naming the argument, for an unknown mode or an inconsistent setting.
    """

    def __init__(self, max_tokens=None, standardize=LOWER_AND_STRIP_PUNCTUATION,
                 split=WHITESPACE, ngrams=None, output_mode=INT, output_sequence_length=None,
                 pad_to_max_tokens=False, vocabulary=None, idf_weights=None, sparse=False,
                 ragged=False, encoding='utf-8', **kwargs):
        if kwargs.setdefault('dtype', 'string') != 'string':
            raise ValueError("TextVectorization: dtype must be 'string'; got dtype=%r."
                             % (kwargs['dtype'],))
        if not callable(standardize):
            check_choice(standardize, (LOWER_AND_STRIP_PUNCTUATION, LOWER, STRIP_PUNCTUATION,
                                       None), 'standardize', 'TextVectorization')
        if not callable(split):
            check_choice(split, (WHITESPACE, CHARACTER, None), 'split', 'TextVectorization')
        output_mode = _output_modes(output_mode)
        check_choice(output_mode, (INT, COUNT, MULTI_HOT, TF_IDF, None), 'output_mode',
                     'TextVectorization')
        if not (ngrams is None or isinstance(ngrams, int) or (
                isinstance(ngrams, tuple) and all(isinstance(n, int) for n in ngrams))):
            raise ValueError('TextVectorization: ngrams must be None, an int or a tuple of '
                             'ints; got ngrams=%r.' % (ngrams,))
        if output_mode == INT and not (output_sequence_length is None
                                       or isinstance(output_sequence_length, int)):
            raise ValueError("TextVectorization: output_sequence_length must be None or an int "
                             "with output_mode='int'; got output_sequence_length=%r."
                             % (output_sequence_length,))
        if output_mode != INT and output_sequence_length is not None:
            raise ValueError("TextVectorization: output_sequence_length is only used with "
                             "output_mode='int'; got output_mode=%r." % (output_mode,))
        if ragged:
            raise ValueError('TextVectorization: ragged=True is not supported; torchk returns '
                             'dense tensors (rows padded with 0, or output_sequence_length).')
        self._has_input_vocabulary = kwargs.pop('has_input_vocabulary', vocabulary is not None)
        vocabulary_size = kwargs.pop('vocabulary_size', None)
        super(TextVectorization, self).__init__(**kwargs)
        self._max_tokens = max_tokens
        self._standardize = standardize
        self._split = split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self._ragged = ragged
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._encoding = encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token='',
            output_mode=output_mode if output_mode is not None else INT, sparse=sparse,
            has_input_vocabulary=self._has_input_vocabulary, encoding=encoding,
            vocabulary_size=vocabulary_size)

    # The text steps.
    def _standardized(self, text):
        mode = self._standardize
        if mode == LOWER_AND_STRIP_PUNCTUATION:
            return [s.lower().translate(None, _PUNCTUATION) for s in text]
        if mode == LOWER:
            return [s.lower() for s in text]
        if mode == STRIP_PUNCTUATION:
            return [s.translate(None, _PUNCTUATION) for s in text]
        if callable(mode):
            shape = (len(text),)
            result = mode(strings.StringTensor(strings.as_bytes(text).reshape(shape)))
            return strings.as_bytes(result, 'the result of standardize').ravel().tolist()
        return text

    def _standardized_batch(self, inputs):
        """`(the standardized strings, a list of bytes; the batch shape)` of text."""
        array = strings.as_bytes(inputs, 'inputs')
        shape = array.shape
        if self._split is not None and array.ndim > 1:
            if array.shape[-1] != 1:
                raise ValueError('TextVectorization: to split text the input must have rank 1 '
                                 'or a last dimension of 1; got shape %s.' % (array.shape,))
            shape = array.shape[:-1]
        return self._standardized(array.ravel().tolist()), shape

    def _token_rows(self, text):
        """The tokens (n-grams) of each standardized string."""
        if self._split == WHITESPACE:
            rows = [s.split() for s in text]
        elif self._split == CHARACTER:
            rows = [strings.unicode_split(s).tolist() for s in text]
        else:
            result = self._split(strings.StringTensor(strings.as_bytes(text).reshape(
                (len(text),))))
            rows = strings.token_rows(result, 'the result of split')
        if self._ngrams is not None:
            rows = strings.ngram_rows(rows, self._ngrams)
        return rows

    def call(self, inputs):
        self._lookup_layer._ensure_known_vocab_size()
        ragged = (self._output_mode in (INT, None) and self._output_sequence_length is None
                  and self._split is not None)
        return run_or_record(self._vectorize, inputs,
                             dynamic_axes=(-1,) if ragged else ())

    def _vectorize(self, inputs):
        text, shape = self._standardized_batch(inputs)
        if self._split is None:
            if self._output_mode is None:
                return strings.as_bytes(text).reshape(shape)
            return self._lookup_layer._lookup(strings.as_bytes(text).reshape(shape))
        if self._output_mode is None:
            rows = self._token_rows(text)
            width = max(map(len, rows), default=0)
            padded = [row + [b''] * (width - len(row)) for row in rows]
            return strings.as_bytes(padded if rows else np.empty((0, 0), object)).reshape(
                shape + (width,))
        if (self._split == WHITESPACE and self._ngrams is None
                and not any(_SEPARATOR in s for s in text)):
            indices, lengths = self._whitespace_indices(text)
        else:
            rows = self._token_rows(text)
            lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
            indices = self._lookup_layer.host_indices(itertools.chain.from_iterable(rows),
                                                      int(lengths.sum()))
        if self._output_mode == INT:
            width = (self._output_sequence_length if self._output_sequence_length is not None
                     else int(lengths.max(initial=0)))
            matrix = _padded(indices, lengths, width, 0)
            return torch.from_numpy(matrix.reshape(shape + (width,))).to(
                graph.target_device())
        width = int(lengths.max(initial=0))
        matrix = _padded(indices, lengths, width, _DROPPED).reshape(shape + (width,))
        return self._lookup_layer._encode(torch.from_numpy(matrix).to(graph.target_device()))

    def _whitespace_indices(self, text):
        """`(indices, tokens per string)` of whitespace-split strings, split and looked up
        as one batch: the strings joined with `_SEPARATOR` tokens between them. The same
        indices as a split per string, without a list per string (whose garbage collection
        cost more than the split)."""
        tokens = (b' ' + _SEPARATOR + b' ').join(text).split()
        indices = self._lookup_layer.host_indices(tokens, separated=True)
        separators = np.flatnonzero(indices == _SEPARATOR_INDEX)
        bounds = np.concatenate(([-1], separators, [len(indices)]))
        return np.delete(indices, separators), np.diff(bounds) - 1

    def compute_output_shape(self, input_shape):
        if self._output_mode == INT:
            return (input_shape[0], self._output_sequence_length)
        if self._output_mode is None:
            return (input_shape[0], None)
        return (input_shape[0], self._lookup_layer._depth())

    # Adapting and the vocabulary.
    def update_state(self, data):
        text, shape = self._standardized_batch(data)
        lookup = self._lookup_layer
        if self._split is None:
            lookup.update_state(strings.as_bytes(text).reshape(shape))
        elif (self._split == WHITESPACE and self._ngrams is None
              and lookup.output_mode != TF_IDF):
            # Only counts matter, not documents: one split of the whole batch is faster.
            lookup.update_rows([b' '.join(text).split()])
        else:
            lookup.update_rows(self._token_rows(text))

    def finalize_state(self):
        self._lookup_layer.finalize_state()

    def reset_state(self):
        super(TextVectorization, self).reset_state()
        if '_lookup_layer' in self.__dict__:
            self._lookup_layer.reset_state()

    def get_vocabulary(self, include_special_tokens=True):
        """The vocabulary ('' and '[UNK]' first with `include_special_tokens`)."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary and IDF weights (see `StringLookup.set_vocabulary`)."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights=idf_weights)

    # Saved state: the lookup layer's, which tf.keras also writes under `_lookup_layer`.
    saved_sublayers = ('_lookup_layer',)

    def save_own_variables(self):
        return self._lookup_layer.save_own_variables()

    def load_own_variables(self, store):
        self._lookup_layer.load_own_variables(store)

    def save_assets(self):
        return self._lookup_layer.save_assets()

    def load_assets(self, assets):
        self._lookup_layer.load_assets(assets)

    def load_table(self, keys, values):
        self._lookup_layer.load_table(keys, values)


    def get_config(self):
        lookup = self._lookup_layer
        config = {
            'max_tokens': lookup.max_tokens, 'standardize': self._standardize,
            'split': self._split, 'ngrams': self._ngrams_arg,
            'output_mode': self._output_mode,
            'output_sequence_length': self._output_sequence_length,
            'pad_to_max_tokens': lookup.pad_to_max_tokens, 'sparse': lookup.sparse,
            'ragged': self._ragged, 'vocabulary': lookup.input_vocabulary,
            'idf_weights': lookup.input_idf_weights, 'encoding': self._encoding,
            'vocabulary_size': self.vocabulary_size()}
        return lookup._inline_state(dict(super(TextVectorization, self).get_config(), **config))

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config['standardize'] = _deserialized_function(config.get('standardize'),
                                                       'standardize')
        config['split'] = _deserialized_function(config.get('split'), 'split')
        if isinstance(config.get('ngrams'), list):
            config['ngrams'] = tuple(config['ngrams'])
        return cls(**config)


def _padded(indices, lengths, width, fill):
    """Rows of `indices` (flat, with `lengths`) in a `(rows, width)` int64 matrix, cut or
    filled with `fill`."""
    matrix = np.full((len(lengths), width), fill, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    # Each index's place in the flat matrix: its position in the row plus the row's offset.
    places = np.arange(len(indices)) + np.repeat(np.arange(len(lengths)) * width - starts,
                                                 lengths)
    if lengths.max(initial=0) > width:
        kept = (places - np.repeat(np.arange(len(lengths)) * width, lengths)) < width
        places, indices = places[kept], indices[kept]
    matrix.reshape(-1)[places] = indices
    return matrix
