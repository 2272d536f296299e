"""torchk's text and categorical layers and `tf.strings` give TensorFlow's outputs,
vocabularies, boundaries and configurations on the cases of tests/text_cases.py (fixtures
made by tests/fixtures/make_tf_keras_text.py with tf_keras 2.21)."""
import json
import os

import numpy as np
import pytest
import torch

import keras

import text_cases
import torchk.tf as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'fixtures', 'tf_keras', 'text', 'tf_keras-2.21.0')


def _load(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as f:
        return json.load(f)


LAYERS = _load('layers.json')
STRINGS = _load('strings.json')


def _lists(value):
    if isinstance(value, (tf.strings.strings.RaggedStrings)):
        return value.to_list()
    if isinstance(value, tf.strings.strings.StringTensor):
        return value.numpy()
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def _plain(value):
    """Outputs as the fixture script writes them: lists, text decoded."""
    return text_cases.plain(value, _lists)


def _has_floats(value):
    if isinstance(value, list):
        return any(_has_floats(v) for v in value)
    return isinstance(value, float)


def _assert_same(ours, theirs, what):
    ours = _plain(ours)
    if _has_floats(theirs):
        np.testing.assert_allclose(np.asarray(ours, dtype='float64'), theirs, rtol=1e-6,
                                   atol=1e-6, err_msg=what)
    else:
        assert ours == theirs, what


@pytest.mark.parametrize('name', sorted(text_cases.LAYER_CASES))
def test_layer_matches_tensorflow(name):
    class_name, arguments, data, batch_size, inputs = text_cases.LAYER_CASES[name]
    expected = LAYERS[name]
    layer = getattr(keras.layers, class_name)(**text_cases.layer_arguments(arguments, tf))
    if data is not None:
        layer.adapt(text_cases.adapt_data(data), batch_size=batch_size)
    output = layer(np.array(inputs))
    _assert_same(output, expected['output'], 'output')
    dtype = output.dtype if isinstance(output, tf.strings.strings.StringTensor) else (
        str(output.dtype).replace('torch.', ''))
    assert dtype == expected['dtype']
    if 'vocabulary' in expected:
        assert _plain(layer.get_vocabulary()) == expected['vocabulary']
    if 'bin_boundaries' in expected:
        _assert_same(layer.bin_boundaries, expected['bin_boundaries'], 'bin_boundaries')
    config = _plain(layer.get_config())
    theirs = dict(expected['config'])
    for key in ('name', 'batch_input_shape'):
        config.pop(key, None)
        theirs.pop(key, None)
    assert config == theirs


@pytest.mark.parametrize('name', sorted(text_cases.STRING_CASES))
def test_tf_strings_matches_tensorflow(name):
    function, args, kwargs = text_cases.STRING_CASES[name]
    args = [text_cases.string_argument(a, tf) if isinstance(a, str) else a for a in args]
    if function == 'join':
        args = [[tf.constant(part) for part in args[0]]]
    _assert_same(getattr(tf.strings, function)(*args, **kwargs), STRINGS[name], name)
