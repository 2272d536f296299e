"""torchk.tf's string tensors: tf.string, tf.constant of text, the shape ops on string
tensors, tf.strings' tensor results (TensorFlow's values: tests/layers/test_text_fixtures.py)."""
import numpy as np
import pytest
import torch

import torchk.tf as tf


def test_string_constants_and_dtype():
    text = tf.constant([['é', 'b']])
    assert text.dtype == tf.string and tf.string == text.dtype and text.shape == (1, 2)
    assert tf.is_tensor(text) and tf.as_dtype(np.object_) == tf.string
    assert tf.constant('x', shape=(3,)).numpy().tolist() == [b'x'] * 3
    with pytest.raises(TypeError, match='to_number'):
        tf.convert_to_tensor(['1'], dtype=tf.float32)
    with pytest.raises(TypeError, match='as_string'):
        tf.convert_to_tensor([1.5], dtype=tf.string)


def test_plus_concatenates_strings_element_wise():
    # TF (function guide): `tf.constant('a') + tf.constant('a')` is b'aa'; it broadcasts.
    assert (tf.constant('a') + tf.constant('a')).numpy() == b'aa'
    joined = tf.constant([['x', 'y']]) + tf.constant(['1', '2'])
    assert joined.numpy().tolist() == [[b'x1', b'y2']]
    assert ('<' + tf.constant(['a', 'b']) + '>').numpy().tolist() == [b'<a>', b'<b>']


def test_shape_ops_take_string_tensors():
    text = tf.constant(['a', 'b', 'c'])
    assert tf.expand_dims(text, -1).shape == (3, 1)
    assert tf.reshape(text, [3, 1]).shape == (3, 1)
    assert tf.squeeze(tf.expand_dims(text, 0)).shape == (3,)
    assert tf.concat([text, text], axis=0).shape == (6,)
    assert tf.stack([text, text], axis=1).shape == (3, 2)
    assert tf.gather(text, [2, 0]).numpy().tolist() == [b'c', b'a']
    assert tf.boolean_mask(text, [True, False, True]).numpy().tolist() == [b'a', b'c']
    assert int(tf.size(text)) == 3 and tf.shape(text).tolist() == [3]


def test_numbers_come_back_as_tensors():
    assert isinstance(tf.strings.length(['ab']), torch.Tensor)
    assert tf.strings.to_number(['2.5']).dtype == torch.float32
    assert tf.strings.to_hash_bucket_fast(['a'], 3).dtype == torch.int64
    with pytest.raises(ValueError, match="'x' is not a number"):
        tf.strings.to_number(['x'])
