"""LayerNormalization, GroupNormalization, Attention, AdditiveAttention and
MultiHeadAttention against numpy, on inputs of unknown length, with masks and dropout (the
TF fixtures of tests/integration/test_tf2_layers.py cover fixed shapes)."""
import numpy as np
import pytest

import keras
from keras import backend as K

from torchk.layers import (AdditiveAttention, Attention, GroupNormalization,
                           LayerNormalization, MultiHeadAttention)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _random_weights(layer, seed=0):
    rng = np.random.RandomState(seed)
    weights = [rng.uniform(-1, 1, w.shape).astype('float32') for w in layer.get_weights()]
    layer.set_weights(weights)
    return weights


def test_group_normalization_on_unknown_length_matches_numpy():
    x = np.random.RandomState(0).randn(2, 7, 6).astype('float32') * 3 + 1
    inputs = keras.Input((None, 6))
    layer = GroupNormalization(groups=3, epsilon=1e-3)
    model = keras.Model(inputs, layer(inputs))
    gamma, beta = _random_weights(layer)
    grouped = x.reshape(2, 7, 3, 2)
    mean = grouped.mean(axis=(1, 3), keepdims=True)
    variance = grouped.var(axis=(1, 3), keepdims=True)
    expected = ((grouped - mean) / np.sqrt(variance + 1e-3)).reshape(x.shape) * gamma + beta
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-5, atol=1e-5)


def test_layer_normalization_passes_masks_and_matches_numpy():
    ids = np.array([[1, 2, 3, 0], [4, 5, 0, 0]])
    inputs = keras.Input((None,), dtype='int32')
    embedded = keras.layers.Embedding(6, 5, mask_zero=True)(inputs)
    layer = LayerNormalization(epsilon=1e-6)
    normalized = layer(embedded)
    assert layer.output_mask is not None
    model = keras.Model(inputs, normalized)
    gamma, beta = _random_weights(layer)
    x = K.get_value(model.layers[1].embeddings)[ids]
    expected = ((x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6)
                * gamma + beta)
    np.testing.assert_allclose(model.predict(ids), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('layer_class', [Attention, AdditiveAttention])
def test_dense_attention_on_unknown_lengths_with_masks(layer_class):
    rng = np.random.RandomState(1)
    q, v = rng.randn(2, 3, 4).astype('float32'), rng.randn(2, 5, 4).astype('float32')
    value_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], 'float32')
    query_input, value_input = keras.Input((None, 4)), keras.Input((None, 4))
    masked_value = keras.layers.Masking(0.)(value_input)
    layer = layer_class()
    model = keras.Model([query_input, value_input], layer([query_input, masked_value]))
    weights = _random_weights(layer)
    got = model.predict([q, v * value_mask[:, :, None]])
    v = v * value_mask[:, :, None]
    if layer_class is Attention:
        scores = q @ v.transpose(0, 2, 1)
    else:
        scores = (weights[0] * np.tanh(q[:, :, None] + v[:, None])).sum(-1)
    scores = scores - 1e9 * (1 - value_mask[:, None])
    np.testing.assert_allclose(got, _softmax(scores) @ v, rtol=1e-5, atol=1e-6)


def test_attention_dropout_only_in_training():
    q = np.random.RandomState(2).randn(4, 6, 3).astype('float32')
    inputs = keras.Input((6, 3))
    outputs = Attention(dropout=0.5)([inputs, inputs])
    run = K.function([inputs, K.learning_phase()], [outputs])
    expected = _softmax(q @ q.transpose(0, 2, 1)) @ q
    np.testing.assert_allclose(run([q, 0])[0], expected, rtol=1e-5, atol=1e-6)
    assert np.abs(run([q, 1])[0] - expected).max() > 1e-3


def test_multi_head_attention_on_unknown_length_matches_numpy():
    rng = np.random.RandomState(3)
    x = rng.randn(2, 7, 6).astype('float32')
    inputs = keras.Input((None, 6))
    layer = MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4)
    model = keras.Model(inputs, layer([inputs, inputs], use_causal_mask=True))
    wq, bq, wk, bk, wv, bv, wo, bo = _random_weights(layer)
    q = np.einsum('btd,dnh->bnth', x, wq) + bq[None, :, None]
    k = np.einsum('btd,dnh->bnth', x, wk) + bk[None, :, None]
    v = np.einsum('btd,dnh->bnth', x, wv) + bv[None, :, None]
    scores = np.einsum('bnth,bnsh->bnts', q / np.sqrt(3.), k)
    scores = scores - 1e9 * (1 - np.tril(np.ones((7, 7))))
    heads = np.einsum('bnts,bnsh->bnth', _softmax(scores), v)
    expected = np.einsum('bnth,nho->bto', heads, wo) + bo
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-4, atol=1e-5)


def test_multi_head_attention_refuses_a_single_tensor():
    with pytest.raises(ValueError, match=r'\[query, value\]'):
        MultiHeadAttention(num_heads=2, key_dim=3)(keras.Input((4, 6)))


@pytest.mark.parametrize('config, call_options', [({'causal': True}, {}),
                                                  ({}, {'use_causal_mask': True})],
                         ids=['causal_config', 'use_causal_mask'])
def test_attention_causal_mask_from_config_or_call(config, call_options):
    """tf.keras 2.4-2.9 saved `causal` in the configuration; later versions pass
    `use_causal_mask` to the call."""
    q = np.random.RandomState(4).randn(2, 5, 3).astype('float32')
    inputs = keras.Input((None, 3))
    layer = Attention(**config)
    model = keras.Model(inputs, layer([inputs, inputs], **call_options))
    scores = q @ q.transpose(0, 2, 1) - 1e9 * (1 - np.tril(np.ones((5, 5))))
    np.testing.assert_allclose(model.predict(q), _softmax(scores) @ q, rtol=1e-5, atol=1e-6)
    assert Attention.from_config(layer.get_config()).get_config() == layer.get_config()
