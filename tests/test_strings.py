"""torchk/strings.py and fingerprint.py (host text and TensorFlow's string hashes), and
string placeholders in graphs (graph.py, function.py). TensorFlow's own values are checked in
tests/layers/test_text_fixtures.py."""
import re

import numpy as np
import pytest
import torch

from keras import backend as K

from torchk import fingerprint, graph, strings


def test_as_bytes_encodes_text_and_names_the_argument_of_anything_else():
    array = strings.as_bytes([['é', b'x'], ['', 'ab']])
    assert array.dtype == object and array.shape == (2, 2)
    assert array.tolist() == [['é'.encode(), b'x'], [b'', b'ab']]
    assert strings.as_bytes(np.array(['a', 'bc'])).tolist() == [b'a', b'bc']
    assert strings.as_bytes('ü').item() == 'ü'.encode()
    with pytest.raises(TypeError, match='reviews must be strings.*float'):
        strings.as_bytes(np.array([1.5]), 'reviews')
    with pytest.raises(TypeError, match='reviews must be strings.*int'):
        strings.as_bytes(['a', 3], 'reviews')


def test_string_tensor_face():
    tensor = strings.StringTensor(['a', 'bé'])
    assert tensor.shape == (2,) and tensor.dtype == 'string' and len(tensor) == 2
    assert tensor.numpy().tolist() == [b'a', 'bé'.encode()] and tensor[1].numpy() == 'bé'.encode()
    assert [t.numpy() for t in tensor] == [b'a', 'bé'.encode()]
    assert (tensor == ['a', 'x']).tolist() == [True, False]


def _farmhash_by_one(values):
    """fingerprint64 of each string alone (a group of one): the vectorized groups must agree."""
    return np.array([fingerprint.fingerprint64([v])[0] for v in values], dtype=np.uint64)


def test_fingerprint_of_a_batch_is_each_strings_whatever_the_lengths_around_it():
    rng = np.random.default_rng(0)
    values = [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in
              list(range(0, 140)) + [200, 257, 1000]]
    rng.shuffle(values)
    np.testing.assert_array_equal(fingerprint.fingerprint64(values), _farmhash_by_one(values))


def test_siphash_reference_vector():
    # SipHash-2-4's published test vector: key 00..0f, message 00..0e.
    key = (int.from_bytes(bytes(range(8)), 'little'), int.from_bytes(bytes(range(8, 16)),
                                                                      'little'))
    assert fingerprint.siphash(bytes(range(15)), key) == 0xa129ca6149be45e5


@pytest.mark.parametrize('pattern, rewrite', [
    ('<br />', ' '), (r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']', ''), ('[aeiou]', '_'),
    (r'\.', '!'), ('ab', 'x'), (r'(\w)(\d)', r'\2\1'), ('[^a-z ]', ''), ('é', 'e')])
def test_regex_replace_fast_paths_agree_with_re(pattern, rewrite):
    text = ['Hello, world! <br /> a1 b2 ab.ab', 'café É über; ___', '']
    expected = [re.sub(pattern, rewrite.replace('\\1', '\\g<1>').replace('\\2', '\\g<2>'), t,
                       flags=re.ASCII).encode() for t in text]
    assert strings.regex_replace(text, pattern, rewrite).tolist() == expected


def test_split_ngrams_and_ragged_rows():
    rows = strings.split(['a b  c', '', 'd'])
    assert rows.to_list() == [[b'a', b'b', b'c'], [], [b'd']]
    assert rows.row_lengths().tolist() == [3, 0, 1]
    assert rows.to_tensor().numpy().tolist() == [[b'a', b'b', b'c'], [b'', b'', b''],
                                                 [b'd', b'', b'']]
    assert strings.ngram_rows(rows.rows, (1, 2)) == [[b'a', b'b', b'c', b'a b', b'b c'], [],
                                                      [b'd']]
    with pytest.raises(ValueError, match='rank 0 or 1'):
        strings.split([['a'], ['b']])


def _byte_lengths(text):
    return torch.tensor([len(value) for value in text.ravel().tolist()])


def test_string_placeholder_is_fed_text_and_its_host_op_feeds_torch():
    text = K.placeholder(shape=(None,), dtype='string', name='text')
    assert K.dtype(text) == 'string' and K.int_shape(text) == (None,)
    lengths = graph.record(_byte_lengths, (text,), dynamic_axes=(0,))
    assert K.dtype(lengths) == 'int64' and K.int_shape(lengths) == (None,)
    run = K.function([text], [lengths * 2])
    np.testing.assert_array_equal(run([['ab', 'é', '']])[0], [4, 4, 0])
    with pytest.raises(TypeError, match="input 0 \\('text'\\) must be strings"):
        run([np.array([1., 2.])])
    with pytest.raises(ValueError, match='shape'):
        run([np.array([['a']])])
