"""Attention layers of tf.keras 2: `Attention` (dot-product, Luong), `AdditiveAttention`
(Bahdanau) and `MultiHeadAttention`, with tf.keras' configuration keys, weights and numbers.

Keras 2 layers take several tensors as one list: `Attention()([query, value])` or
`[query, value, key]`, and `MultiHeadAttention(...)([query, value])` or
`[query, value, key]`, or `[query, value, key, attention_mask]` (tf.keras calls it as
`mha(query, value, key, attention_mask=...)`; a tensor must be an input to be saved with a Keras
2 model); masks of the inputs
(`Embedding(mask_zero=True)`, `Masking`) are applied as tf.keras applies them.
"""
import math

from keras import backend as K
from keras import constraints
from keras import initializers
from keras import regularizers
from keras.engine.base_layer import Layer

__all__ = ['Attention', 'AdditiveAttention', 'MultiHeadAttention']

_MASKED_SCORE = 1e9
"""What tf.keras subtracts from the score of a masked position before the softmax."""


def _dims(x):
    """The dimensions of `x`: static ints where known, else scalar tensors of `K.shape`."""
    shape = K.shape(x)
    return [d if d is not None else shape[i] for i, d in enumerate(K.int_shape(x))]


def _product(dims):
    total = 1
    for d in dims:
        total = total * d
    return total


def _causal_mask(scores):
    """1 where the query position is at or after the key position (last two axes)."""
    ones = K.ones_like(scores)
    return K.cast(K.cumsum(ones, axis=-2) >= K.cumsum(ones, axis=-1), K.floatx())


def _mask_scores(scores, keep):
    """Scores minus 1e9 where `keep` (broadcastable, 1 keeps, 0 masks) is 0."""
    return scores - _MASKED_SCORE * (1. - keep)


def _split_inputs(layer, inputs, most=3):
    if not isinstance(inputs, list) or not 2 <= len(inputs) <= most:
        raise ValueError('%s (%s) must be called on a list [query, value], '
                         '[query, value, key]%s; got %r.'
                         % (type(layer).__name__, layer.name,
                            ' or [query, value, key, attention_mask]' if most == 4 else '',
                            inputs))
    query, value = inputs[0], inputs[1]
    key = inputs[2] if len(inputs) == 3 else value
    return query, value, key


def _split_masks(mask):
    masks = list(mask) if isinstance(mask, (list, tuple)) else [mask]
    return masks[:3] + [None] * (3 - len(masks[:3]))


def _float_mask(mask):
    return None if mask is None else K.cast(mask, K.floatx())


class _DenseAttention(Layer):
    """Base of `Attention` and `AdditiveAttention`: masks, causal mask, softmax, dropout.

    # Arguments
        dropout: fraction of the attention weights dropped in training.
        causal: tf.keras 2.4-2.9's key for `use_causal_mask` in every call.
    """

    def __init__(self, dropout=0., causal=False, **kwargs):
        super(_DenseAttention, self).__init__(**kwargs)
        self.supports_masking = True
        self.dropout = dropout
        self.causal = causal

    def _scores(self, query, key):
        raise NotImplementedError

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        if return_attention_scores:
            raise ValueError('%s (%s): return_attention_scores=True is not supported; build '
                             'the scores with backend ops instead.'
                             % (type(self).__name__, self.name))
        query, value, key = _split_inputs(self, inputs)
        query_mask, value_mask, _ = _split_masks(mask)
        scores = self._scores(query, key)
        if value_mask is not None:
            scores = _mask_scores(scores, K.expand_dims(_float_mask(value_mask), axis=1))
        if self.causal or use_causal_mask:
            scores = _mask_scores(scores, _causal_mask(scores))
        weights = K.softmax(scores, axis=-1)
        if 0. < self.dropout < 1.:
            dropped = K.dropout(weights, self.dropout)
            weights = K.in_train_phase(dropped, weights, training=training)
        result = K.batch_dot(weights, value, axes=(2, 1))
        if query_mask is not None:
            result = result * K.expand_dims(_float_mask(query_mask), axis=-1)
        return result

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def compute_mask(self, inputs, mask=None):
        return _split_masks(mask)[0]

    def get_config(self):
        config = {'dropout': self.dropout}
        if self.causal:
            config['causal'] = True
        base_config = super(_DenseAttention, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class Attention(_DenseAttention):
    """Dot-product attention (Luong): `softmax(scale * query . key) . value`.

    # Arguments
        use_scale: whether the scores are multiplied by a learned scalar `scale`.
        score_mode: `'dot'` (query . key) or `'concat'` (a learned scalar times the sum of
            `tanh(scale * (query + key))` over features).
        dropout: fraction of the attention weights dropped in training.

    # Call arguments
        inputs: `[query (batch, Tq, dim), value (batch, Tv, dim)]`, optionally `key` third.
        use_causal_mask: mask the positions after each query position.

    # Raises
        ValueError: for another `score_mode`.
    """

    def __init__(self, use_scale=False, score_mode='dot', **kwargs):
        if score_mode not in ('dot', 'concat'):
            raise ValueError("Attention: score_mode must be 'dot' or 'concat'; got %r."
                             % (score_mode,))
        super(Attention, self).__init__(**kwargs)
        self.use_scale = use_scale
        self.score_mode = score_mode

    def build(self, input_shape):
        self.scale = self.concat_score_weight = None
        if self.use_scale:
            self.scale = self.add_weight(name='scale', shape=(), initializer='ones')
        if self.score_mode == 'concat':
            self.concat_score_weight = self.add_weight(name='concat_score_weight', shape=(),
                                                       initializer='ones')
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == 'dot':
            scores = K.batch_dot(query, key, axes=(2, 2))
            return scores if self.scale is None else scores * self.scale
        pairs = K.expand_dims(query, axis=2) + K.expand_dims(key, axis=1)
        if self.scale is not None:
            pairs = self.scale * pairs
        return self.concat_score_weight * K.sum(K.tanh(pairs), axis=-1)

    def get_config(self):
        config = super(Attention, self).get_config()
        config.update(use_scale=self.use_scale, score_mode=self.score_mode)
        return config


class AdditiveAttention(_DenseAttention):
    """Additive attention (Bahdanau): scores `sum(scale * tanh(query + key))` over features.

    # Arguments
        use_scale: whether `tanh` is multiplied by a learned vector `scale` (one value per
            feature) before the sum.
        dropout: fraction of the attention weights dropped in training.

    # Call arguments
        As `Attention`.
    """

    def __init__(self, use_scale=True, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.use_scale = use_scale

    def build(self, input_shape):
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight(name='scale', shape=(input_shape[1][-1],),
                                         initializer='glorot_uniform')
        self.built = True

    def _scores(self, query, key):
        pairs = K.tanh(K.expand_dims(query, axis=2) + K.expand_dims(key, axis=1))
        if self.scale is not None:
            pairs = self.scale * pairs
        return K.sum(pairs, axis=-1)

    def get_config(self):
        config = super(AdditiveAttention, self).get_config()
        config['use_scale'] = self.use_scale
        return config


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al., 2017), as tf.keras' `MultiHeadAttention`.

    Query, key and value are projected to `num_heads` heads, each head attends over
    `attention_axes` with scores `query . key / sqrt(key_dim)`, and the heads are projected
    back to `output_shape`. Weights, in tf.keras' order and shapes: `query/kernel`
    `(query_dim, num_heads, key_dim)`, `query/bias` `(num_heads, key_dim)`, then `key/...`,
    `value/...` (`value_dim`), and `attention_output/kernel`
    `(num_heads, value_dim, *output_shape)`, `attention_output/bias` `output_shape`.

    # Arguments
        num_heads: number of heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default `key_dim`).
        dropout: fraction of the attention weights dropped in training.
        use_bias: whether the projections have biases.
        output_shape: int or tuple, the output's feature shape (default: the query's last
            dimension).
        attention_axes: the axes attention runs over (default: all but batch and features).
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        activity_regularizer, kernel_constraint, bias_constraint: for the projections.
        query_shape, key_shape, value_shape, softmax_robust_masking: tf.keras' keys; the
            shapes are recorded when the layer is built.

    # Call arguments
        inputs: `[query, value]`, `[query, value, key]` or
            `[query, value, key, attention_mask]`; `attention_mask` is a
            `(batch, Tq..., Tv...)` tensor, 1 where a query position may attend to a key
            position (when the attention axes cover all non-batch axes).
        use_causal_mask: mask the positions after each query position.
        training: whether dropout applies.

    # Raises
        ValueError: for inputs other than a list of 2 to 4 tensors, or a mask with
            attention axes that leave batch-like axes.
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0., use_bias=True,
                 output_shape=None, attention_axes=None,
                 kernel_initializer='glorot_uniform', bias_initializer='zeros',
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, query_shape=None,
                 key_shape=None, value_shape=None, softmax_robust_masking=False, **kwargs):
        super(MultiHeadAttention, self).__init__(**kwargs)
        self.supports_masking = True
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim if value_dim else key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_shape_ = output_shape
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        self.attention_axes = None if attention_axes is None else tuple(attention_axes)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.query_shape = query_shape
        self.key_shape = key_shape
        self.value_shape = value_shape
        self.softmax_robust_masking = softmax_robust_masking

    def _output_features(self, query_shape):
        if self.output_shape_ is None:
            return (query_shape[-1],)
        if isinstance(self.output_shape_, int):
            return (self.output_shape_,)
        return tuple(self.output_shape_)

    def _projection(self, name, kernel_shape, bias_shape):
        kernel = self.add_weight(name=name + '/kernel', shape=kernel_shape,
                                 initializer=self.kernel_initializer,
                                 regularizer=self.kernel_regularizer,
                                 constraint=self.kernel_constraint)
        bias = None
        if self.use_bias:
            bias = self.add_weight(name=name + '/bias', shape=bias_shape,
                                   initializer=self.bias_initializer,
                                   regularizer=self.bias_regularizer,
                                   constraint=self.bias_constraint)
        return kernel, bias

    def build(self, input_shape):
        if not isinstance(input_shape, list) or not 2 <= len(input_shape) <= 4:
            raise ValueError('MultiHeadAttention (%s) must be called on a list [query, value], '
                             '[query, value, key] or [query, value, key, attention_mask]; got '
                             'inputs of shape %s.' % (self.name, input_shape))
        query_shape, value_shape = input_shape[0], input_shape[1]
        key_shape = input_shape[2] if len(input_shape) > 2 else value_shape
        self.query_shape, self.value_shape, self.key_shape = (
            list(query_shape), list(value_shape), list(key_shape))
        heads = self.num_heads
        self.query_kernel, self.query_bias = self._projection(
            'query', (query_shape[-1], heads, self.key_dim), (heads, self.key_dim))
        self.key_kernel, self.key_bias = self._projection(
            'key', (key_shape[-1], heads, self.key_dim), (heads, self.key_dim))
        self.value_kernel, self.value_bias = self._projection(
            'value', (value_shape[-1], heads, self.value_dim), (heads, self.value_dim))
        features = self._output_features(query_shape)
        self.output_kernel, self.output_bias = self._projection(
            'attention_output', (heads, self.value_dim) + features, features)
        self.built = True

    def _attention_axes(self, rank):
        """The attention axes and the batch-like axes (the others between batch and
        features) of inputs of `rank`, as positive axes."""
        if self.attention_axes is None:
            axes = tuple(range(1, rank - 1))
        else:
            axes = tuple(sorted(a + rank + 1 if a < 0 else a for a in self.attention_axes))
        if any(not 0 < a < rank - 1 for a in axes):
            raise ValueError('MultiHeadAttention (%s): attention_axes %s are out of range for '
                             'inputs of rank %d.' % (self.name, self.attention_axes, rank))
        return axes, tuple(a for a in range(1, rank - 1) if a not in axes)

    def _project(self, x, kernel, bias, head_dim):
        """`x` `(batch, ..., dim)` projected to `(batch, ..., heads, head_dim)`."""
        size = self.num_heads * head_dim
        projected = K.dot(x, K.reshape(kernel, (-1, size)))
        if bias is not None:
            projected = projected + K.reshape(bias, (size,))
        return K.reshape(projected, tuple(_dims(x)[:-1]) + (self.num_heads, head_dim))

    def _heads_first(self, projected, axes, batch_axes):
        """`(batch, ..., heads, head_dim)` as `(batch * batch-like, heads, positions,
        head_dim)`, and the shape before the flattening of the positions."""
        rank = K.ndim(projected)
        permuted = K.permute_dimensions(
            projected, (0,) + batch_axes + (rank - 2,) + axes + (rank - 1,))
        dims = _dims(permuted)
        positions = _product(dims[2 + len(batch_axes):-1])
        return K.reshape(permuted, (-1, self.num_heads, positions, dims[-1])), dims

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        if return_attention_scores:
            raise ValueError('MultiHeadAttention (%s): return_attention_scores=True is not '
                             'supported.' % self.name)
        attention_mask = inputs[3] if isinstance(inputs, list) and len(inputs) == 4 else None
        query, value, key = _split_inputs(self, inputs[:3] if attention_mask is not None
                                          else inputs, most=4)
        rank = K.ndim(query)
        axes, batch_axes = self._attention_axes(rank)
        q = self._project(query, self.query_kernel, self.query_bias, self.key_dim)
        k = self._project(key, self.key_kernel, self.key_bias, self.key_dim)
        v = self._project(value, self.value_kernel, self.value_bias, self.value_dim)
        q, q_dims = self._heads_first(q * (1. / math.sqrt(float(self.key_dim))), axes,
                                      batch_axes)
        k, _ = self._heads_first(k, axes, batch_axes)
        v, _ = self._heads_first(v, axes, batch_axes)
        scores = K.batch_dot(K.reshape(q, (-1,) + tuple(_dims(q)[2:])),
                             K.reshape(k, (-1,) + tuple(_dims(k)[2:])), axes=(2, 2))
        scores = K.reshape(scores, (-1, self.num_heads) + tuple(_dims(scores)[1:]))
        keep = self._keep(key is not value, mask, attention_mask, use_causal_mask, batch_axes,
                          scores)
        if keep is not None:
            scores = _mask_scores(scores, keep)
        weights = K.softmax(scores, axis=-1)
        if 0. < self.dropout < 1.:
            weights = K.in_train_phase(K.dropout(weights, self.dropout), weights,
                                       training=training)
        heads = K.batch_dot(K.reshape(weights, (-1,) + tuple(_dims(weights)[2:])),
                            K.reshape(v, (-1,) + tuple(_dims(v)[2:])), axes=(2, 1))
        # (batch, batch-like..., heads, attention axes..., value_dim) back to
        # (batch, axes between batch and features..., heads, value_dim)
        heads = K.reshape(heads, tuple(q_dims[:-1]) + (self.value_dim,))
        heads_axis = 1 + len(batch_axes)
        heads = K.permute_dimensions(heads, (0,) + tuple(
            heads_axis + 1 + axes.index(a) if a in axes else 1 + batch_axes.index(a)
            for a in range(1, rank - 1)) + (heads_axis, rank))
        features = self._output_features(K.int_shape(query))
        output = K.dot(K.reshape(heads, tuple(_dims(heads)[:-2]) +
                                 (self.num_heads * self.value_dim,)),
                       K.reshape(self.output_kernel, (self.num_heads * self.value_dim, -1)))
        if self.output_bias is not None:
            output = output + K.reshape(self.output_bias, (-1,))
        return K.reshape(output, tuple(_dims(output)[:-1]) + features)

    def _keep(self, separate_key, mask, attention_mask, use_causal_mask, batch_axes, scores):
        """The mask of the scores `(batch, heads, Tq, Tk)` (1 keeps), or None."""
        query_mask, value_mask, key_mask = _split_masks(mask)
        if not separate_key:
            key_mask = None
        keep = None
        if any(m is not None for m in (query_mask, value_mask, key_mask, attention_mask)):
            if batch_axes:
                raise ValueError('MultiHeadAttention (%s): masks need attention_axes covering '
                                 'every axis between batch and features; got %s.'
                                 % (self.name, self.attention_axes))
            keep = K.ones_like(scores)
        if query_mask is not None:
            keep = keep * K.reshape(_float_mask(query_mask), (-1, 1, _product(
                _dims(query_mask)[1:]), 1))
        for m in (value_mask, key_mask):
            if m is not None:
                keep = keep * K.reshape(_float_mask(m), (-1, 1, 1, _product(_dims(m)[1:])))
        if attention_mask is not None:
            dims = _dims(scores)
            keep = keep * K.reshape(_float_mask(attention_mask), (-1, 1, dims[2], dims[3]))
        if use_causal_mask:
            causal = _causal_mask(scores)
            keep = causal if keep is None else keep * causal
        return keep

    def compute_output_shape(self, input_shape):
        query_shape = input_shape[0]
        return tuple(query_shape[:-1]) + self._output_features(query_shape)

    def compute_mask(self, inputs, mask=None):
        return _split_masks(mask)[0]

    def get_config(self):
        config = {
            'num_heads': self.num_heads,
            'key_dim': self.key_dim,
            'value_dim': self.value_dim,
            'dropout': self.dropout,
            'use_bias': self.use_bias,
            'output_shape': self.output_shape_,
            'attention_axes': None if self.attention_axes is None else list(self.attention_axes),
            'kernel_initializer': initializers.serialize(self.kernel_initializer),
            'bias_initializer': initializers.serialize(self.bias_initializer),
            'kernel_regularizer': regularizers.serialize(self.kernel_regularizer),
            'bias_regularizer': regularizers.serialize(self.bias_regularizer),
            'activity_regularizer': regularizers.serialize(self.activity_regularizer),
            'kernel_constraint': constraints.serialize(self.kernel_constraint),
            'bias_constraint': constraints.serialize(self.bias_constraint),
            'query_shape': self.query_shape,
            'key_shape': self.key_shape,
            'value_shape': self.value_shape,
            'softmax_robust_masking': self.softmax_robust_masking}
        base_config = super(MultiHeadAttention, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))
