"""Damaged and hostile model files get a ModelFileError naming the file (or 'the
configuration') and what is wrong: no hang, no memory blow-up, no error from deep inside
(torchk/saving/formats.py, validation.py, errors.py)."""
import io
import json
import os
import shutil
import sys
import types

import h5py
import numpy as np
import pytest

import keras
from keras import layers
from keras.models import Model, Sequential

from torchk.saving import ModelFileError, formats, safe_mode, validation

from .load_timeout import within

MODELS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'tf_keras', 'models')
MLP = os.path.join(MODELS, 'tf_keras-2.21.0', 'mlp.h5')


def _functional_config():
    inputs = layers.Input((3,), name='x')
    hidden = layers.Dense(4, name='hidden')(inputs)
    outputs = layers.Dense(2, name='out')(hidden)
    return json.loads(Model(inputs, outputs).to_json())


def _layer(config, name):
    return [layer for layer in config['config']['layers'] if layer['name'] == name][0]


def _refused(text_or_config, match, source='the configuration'):
    load = (keras.models.model_from_json if isinstance(text_or_config, str)
            else keras.models.model_from_config)
    with within(20), pytest.raises(ModelFileError, match=match) as caught:
        load(text_or_config)
    assert str(caught.value).startswith(source + ': ')


# ---- One dispatch ------------------------------------------------------------------------

@pytest.mark.parametrize('make, what', [
    (lambda d: os.path.join(d, 'missing.h5'), 'no such file or directory'),
    (lambda d: _write(os.path.join(d, 'empty.h5'), b''), 'the file is empty'),
    (lambda d: d, 'a directory without saved_model.pb'),
    (lambda d: _write(os.path.join(d, 'notes.h5'), b'hello, world'),
     r"not a model file \(it starts with b'hello, w'\)"),
])
def test_what_is_no_model_file_is_named_with_the_formats_recognised(make, what, tmp_path):
    path = make(str(tmp_path))
    with pytest.raises(ModelFileError, match=what) as caught:
        keras.models.load_model(path)
    assert str(caught.value).startswith(path + ': ')
    assert 'the formats recognised are an HDF5 model file' in str(caught.value)
    assert 'a .keras zip' in str(caught.value) and 'a SavedModel directory' in str(caught.value)


def _write(path, data):
    with open(path, 'wb') as f:
        f.write(data)
    return path


@pytest.mark.parametrize('kind, make', [
    ('keras_zip', lambda d: _write(os.path.join(d, 'model.h5'), b'PK\x03\x04rest')),
    ('keras_zip', lambda d: _write(os.path.join(d, 'empty_archive'), b'PK\x05\x06' + bytes(18))),
    ('saved_model', lambda d: _write(os.path.join(d, 'saved_model.pb'), b'') and d),
])
def test_format_is_recognised_by_content_and_loaded_by_its_module(kind, make, tmp_path,
                                                                  monkeypatch):
    calls = []

    def load(path, custom_objects, compile):
        calls.append((path, custom_objects, compile, safe_mode.in_safe_mode()))
        return 'model'
    module = types.ModuleType('torchk.saving.' + kind)
    module.load = load
    monkeypatch.setitem(sys.modules, 'torchk.saving.' + kind, module)
    monkeypatch.setattr(sys.modules['torchk.saving'], kind, module, raising=False)
    path = make(str(tmp_path))
    assert keras.models.load_model(path, {'f': len}, False, safe_mode=False) == 'model'
    assert keras.models.load_model(path) == 'model'
    assert calls == [(path, {'f': len}, False, False), (path, None, True, True)]


def test_hdf5_after_a_user_block_is_recognised(tmp_path):
    path = str(tmp_path / 'user_block.h5')
    with h5py.File(path, 'w', userblock_size=512) as f:
        f.attrs['x'] = 1
    assert formats.recognise(path) == 'hdf5'


def test_open_hdf5_file_and_stream_load_as_keras_allows(tmp_path):
    model = Sequential([layers.Dense(2, input_shape=(3,))])
    path = str(tmp_path / 'model.h5')
    model.save(path)
    x = np.ones((1, 3), 'float32')
    with h5py.File(path, 'r') as f:
        np.testing.assert_allclose(keras.models.load_model(f).predict(x), model.predict(x))
    with open(path, 'rb') as f:
        stream = io.BytesIO(f.read())
    np.testing.assert_allclose(keras.models.load_model(stream).predict(x), model.predict(x))


def test_gcs_paths_go_to_keras_own_loader(monkeypatch):
    """Keras 2.3.1 reads `gs://` paths by copying them to a local file (saving.py:454);
    the dispatch does not look for them on the local disk."""
    calls = []
    monkeypatch.setattr(formats, '_keras_load_model',
                        lambda: lambda path, **kwargs: calls.append(path) or 'model')
    assert keras.models.load_model('gs://bucket/model.h5') == 'model'
    assert calls == ['gs://bucket/model.h5']


# ---- Damaged files -----------------------------------------------------------------------

def test_truncated_hdf5_names_the_file(tmp_path):
    path = str(tmp_path / 'truncated.h5')
    with open(MLP, 'rb') as f:
        data = f.read()
    _write(path, data[:len(data) // 2])
    with pytest.raises(ModelFileError, match='truncated') as caught:
        keras.models.load_model(path)
    assert str(caught.value).startswith(path + ': ')


def _edited_copy(tmp_path, edit):
    path = str(tmp_path / 'edited.h5')
    shutil.copyfile(MLP, path)
    with h5py.File(path, 'r+') as f:
        edit(f)
    return path


def _set_model_config(f, change):
    config = json.loads(f.attrs['model_config'])
    change(config)
    f.attrs['model_config'] = json.dumps(config)


def _rename_class(config):
    config['config']['layers'][1]['class_name'] = 'NoSuchLayer'


def _huge_dense(config):
    config['config']['layers'][1]['config']['units'] = 10 ** 12


def _drop_a_weight(f):
    group = f['model_weights']['hidden']
    names = list(group.attrs['weight_names'])
    group.attrs['weight_names'] = names[:1]


def _reshape_a_weight(f):
    group = f['model_weights']['hidden']['hidden']
    del group['kernel:0']
    group['kernel:0'] = np.zeros((5, 8), 'float32')


def _huge_dataset(f):
    group = f['model_weights']['hidden']['hidden']
    del group['kernel:0']
    group.create_dataset('kernel:0', shape=(10 ** 7, 10 ** 6), dtype='float32')


@pytest.mark.parametrize('edit, what', [
    (lambda f: f.attrs.__setitem__('model_config', '{"class_name": "Sequential", '),
     'invalid JSON'),
    (lambda f: _set_model_config(f, _rename_class), 'Unknown layer: NoSuchLayer'),
    (lambda f: _set_model_config(f, _huge_dense),
     r"layer 'hidden' weight 'kernel' of shape \(6, 1000000000000\) needs 24.0 TB"),
    # Keras 2.3.1's message for it (saving.py:326-334) adds the file's layer name, bytes, to
    # a str: the TypeError is what is left.
    (_drop_a_weight, r'not a valid Keras model \(TypeError: can only concatenate str'),
    (_reshape_a_weight, r'has shape \(6, 8\)|shape mismatch|\(5, 8\)'),
    (_huge_dataset, r"the weights declare 40.0 TB"),
])
def test_broken_or_hostile_hdf5_names_the_file_and_what_is_wrong(edit, what, tmp_path):
    path = _edited_copy(tmp_path, edit)
    with within(20), pytest.raises(ModelFileError, match=what) as caught:
        keras.models.load_model(path, safe_mode=False)
    assert str(caught.value).startswith(path + ': ')


# ---- Hostile configurations --------------------------------------------------------------

def test_layer_cycle_is_named_not_a_hang():
    config = _functional_config()
    _layer(config, 'hidden')['inbound_nodes'] = [[['out', 0, 0, {}]]]
    _refused(json.dumps(config), r"calls layer 'hidden' on node 0 of layer 'out', which no "
                                 r"call creates \(the layers form a cycle")


def test_two_layers_of_one_name_are_named_not_a_hang():
    config = _functional_config()
    _layer(config, 'out')['name'] = 'hidden'
    _refused(json.dumps(config), "has two layers named 'hidden'")


def test_node_that_no_call_creates_is_named_not_a_hang():
    config = _functional_config()
    _layer(config, 'out')['inbound_nodes'] = [[['hidden', 3, 0, {}]]]
    _refused(json.dumps(config), "calls layer 'out' on node 3 of layer 'hidden'")


def test_inbound_node_naming_a_missing_layer():
    config = _functional_config()
    _layer(config, 'out')['inbound_nodes'] = [[['ghost', 0, 0, {}]]]
    _refused(json.dumps(config), "calls layer 'out' on layer 'ghost', which the model does "
                                 "not have")


def test_output_naming_a_missing_node():
    config = _functional_config()
    config['config']['output_layers'] = [['out', 1, 0]]
    _refused(json.dumps(config), r"names \['out', 1, 0\] in 'output_layers'")


def test_malformed_node():
    config = _functional_config()
    _layer(config, 'out')['inbound_nodes'] = [[['hidden', 'zero', 0, {}]]]
    _refused(json.dumps(config), r"gives layer 'out' the input \['hidden', 'zero', 0, \{\}\]")


@pytest.mark.parametrize('layer, what', [
    ({'class_name': 'Dense', 'config': {'name': 'd', 'units': 10 ** 12}},
     r"layer 'd' weight 'kernel' of shape \(3, 1000000000000\) needs 12.0 TB"),
    ({'class_name': 'Embedding', 'config': {'name': 'e', 'input_dim': 10 ** 13,
                                            'output_dim': 8}},
     r"layer 'e' weight 'embeddings' of shape \(10000000000000, 8\) needs 320.0 TB"),
    ({'class_name': 'Dense', 'config': {'name': 'd', 'units': -4}},
     r"layer 'd' declares its weight 'kernel' with the shape \(3, -4\)"),
])
def test_declared_sizes_are_checked_before_allocating(layer, what):
    config = {'class_name': 'Sequential', 'config': {'name': 's', 'layers': [
        {'class_name': 'InputLayer', 'config': {'batch_input_shape': [None, 3], 'name': 'x'}},
        layer]}}
    _refused(json.dumps(config), what)


def test_budget_is_for_the_whole_load(monkeypatch):
    monkeypatch.setenv(validation.BUDGET_VARIABLE, str(4 * (3 * 10 + 10) + 4 * (10 * 10)))
    layers_config = [{'class_name': 'Dense', 'config': {'name': 'd%d' % i, 'units': 10,
                                                         'use_bias': i == 0}}
                     for i in range(3)]
    config = {'class_name': 'Sequential', 'config': {'name': 's', 'layers': [
        {'class_name': 'InputLayer', 'config': {'batch_input_shape': [None, 3], 'name': 'x'}}]
        + layers_config}}
    _refused(json.dumps(config), r"layer 'd2' weight 'kernel' of shape \(10, 10\) needs "
                                 r"400 bytes, which would take the model over the 560 bytes")
    monkeypatch.setenv(validation.BUDGET_VARIABLE, str(10 ** 6))
    keras.models.model_from_json(json.dumps(config))


def test_deeply_nested_text_and_configuration():
    _refused('[' * 100000 + ']' * 100000, 'nested too deeply to read')
    deep = {'class_name': 'Sequential', 'config': {'name': 's', 'layers': []}}
    for _ in range(200):
        deep = {'class_name': 'Sequential', 'config': {'name': 's', 'layers': [deep]}}
    _refused(deep, 'nests more than 100 levels deep')


def test_yaml_aliases_that_expand_to_a_huge_configuration():
    lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
    lines += ['a%d: &a%d [%s]' % (i, i, ', '.join(['*a%d' % (i - 1)] * 10)) for i in range(1, 9)]
    text = '\n'.join(lines) + '\nclass_name: Sequential\nconfig: {name: s, layers: *a8}\n'
    with within(20), pytest.raises(ModelFileError,
                                   match='holds more than %d items' % validation.MAX_ITEMS):
        keras.models.model_from_yaml(text)


@pytest.mark.parametrize('text, what', [
    ('{"class_name": "Sequential", ', 'invalid JSON'),
    ('{"class_name": "NoSuchModel", "config": {}}', 'Unknown layer: NoSuchModel'),
    ('[1, 2]', r'not a valid Keras model \(TypeError'),
])
def test_invalid_json_configurations(text, what):
    _refused(text, what)
