"""Safe mode: a model file or configuration never runs the code it carries unless the caller
says so (torchk/saving/safe_mode.py).

Each payload is a Lambda layer named 'payload' whose bytecode creates the file named by
`TORCHK_PAYLOAD_FILE`: saved by Keras 2.3.1 on torchk here, and by tf_keras 2.21 / tf.keras 2.15
(tests/fixtures/make_payload_models.py). Through every entry point, the file is never
created and the error names the layer; with each opt-in, the model loads and the payload runs.
"""
import copy
import functools
import glob
import json
import os
import sys

import numpy as np
import pytest
import yaml

import keras
from keras import layers
from keras.models import Model, Sequential

import torchk.config
from torchk.saving import ModelFileError

PAYLOADS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'payloads')
DIALECTS = sorted(os.path.basename(d) for d in glob.glob(os.path.join(PAYLOADS, '*')))

PAYLOAD = (lambda x: (__import__('pathlib').Path(
    __import__('os').environ['TORCHK_PAYLOAD_FILE']).touch(), x)[1])
PAYLOAD_SHAPE = (lambda shape: (__import__('pathlib').Path(
    __import__('os').environ['TORCHK_PAYLOAD_FILE']).touch(), shape)[1])
# The Python that made the fixtures (tests/fixtures/make_payload_models.py): their bytecode
# runs only there (as Keras 2's Lambda bytecode always did).
FIXTURE_PYTHON = (3, 11)
REFUSED = r"Lambda layer 'payload' stores its %s as Python bytecode, which loading would run"


@pytest.fixture
def marker(tmp_path, monkeypatch):
    """The file a payload would create; safe mode on, whatever the environment says."""
    path = tmp_path / 'payload_ran'
    monkeypatch.setenv('TORCHK_PAYLOAD_FILE', str(path))
    monkeypatch.delenv('TORCHK_UNSAFE_DESERIALIZATION', raising=False)
    monkeypatch.setattr(torchk.config, '_UNSAFE_DESERIALIZATION', False)
    return path


def _identity(x):
    return x


# Models made by Keras 2.3.1 on torchk, built with the payload's file set to /dev/null.
def _function_model():
    inputs = layers.Input((2,), name='x')
    return Model(inputs, layers.Lambda(PAYLOAD, name='payload')(inputs))


def _output_shape_model():
    inputs = layers.Input((2,), name='x')
    return Model(inputs, layers.Lambda(_identity, output_shape=PAYLOAD_SHAPE,
                                       name='payload')(inputs))


def _sequential_model():
    return Sequential([layers.Dense(2, input_shape=(2,)), layers.Lambda(PAYLOAD, name='payload')])


def _nested_model():
    """The payload in a TimeDistributed, in a Sequential, in a functional model."""
    inner = Sequential([layers.TimeDistributed(layers.Lambda(PAYLOAD, name='payload'),
                                               input_shape=(3, 2))], name='inner')
    inputs = layers.Input((3, 2))
    return Model(inputs, inner(inputs))


BUILDERS = {'function': _function_model, 'output_shape': _output_shape_model,
            'sequential': _sequential_model, 'nested': _nested_model}


def _keras_model(name, monkeypatch):
    """The model, built (so its payload run) with the payload's file set to /dev/null."""
    marker = os.environ.get('TORCHK_PAYLOAD_FILE')
    os.environ['TORCHK_PAYLOAD_FILE'] = os.devnull
    try:
        return BUILDERS[name]()
    finally:
        if marker is None:
            del os.environ['TORCHK_PAYLOAD_FILE']
        else:
            os.environ['TORCHK_PAYLOAD_FILE'] = marker


def _entry_points(model, tmp_path):
    """(entry point, load()) for every way Keras 2.3.1 rebuilds this model."""
    path = str(tmp_path / 'model.h5')
    model.save(path)
    config = model.get_config()
    wrapped = {'class_name': type(model).__name__, 'config': config}
    cls = type(model)
    return {
        'load_model': lambda **kw: keras.models.load_model(path, **kw),
        'model_from_json': lambda **kw: keras.models.model_from_json(model.to_json(), **kw),
        'model_from_yaml': lambda **kw: keras.models.model_from_yaml(model.to_yaml(), **kw),
        'model_from_config': lambda **kw: keras.models.model_from_config(
            copy.deepcopy(wrapped), **kw),
        '%s.from_config' % cls.__name__: lambda **kw: cls.from_config(copy.deepcopy(config),
                                                                      **kw),
    }


def _fixture_entry_points(dialect, name):
    base = os.path.join(PAYLOADS, dialect, name)
    points = {}
    if os.path.exists(base + '.h5'):
        points['load_model'] = lambda **kw: keras.models.load_model(base + '.h5', **kw)
    with open(base + '.json') as f:
        text = f.read()
    points.update({
        'model_from_json': lambda **kw: keras.models.model_from_json(text, **kw),
        'model_from_yaml': lambda **kw: keras.models.model_from_yaml(
            yaml.safe_dump(json.loads(text)), **kw),
        'model_from_config': lambda **kw: keras.models.model_from_config(json.loads(text),
                                                                         **kw),
    })
    return points


def _payload_cases():
    cases = []
    for name in BUILDERS:
        for point in ('load_model', 'model_from_json', 'model_from_yaml', 'model_from_config',
                      'from_config'):
            cases.append(('keras-2.3.1', name, point))
    for dialect in DIALECTS:
        for name in ('function', 'output_shape', 'nested'):
            for point in _fixture_entry_points(dialect, name):
                cases.append((dialect, name, point))
    return cases


def _load(dialect, name, point, tmp_path, monkeypatch):
    """`load(**kwargs)` for the case. Keras stores every Python function as bytecode, so
    the `output_shape` case supplies its function (`_identity`) in `custom_objects`, as
    issue 18's remedy allows, leaving only the payload in `output_shape`."""
    if dialect == 'keras-2.3.1':
        points = _entry_points(_keras_model(name, monkeypatch), tmp_path)
        if point == 'from_config':
            point = [p for p in points if p.endswith('.from_config')][0]
    else:
        points = _fixture_entry_points(dialect, name)
    if name == 'output_shape':
        return functools.partial(points[point], custom_objects={'payload': _identity})
    return points[point]


def _refused_key(name):
    return 'output_shape' if name == 'output_shape' else 'function'


@pytest.mark.parametrize('dialect, name, point', _payload_cases())
def test_payload_is_refused_by_default(dialect, name, point, marker, tmp_path, monkeypatch):
    load = _load(dialect, name, point, tmp_path, monkeypatch)
    with pytest.raises(ValueError, match=REFUSED % _refused_key(name)) as caught:
        load()
    assert 'safe_mode=False' in str(caught.value)
    assert 'enable_unsafe_deserialization()' in str(caught.value)
    assert 'TORCHK_UNSAFE_DESERIALIZATION=1' in str(caught.value)
    assert not marker.exists()


@pytest.mark.parametrize('opt_in', ['safe_mode=False', 'enable_unsafe_deserialization',
                                    'environment'])
@pytest.mark.parametrize('dialect, name, point', [
    case for case in _payload_cases() if case[2] in ('load_model', 'model_from_json')])
def test_each_opt_in_loads_and_the_payload_runs(dialect, name, point, opt_in, marker,
                                                tmp_path, monkeypatch):
    if dialect != 'keras-2.3.1' and sys.version_info[:2] != FIXTURE_PYTHON:
        pytest.skip('the fixtures hold Python %d.%d bytecode, which Python %d.%d cannot run'
                    % (FIXTURE_PYTHON + sys.version_info[:2]))
    load = _load(dialect, name, point, tmp_path, monkeypatch)
    monkeypatch.setenv('TORCHK_PAYLOAD_FILE', str(marker))
    kwargs = {}
    if opt_in == 'safe_mode=False':
        kwargs = {'safe_mode': False}
    elif opt_in == 'enable_unsafe_deserialization':
        monkeypatch.setattr(torchk.config, '_UNSAFE_DESERIALIZATION', False)
        torchk.config.enable_unsafe_deserialization()
    else:
        monkeypatch.setenv('TORCHK_UNSAFE_DESERIALIZATION', '1')
    model = load(**kwargs)
    model.predict(np.ones((1,) + model.input_shape[1:], 'float32'))
    assert marker.exists()


def test_safe_mode_true_refuses_even_when_the_process_allows(marker, tmp_path, monkeypatch):
    load = _load('keras-2.3.1', 'function', 'load_model', tmp_path, monkeypatch)
    monkeypatch.setenv('TORCHK_UNSAFE_DESERIALIZATION', '1')
    with pytest.raises(ValueError, match=REFUSED % 'function'):
        load(safe_mode=True)
    assert not marker.exists()


@pytest.mark.parametrize('dialect', ['keras-2.3.1'] + DIALECTS)
def test_function_supplied_in_custom_objects_loads_in_safe_mode(dialect, marker, tmp_path,
                                                                 monkeypatch):
    load = _load(dialect, 'function', 'model_from_json', tmp_path, monkeypatch)
    model = load(custom_objects={'payload': lambda t: t * 3.})
    np.testing.assert_allclose(model.predict(np.ones((1, 2), 'float32')), [[3., 3.]])
    assert not marker.exists()


def test_lambda_from_config_itself_is_gated(marker, monkeypatch):
    monkeypatch.setenv('TORCHK_PAYLOAD_FILE', os.devnull)
    config = layers.Lambda(PAYLOAD, name='payload').get_config()
    monkeypatch.setenv('TORCHK_PAYLOAD_FILE', str(marker))
    with pytest.raises(ValueError, match=REFUSED % 'function'):
        layers.deserialize({'class_name': 'Lambda', 'config': dict(config)})
    layer = layers.Lambda.from_config(dict(config), safe_mode=False)
    layer(layers.Input((2,)))
    assert marker.exists()


def _with_safe_mode_off_in_the_file(config):
    """Every place a file could claim safe mode off (nothing consults them)."""
    config = copy.deepcopy(config)
    config['safe_mode'] = False
    config['config']['safe_mode'] = False
    config['config']['unsafe_deserialization'] = True
    for layer in config['config']['layers']:
        layer['safe_mode'] = False
        layer['config']['safe_mode'] = False
    return config


@pytest.mark.parametrize('dialect', ['keras-2.3.1'] + DIALECTS)
def test_nothing_in_a_file_turns_safe_mode_off(dialect, marker, tmp_path, monkeypatch):
    if dialect == 'keras-2.3.1':
        model = _keras_model('function', monkeypatch)
        monkeypatch.setenv('TORCHK_PAYLOAD_FILE', str(marker))
        config = json.loads(model.to_json())
    else:
        with open(os.path.join(PAYLOADS, dialect, 'function.json')) as f:
            config = json.load(f)
    text = json.dumps(_with_safe_mode_off_in_the_file(config))
    with pytest.raises(ValueError, match=REFUSED % 'function'):
        keras.models.model_from_json(text)
    assert not marker.exists()


def test_function_stored_by_name_never_imports_the_module_the_file_names(marker, tmp_path,
                                                                          monkeypatch):
    """tf.keras' `module` key names where the function lives: importing it would run it."""
    (tmp_path / 'payload_module.py').write_text(
        "import os, pathlib\npathlib.Path(os.environ['TORCHK_PAYLOAD_FILE']).touch()\n"
        "def double(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    inputs = {'class_name': 'InputLayer', 'name': 'x', 'inbound_nodes': [],
              'config': {'name': 'x', 'batch_input_shape': [None, 2], 'dtype': 'float32'}}
    lambda_layer = {'class_name': 'Lambda', 'name': 'payload',
                    'inbound_nodes': [[['x', 0, 0, {}]]],
                    'config': {'name': 'payload', 'function': 'double',
                               'function_type': 'function', 'module': 'payload_module',
                               'output_shape': None, 'output_shape_type': 'raw',
                               'output_shape_module': 'payload_module', 'arguments': {}}}
    config = {'class_name': 'Functional', 'config': {
        'name': 'm', 'layers': [inputs, lambda_layer], 'input_layers': [['x', 0, 0]],
        'output_layers': [['payload', 0, 0]]}}
    unknown = (r"Lambda layer 'payload' names its function 'double', which is not in "
               r"custom_objects: supply it, custom_objects=\{'double': function\}")
    with pytest.raises(ValueError, match=unknown):
        keras.models.model_from_json(json.dumps(config))
    with pytest.raises(ValueError, match=unknown):
        keras.models.model_from_json(json.dumps(config), safe_mode=False)
    assert 'payload_module' not in sys.modules
    assert not marker.exists()
    model = keras.models.model_from_json(json.dumps(config),
                                         custom_objects={'double': lambda t: t * 2.})
    np.testing.assert_allclose(model.predict(np.ones((1, 2), 'float32')), [[2., 2.]])


def test_tf_op_layer_runs_only_ops_of_its_table():
    inputs = {'class_name': 'InputLayer', 'name': 'x', 'inbound_nodes': [],
              'config': {'name': 'x', 'batch_input_shape': [None, 2], 'dtype': 'float32'}}
    op = {'class_name': 'TFOpLambda', 'name': 'tf.system',
          'inbound_nodes': [['x', 0, 0, {'name': None}]],
          'config': {'name': 'tf.system', 'function': 'os.system', 'trainable': True,
                     'dtype': 'float32'}}
    config = {'class_name': 'Functional', 'config': {
        'name': 'm', 'layers': [inputs, op], 'input_layers': [['x', 0, 0]],
        'output_layers': [['tf.system', 0, 0]]}}
    with pytest.raises(ValueError, match='tf.os.system, which torchk does not map'):
        keras.models.model_from_json(json.dumps(config), safe_mode=False)


@pytest.mark.parametrize('rebuild', [keras.models.clone_model, copy.deepcopy])
def test_rebuilding_a_model_in_memory_is_not_a_load(rebuild, marker, monkeypatch):
    model = _keras_model('function', monkeypatch)
    clone = rebuild(model)
    assert clone.layers[-1].name == 'payload'
    assert marker.exists()


def test_yaml_in_safe_mode_builds_no_python_objects(marker):
    text = ("class_name: Sequential\nconfig:\n  name: !!python/object/apply:os.getcwd []\n"
            "  layers: []\n")
    with pytest.raises(ModelFileError, match='the configuration: invalid YAML'):
        keras.models.model_from_yaml(text)


def test_safe_mode_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="safe_mode must be True, False or None, not 'no'"):
        keras.models.model_from_json('{}', safe_mode='no')
