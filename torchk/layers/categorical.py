"""tf.keras 2's categorical preprocessing layers: `CategoryEncoding`, `Hashing`,
`Discretization`, and what they share with the lookup layers of `text.py`.

These layers compute at once when called on values (numpy arrays, lists, text, tensors), as
tf.keras' do, and record one node of the model's graph when called on Keras symbols.
Numbers stay torch operations (`CategoryEncoding`, `Discretization`, `IntegerLookup`); a
layer that reads text runs on the host (`torchk/strings.py`), and its node returns tensors,
where the torch part of the model starts (docs/ARCHITECTURE.md, "Text").

`PreprocessingLayer` gives the adapted layers tf.keras' `adapt(data, batch_size, steps)`:
arrays are read in batches of `batch_size` (32), datasets and other iterables batch by
batch, each passed to `update_state`, then `finalize_state`.
"""
import numpy as np
import torch

from keras import backend as K
from keras.engine.base_layer import Layer

from .. import dtypes
from .. import graph
from .. import strings
from .. import tf_dtypes
from ..saving import vocabulary as vocabulary_files

__all__ = ['CategoryEncoding', 'Hashing', 'Discretization']

INT, ONE_HOT, MULTI_HOT, COUNT, TF_IDF = 'int', 'one_hot', 'multi_hot', 'count', 'tf_idf'
_ADAPT_BATCH_SIZE = 32


def check_choice(value, allowed, argument, layer):
    """Raises a ValueError naming `layer`'s `argument` unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ValueError('%s: %s=%r is not supported; expected one of %s.'
                         % (layer, argument, value, ', '.join(repr(a) for a in allowed)))


def output_dtype(kwargs, output_mode, layer, coerce=False):
    """`kwargs` with the `dtype` of a layer whose output is int64 indices in 'int' mode and
    floatx encodings otherwise, as tf.keras sets it. In 'int' mode a float dtype becomes
    int64 if `coerce` (tf.keras' `Hashing`, `Discretization`), else is an error.

    # Raises
        ValueError: naming `dtype` for a float dtype in 'int' mode, unless `coerce`.
    """
    dtype = kwargs.get('dtype')
    if dtype is None:
        kwargs['dtype'] = 'int64' if output_mode == INT else K.floatx()
    elif output_mode == INT and dtypes.to_torch(dtype).is_floating_point:
        if not coerce:
            raise ValueError("%s: with output_mode='int' the dtype must be an integer dtype; "
                             "got dtype=%r." % (layer, dtype))
        kwargs['dtype'] = 'int64'
    return kwargs


def encode_categorical(indices, output_mode, depth, dtype, count_weights=None,
                       idf_weights=None):
    """tf.keras' encoding of integer indices (a torch tensor) by `output_mode`.

    `'int'` casts; `'one_hot'` encodes each index (the last axis, if of size 1, or a new
    one); `'multi_hot'`, `'count'` and `'tf_idf'` encode each sample, the last axis, into
    one vector of `depth` (rank 2 at most after that, as tf.keras allows). Indices outside
    `[0, depth)` count for nothing (TensorFlow's `bincount` with `maxlength`).

    # Arguments
        indices: an integer tensor.
        output_mode: one of 'int', 'one_hot', 'multi_hot', 'count', 'tf_idf'.
        depth: the number of classes.
        dtype: the output dtype name.
        count_weights: optional tensor of `indices`' shape: the weight of each index
            ('count').
        idf_weights: a tensor of `depth` weights multiplying the counts ('tf_idf').
    """
    torch_dtype = dtypes.to_torch(dtype)
    if output_mode == INT:
        return indices.to(torch_dtype)
    x = indices.reshape(1) if indices.ndim == 0 else indices
    if output_mode == ONE_HOT and x.shape[-1] != 1:
        x = x.unsqueeze(-1)
    if x.ndim > 2:
        raise ValueError("When output_mode is not 'int', the output has rank 2 at most; "
                         "output_mode=%r on inputs of shape %s would give rank %d."
                         % (output_mode, tuple(indices.shape), x.ndim))
    rows = x if x.ndim == 2 else x.unsqueeze(0)
    valid = (rows >= 0) & (rows < depth)
    weights = valid.to(torch_dtype)
    if count_weights is not None:
        weights = weights * count_weights.reshape(rows.shape).to(torch_dtype)
    out = torch.zeros((rows.shape[0], depth), dtype=torch_dtype, device=rows.device)
    out.scatter_add_(1, rows.long().clamp(0, max(depth - 1, 0)), weights)
    if output_mode in (ONE_HOT, MULTI_HOT):
        out = (out > 0).to(torch_dtype)
    elif output_mode == TF_IDF:
        out = out * idf_weights.to(out.device, torch_dtype)
    return out if x.ndim == 2 else out[0]


def encoded_shape(input_shape, output_mode, depth):
    """The output shape of `encode_categorical` for inputs of `input_shape`."""
    shape = tuple(input_shape)
    if output_mode == INT:
        return shape
    if not shape:
        return (depth,)
    if output_mode == ONE_HOT and shape[-1] != 1:
        return shape + (depth,)
    return shape[:-1] + (depth,)


def as_tensor(value, dtype=None):
    """A value given to a layer (array, list, number, tensor) as a torch tensor on torchk's
    device."""
    if isinstance(value, torch.Tensor):
        tensor = value
    else:
        array = np.asarray(value)
        if array.dtype.kind in 'USO':
            raise TypeError('Expected numbers; got text (dtype %s).' % array.dtype)
        tensor = torch.as_tensor(array)
    device = graph.target_device()
    tensor = tensor.to(device) if tensor.device != device else tensor
    return tensor if dtype is None else tensor.to(dtypes.to_torch(dtype))


def run_or_record(function, *args, dynamic_axes=()):
    """`function(*args)` now, or recorded as one node of the graph if an argument is a Keras
    symbol (`dynamic_axes`: the output axes whose sizes depend on the values)."""
    if graph.contains_symbol(args):
        return graph.record(function, args, dynamic_axes=dynamic_axes)
    return function(*args)


class ValueLayer(Layer):
    """A Keras 2.3.1 layer that computes at once when called on values, as tf.keras layers
    are called on tensors: `layer(['some text'])` returns the result; called on Keras
    symbols it builds the graph as any layer does."""

    def __call__(self, inputs, *args, **kwargs):
        if graph.contains_symbol((inputs, args, kwargs)):
            return super(ValueLayer, self).__call__(inputs, *args, **kwargs)
        kwargs.pop('training', None)
        kwargs.pop('mask', None)
        result = self.call(inputs, *args, **kwargs)
        if isinstance(result, np.ndarray) and result.dtype == object:
            return strings.StringTensor(result)
        return result

    def compute_mask(self, inputs, mask=None):
        return None


def adapt_batches(data, batch_size=None, steps=None):
    """The batches `adapt` passes to `update_state`, as tf.keras' adapt reads them: an array
    (numpy, torch, text, list) in slices of `batch_size` (default 32) along its first axis,
    anything else (a `tf.data.Dataset`, a generator) element by element; at most `steps`
    batches; pandas' data as `fit` reads it."""
    data = tf_dtypes.pandas_as_array(data)
    if strings.is_text(data) and not isinstance(data, (list, tuple)):
        data = strings.as_bytes(data, 'data')
    elif isinstance(data, (list, tuple)):
        data = strings.as_bytes(data, 'data') if strings.is_text(data) else np.asarray(data)
    if isinstance(data, (np.ndarray, torch.Tensor)):
        if data.ndim == 0:
            yield data
            return
        size = int(batch_size or _ADAPT_BATCH_SIZE)
        for count, start in enumerate(range(0, len(data), size)):
            if steps is not None and count >= steps:
                return
            yield data[start:start + size]
        return
    if batch_size is not None:
        raise ValueError('adapt: batch_size applies to arrays; a dataset (%s) is read batch by '
                         'batch.' % type(data).__name__)
    for count, batch in enumerate(data):
        if steps is not None and count >= steps:
            return
        yield batch


class PreprocessingLayer(ValueLayer):
    """tf.keras' `PreprocessingLayer`: a layer with state computed from data by `adapt`."""

    def __init__(self, **kwargs):
        super(PreprocessingLayer, self).__init__(**kwargs)
        self._is_adapted = False

    @property
    def is_adapted(self):
        """Whether `adapt` has run since the state was last reset."""
        return self._is_adapted

    def adapt(self, data, batch_size=None, steps=None):
        """Computes the layer's state from `data`.

        # Arguments
            data: an array, a list, text, a tensor, or a `tf.data.Dataset` of batches.
            batch_size: the batch size for arrays (default 32).
            steps: the number of batches to read (default: all).
        """
        self.reset_state()
        for batch in adapt_batches(data, batch_size, steps):
            self.update_state(batch)
        self.finalize_state()
        self._is_adapted = True

    def update_state(self, data):
        raise NotImplementedError

    def finalize_state(self):
        pass

    def reset_state(self):
        self._is_adapted = False


class CategoryEncoding(ValueLayer):
    """Encodes integer categories: `one_hot`, `multi_hot` or `count` vectors of `num_tokens`.

    # Arguments
        num_tokens: the number of categories; inputs must lie in `[0, num_tokens)`.
        output_mode: 'multi_hot' (default), 'one_hot' or 'count' ('binary' is 'multi_hot').
        sparse: False (torchk returns dense tensors).
        **kwargs: the base layer's arguments.

    # Raises
        ValueError: for a missing or non-positive `num_tokens`, an unknown `output_mode`,
            `sparse=True`, or (when called) inputs outside `[0, num_tokens)`.
    """

    def __init__(self, num_tokens=None, output_mode=MULTI_HOT, sparse=False, **kwargs):
        if 'max_tokens' in kwargs:
            num_tokens = kwargs.pop('max_tokens')
        kwargs.setdefault('dtype', K.floatx())
        super(CategoryEncoding, self).__init__(**kwargs)
        output_mode = MULTI_HOT if output_mode == 'binary' else output_mode
        check_choice(output_mode, (COUNT, ONE_HOT, MULTI_HOT), 'output_mode', 'CategoryEncoding')
        if num_tokens is None:
            raise ValueError('CategoryEncoding: num_tokens must be set; if the number of '
                             'tokens is not known beforehand, use IntegerLookup.')
        if num_tokens < 1:
            raise ValueError('CategoryEncoding: num_tokens must be >= 1; got num_tokens=%r.'
                             % (num_tokens,))
        check_dense(sparse, 'CategoryEncoding')
        self.num_tokens = num_tokens
        self.output_mode = output_mode
        self.sparse = sparse

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != COUNT:
            raise ValueError("CategoryEncoding: count_weights is only used with "
                             "output_mode='count'; got output_mode=%r." % (self.output_mode,))
        if not graph.is_symbol(inputs):
            inputs = as_tensor(inputs)
        if count_weights is not None and not graph.is_symbol(count_weights):
            count_weights = as_tensor(count_weights, self.dtype)
        return run_or_record(self._encode, inputs, count_weights)

    def _encode(self, inputs, count_weights):
        if not graph.inferring() and inputs.numel() and (
                int(inputs.min()) < 0 or int(inputs.max()) >= self.num_tokens):
            raise ValueError('CategoryEncoding: input values must be in the range 0 <= values '
                             '< num_tokens with num_tokens=%d; got values from %d to %d.'
                             % (self.num_tokens, int(inputs.min()), int(inputs.max())))
        return encode_categorical(inputs, self.output_mode, self.num_tokens, self.dtype,
                                  count_weights=count_weights)

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape, self.output_mode, self.num_tokens)

    def get_config(self):
        config = {'num_tokens': self.num_tokens, 'output_mode': self.output_mode,
                  'sparse': self.sparse}
        return dict(super(CategoryEncoding, self).get_config(), **config)


def check_dense(sparse, layer):
    """Raises a ValueError naming `sparse`: torchk's layers return dense tensors."""
    if sparse:
        raise ValueError('%s: sparse=True is not supported; torchk returns dense tensors '
                         '(give sparse=False).' % layer)


class Hashing(ValueLayer):
    """Hashes strings (or integers, as their decimal text) into `num_bins` bins with
    TensorFlow's hashes: FarmHash `Fingerprint64` (`to_hash_bucket_fast`), or SipHash keyed
    by `salt` (`to_hash_bucket_strong`), so bins match a model hashed on TensorFlow.

    # Arguments
        num_bins: the number of bins (bin 0 is reserved for `mask_value` if it is set).
        mask_value: a value hashed to bin 0.
        salt: an int or a pair of ints: use the keyed hash.
        output_mode: 'int' (default), 'one_hot', 'multi_hot' or 'count'.
        sparse: False (torchk returns dense tensors).
        **kwargs: the base layer's arguments.
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode=INT, sparse=False,
                 **kwargs):
        if num_bins is None or num_bins <= 0:
            raise ValueError('Hashing: num_bins must be a positive integer; got num_bins=%r.'
                             % (num_bins,))
        super(Hashing, self).__init__(**output_dtype(kwargs, output_mode, 'Hashing',
                                                     coerce=True))
        check_choice(output_mode, (INT, ONE_HOT, MULTI_HOT, COUNT), 'output_mode', 'Hashing')
        check_dense(sparse, 'Hashing')
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2:
                salt = list(salt)
            elif isinstance(salt, int):
                salt = [salt, salt]
            else:
                raise ValueError('Hashing: salt must be an int or a pair of ints; got salt=%r.'
                                 % (salt,))
        self.num_bins = num_bins
        self.mask_value = mask_value
        self.salt = salt
        self.strong_hash = salt is not None
        self.output_mode = output_mode
        self.sparse = sparse

    def call(self, inputs):
        return run_or_record(self._hash, inputs)

    def _hash(self, inputs):
        if isinstance(inputs, torch.Tensor):
            if inputs.is_floating_point():
                raise TypeError('Hashing: inputs must be strings or integers; got dtype %s.'
                                % inputs.dtype)
            values = inputs.detach().cpu().numpy()
            text = strings.as_string(values)
        elif strings.is_text(inputs):
            values = text = strings.as_bytes(inputs, 'inputs')
        else:
            values = np.asarray(inputs)
            if values.dtype.kind not in 'iu':
                raise TypeError('Hashing: inputs must be strings or integers; got dtype %s.'
                                % values.dtype)
            text = strings.as_string(values)
        bins = self.num_bins
        mask = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask_value = (strings.as_bytes(self.mask_value).item() if text is values
                          else self.mask_value)
            mask = values == mask_value
        if self.strong_hash:
            hashed = strings.to_hash_bucket_strong(text, bins, self.salt)
        else:
            hashed = strings.to_hash_bucket_fast(text, bins)
        if mask is not None:
            hashed = np.where(mask, 0, hashed + 1)
        indices = torch.from_numpy(np.ascontiguousarray(hashed)).to(graph.target_device())
        return encode_categorical(indices, self.output_mode, self.num_bins, self.dtype)

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape, self.output_mode, self.num_bins)

    def get_config(self):
        config = {'num_bins': self.num_bins, 'salt': self.salt, 'mask_value': self.mask_value,
                  'output_mode': self.output_mode, 'sparse': self.sparse}
        return dict(super(Hashing, self).get_config(), **config)


def _summarize(values, epsilon):
    """tf.keras' quantile summary of a batch: every `n * epsilon`-th sorted value, each
    weighing that many values (float32 `(2, k)`)."""
    values = np.sort(values.reshape(-1).astype(np.float32))
    increment = int(np.float32(values.size) / np.float32(1.0 / epsilon))
    step = max(increment, 1)
    boundaries = values[increment::step]
    return np.stack([boundaries, np.full_like(boundaries, np.float32(step))])


def _compress(summary, epsilon):
    """Interpolates a summary down to `1 / epsilon` points of equal weight, as tf.keras."""
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = summary[1].cumsum()
    fractions = cumulative / cumulative[-1]
    bins = np.interp(percents, fractions, summary[0])
    cumulative = np.interp(percents, fractions, cumulative)
    weights = cumulative - np.concatenate((np.array([0]), cumulative[:-1]))
    return np.stack((bins, weights)).astype(np.float32)


def _merge(summary, other, epsilon):
    merged = np.concatenate((summary, other), axis=1)
    return _compress(merged[:, np.argsort(merged[0], kind='stable')], epsilon)


class Discretization(PreprocessingLayer):
    """Buckets numbers by boundaries: bucket `i` holds `boundaries[i-1] <= x <
    boundaries[i]`. The boundaries are given, or computed by `adapt` as `num_bins`
    quantiles with tf.keras' approximate summary (the same boundaries for the same batches).

    # Arguments
        bin_boundaries: a sorted list of boundaries, or None to `adapt`.
        num_bins: the number of bins `adapt` computes.
        epsilon: the error tolerance of the quantile summary.
        output_mode: 'int' (default), 'one_hot', 'multi_hot' or 'count'.
        sparse: False (torchk returns dense tensors).
        **kwargs: the base layer's arguments.
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode=INT,
                 sparse=False, **kwargs):
        if 'bins' in kwargs:
            bins = kwargs.pop('bins')
            if isinstance(bins, int) and num_bins is None:
                num_bins = bins
            elif bin_boundaries is None:
                bin_boundaries = bins
        super(Discretization, self).__init__(**output_dtype(kwargs, output_mode,
                                                            'Discretization', coerce=True))
        check_choice(output_mode, (INT, ONE_HOT, MULTI_HOT, COUNT), 'output_mode',
                     'Discretization')
        check_dense(sparse, 'Discretization')
        if num_bins is not None and num_bins < 0:
            raise ValueError('Discretization: num_bins must be >= 0; got num_bins=%r.'
                             % (num_bins,))
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError('Discretization: give num_bins or bin_boundaries, not both; got '
                             'num_bins=%r and bin_boundaries=%r.' % (num_bins, bin_boundaries))
        if bin_boundaries is not None:
            bin_boundaries = np.asarray(bin_boundaries).tolist()
        self.input_bin_boundaries = bin_boundaries
        self.bin_boundaries = bin_boundaries if bin_boundaries is not None else []
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = sparse
        self._summary = np.zeros((2, 0), dtype=np.float32)

    def update_state(self, data):
        if self.input_bin_boundaries is not None:
            raise ValueError('Discretization: cannot adapt a layer made with bin_boundaries '
                             '(%r); give num_bins instead.' % (self.input_bin_boundaries,))
        values = data.detach().cpu().numpy() if isinstance(data, torch.Tensor) else np.asarray(
            data)
        self._summary = _merge(_summarize(values, self.epsilon), self._summary, self.epsilon)

    def finalize_state(self):
        if self.input_bin_boundaries is not None:
            return
        self.bin_boundaries = _compress(self._summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def reset_state(self):
        super(Discretization, self).reset_state()
        if self.input_bin_boundaries is None:
            self._summary = np.zeros((2, 0), dtype=np.float32)

    # Saved state (`torchk.saving.weights_h5`): tf.keras saves the quantile summary as the
    # layer's variable; the boundaries are computed from it again when it is loaded.
    def save_own_variables(self):
        """`{'0': the summary}` for an adapted layer (tf.keras' variable), else `{}`."""
        return {'0': self._summary} if self.input_bin_boundaries is None else {}

    def load_own_variables(self, store):
        if self.input_bin_boundaries is None and '0' in store:
            summary = np.asarray(store['0'], dtype=np.float32)
            if summary.ndim != 2 or summary.shape[0] != 2:
                raise ValueError('Discretization %r: the saved summary has shape %s, not '
                                 '(2, n).' % (self.name, summary.shape))
            self._summary = summary
            if summary.size and self.num_bins:
                self.finalize_state()


    def call(self, inputs):
        if not graph.is_symbol(inputs):
            inputs = as_tensor(inputs)
        return run_or_record(self._bucketize, inputs)

    def _bucketize(self, inputs):
        boundaries = torch.tensor(self.bin_boundaries, dtype=torch.float64,
                                  device=inputs.device)
        indices = torch.bucketize(inputs.to(torch.float64), boundaries, right=True)
        return encode_categorical(indices, self.output_mode, len(self.bin_boundaries) + 1,
                                  self.dtype)

    def compute_output_shape(self, input_shape):
        return encoded_shape(input_shape, self.output_mode, len(self.bin_boundaries) + 1)

    def get_config(self):
        config = {'bin_boundaries': self.input_bin_boundaries, 'num_bins': self.num_bins,
                  'epsilon': self.epsilon, 'output_mode': self.output_mode,
                  'sparse': self.sparse}
        if vocabulary_files.inlining() and self.input_bin_boundaries is None and (
                self.bin_boundaries):
            # An HDF5 file keeps the adapted boundaries as given ones (saving/vocabulary.py).
            config.update(bin_boundaries=list(self.bin_boundaries), num_bins=None)
        return dict(super(Discretization, self).get_config(), **config)
