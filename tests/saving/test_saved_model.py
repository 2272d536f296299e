"""SavedModel directories written by tf.keras 2.15 and tf_keras 2.21 load without TensorFlow
(torchk.saving.saved_model), predict as TensorFlow did, and train on from the saved optimizer
state; the models saved under mixed_float16 / mixed_bfloat16 compute in float32 with a warning,
or in their policy when it is turned on; damaged directories raise ModelFileError naming the
file and the fault."""
import json
import os
import shutil
import warnings

import pytest

import keras
from keras import backend as K

from torchk import mixed_precision
from torchk.saving import protos, saved_model
from torchk.saving.errors import ModelFileError

from torchk.saving.tensor_bundle import read_table

from .saved_model_files import (DIALECTS, MODELS, arrays, max_relative_difference, table,
                                unpack)
from .test_keras_zip import MIXED


def _load(path, compile):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = saved_model.load(path, compile=compile)
    assert not [w for w in caught if 'fresh optimizer' in str(w.message)]
    return model


@pytest.mark.parametrize('compile', [False, True])
@pytest.mark.parametrize('name', MODELS)
@pytest.mark.parametrize('dialect', DIALECTS)
def test_loads_and_predicts_as_tensorflow(dialect, name, compile, tmp_path):
    model = _load(unpack(dialect, name, tmp_path), compile)
    inputs, _, predictions, _ = arrays(dialect, name)
    assert max_relative_difference(model.predict(inputs), predictions) < 1e-5
    assert (model.optimizer is not None) == compile


@pytest.mark.parametrize('name', MODELS)
@pytest.mark.parametrize('dialect', DIALECTS)
def test_trains_one_step_from_the_saved_state(dialect, name, tmp_path):
    """One `train_on_batch` from the restored weights and optimizer slots gives TensorFlow's
    next predictions, to 1e-3 of their scale and a tenth of what the step moved them (Keras
    2.3.1's batch normalization corrects the moving variance by n / (n - 1 - epsilon))."""
    model = _load(unpack(dialect, name, tmp_path), compile=True)
    inputs, targets, predictions, steps = arrays(dialect, name)
    model.train_on_batch(inputs, targets)
    moved = max_relative_difference(predictions, steps)
    assert max_relative_difference(model.predict(inputs), steps) < min(1e-3, moved / 10)


def test_keras_load_model_reads_the_directory(tmp_path):
    path = unpack(DIALECTS[-1], 'mlp', tmp_path)
    model = keras.models.load_model(path)
    inputs, _, predictions, _ = arrays(DIALECTS[-1], 'mlp')
    assert max_relative_difference(model.predict(inputs), predictions) < 1e-5
    assert type(model.optimizer).__name__ == 'Adam'


@pytest.fixture
def mlp_dir(tmp_path):
    return unpack(DIALECTS[-1], 'mlp', tmp_path)


def _rewrite_metadata(path, edit):
    """Applies `edit(root metadata dict)` to the root node of keras_metadata.pb."""
    metadata_path = os.path.join(path, 'keras_metadata.pb')
    metadata = protos.SavedMetadata()
    with open(metadata_path, 'rb') as f:
        metadata.ParseFromString(f.read())
    root = next(node for node in metadata.nodes if node.node_id == 0)
    value = json.loads(root.metadata)
    edit(value)
    root.metadata = json.dumps(value)
    with open(metadata_path, 'wb') as f:
        f.write(metadata.SerializeToString())


def _widen_hidden_layer(root):
    layers = root['model_config']['config']['layers']
    next(layer for layer in layers if layer['config']['name'] == 'hidden')['config']['units'] = 9


def _rename_output_layer(root):
    layers = root['model_config']['config']['layers']
    next(layer for layer in layers
         if layer['config']['name'] == 'probabilities')['config']['name'] = 'renamed'


def _subclassed(root):
    del root['model_config']


@pytest.mark.parametrize('edit, message', [
    (_widen_hidden_layer, r"layer 'hidden': its weight 0 has the shape \(6, 9\) but the "
                          r"checkpoint's \(hidden/kernel\) is \(6, 8\)"),
    (_rename_output_layer, r"the model's layer 'renamed' has weights but the checkpoint has "
                           r"no layer of that name"),
], ids=['shapes_disagree', 'layer_missing'])
def test_weights_that_disagree_with_the_architecture_name_the_layer(edit, message, mlp_dir):
    _rewrite_metadata(mlp_dir, edit)
    with pytest.raises(ModelFileError, match=message):
        saved_model.load(mlp_dir)


def _truncate(path, keep):
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:keep])


@pytest.mark.parametrize('damage, file, message', [
    (lambda d: os.remove(os.path.join(d, 'saved_model.pb')), '',
     'not a SavedModel directory'),
    (lambda d: _truncate(os.path.join(d, 'keras_metadata.pb'), 1000), 'keras_metadata.pb',
     'not a valid SavedMetadata'),
    (lambda d: shutil.rmtree(os.path.join(d, 'variables')), 'variables/variables.index',
     'the checkpoint index is missing'),
    (lambda d: _truncate(os.path.join(d, 'variables', 'variables.data-00000-of-00001'), 100),
     'variables/variables.data-00000-of-00001', 'runs past the end of the shard'),
    (lambda d: _rewrite_metadata(d, lambda root: root.update(model_config='{')),
     'keras_metadata.pb', 'the model configuration is not a Keras configuration'),
    (lambda d: _rewrite_metadata(d, _subclassed), 'keras_metadata.pb',
     'no Keras model configuration'),
], ids=['no_saved_model_pb', 'truncated_metadata', 'no_variables', 'truncated_shard',
        'config_not_a_dict', 'subclassed_model'])
def test_damaged_directory_names_the_file(damage, file, message, mlp_dir):
    damage(mlp_dir)
    with pytest.raises(ModelFileError, match=message) as error:
        saved_model.load(mlp_dir)
    assert error.value.path == os.path.join(mlp_dir, file).rstrip(os.sep)


def test_metadata_read_from_the_object_graph_when_keras_metadata_pb_is_absent(mlp_dir):
    """TensorFlow < 2.5 kept the Keras metadata in saved_model.pb's object graph; a damaged
    saved_model.pb is then named."""
    os.remove(os.path.join(mlp_dir, 'keras_metadata.pb'))
    with pytest.raises(ModelFileError, match='no Keras model configuration'):
        saved_model.load(mlp_dir)
    _truncate(os.path.join(mlp_dir, 'saved_model.pb'), 5000)
    with pytest.raises(ModelFileError, match=r'saved_model.pb: not a valid SavedModel'):
        saved_model.load(mlp_dir)


def test_huge_declared_shape_is_refused_before_reading(mlp_dir):
    """The index entry of a kernel, rewritten (checksums valid) to declare 2**93 floats."""
    index = os.path.join(mlp_dir, 'variables', 'variables.index')
    pairs = []
    for key, value in read_table(index):
        if key == b'layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE':
            entry = protos.BundleEntryProto()
            entry.ParseFromString(value)
            for dim in entry.shape.dim:
                dim.size = 1 << 31
            entry.shape.dim.add().size = 1 << 31
            value = entry.SerializeToString()
        pairs.append((key, value))
    with open(index, 'wb') as f:
        f.write(table(pairs))
    with pytest.raises(ModelFileError, match=r"'layer_with_weights-0/kernel/.ATTRIBUTES/"
                                             r"VARIABLE_VALUE' of shape \[2147483648, 2147483648, "
                                             r"2147483648\] .* is declared as 192") as error:
        saved_model.load(mlp_dir)
    assert error.value.path == index


# The mixed precision models (tests/fixtures/make_tf_keras_zips.py's, saved as directories):
# each fixture's policy. Under mixed_float16 tf.keras wraps the optimizer in a
# LossScaleOptimizer: TF 2.11+'s over SGD, and TF 2.4-2.10's over the legacy SGD with momentum.
MIXED_MODELS = {'mixed_float16': 'mixed_float16', 'mixed_bfloat16': 'mixed_bfloat16',
                'mixed_float16_legacy_optimizer': 'mixed_float16'}


def _assert_restored_and_trains(model, dialect, name):
    """The saved optimizer state (one step taken) is restored, and one more step gives
    TensorFlow's next predictions within the policy's precision."""
    inputs, targets, _, steps = arrays(dialect, name)
    assert keras.backend.get_value(model.optimizer.iterations) == 1
    model.train_on_batch(inputs, targets)
    assert max_relative_difference(model.predict(inputs), steps) < MIXED[MIXED_MODELS[name]]


@pytest.mark.parametrize('compile', [False, True])
@pytest.mark.parametrize('name', list(MIXED_MODELS))
@pytest.mark.parametrize('dialect', DIALECTS)
def test_mixed_precision_directory_loads_in_float32_with_one_warning(dialect, name, compile,
                                                                     tmp_path):
    policy = MIXED_MODELS[name]
    path = unpack(dialect, name, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = keras.models.load_model(path, compile=compile)
    messages = [str(w.message) for w in caught]
    assert len([m for m in messages if 'dtype policy' in m]) == 1
    assert [m for m in messages if '%s dtype policy: the model computes in float32' % policy
            in m]
    assert not [m for m in messages if 'optimizer state was not restored' in m]
    assert all(K.dtype(layer.output) == 'float32' for layer in model.layers)
    inputs, _, predictions, _ = arrays(dialect, name)
    assert max_relative_difference(model.predict(inputs), predictions) < MIXED[policy]
    if compile:
        assert type(model.optimizer).__name__ == 'SGD'
        _assert_restored_and_trains(model, dialect, name)


@pytest.mark.parametrize('compile', [False, True])
@pytest.mark.parametrize('name', list(MIXED_MODELS))
@pytest.mark.parametrize('dialect', DIALECTS)
def test_mixed_precision_directory_honours_the_global_policy(dialect, name, compile, tmp_path):
    """With the policy turned on before loading, the hidden layers compute in its half type
    and the output layer (saved with a float32 policy) in float32; under mixed_float16 the
    LossScaleOptimizer takes the saved count of finite steps."""
    policy = MIXED_MODELS[name]
    path = unpack(dialect, name, tmp_path)
    mixed_precision.set_global_policy(policy)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            model = keras.models.load_model(path, compile=compile)
        assert not [w for w in caught if 'dtype policy' in str(w.message)
                    or 'optimizer state was not restored' in str(w.message)]
        hidden, output = model.layers[1:3], model.layers[-1]
        compute_dtype = mixed_precision.Policy(policy).compute_dtype
        assert [K.dtype(layer.output) for layer in hidden] == [compute_dtype] * 2
        assert K.dtype(output.output) == 'float32'
        inputs, _, predictions, _ = arrays(dialect, name)
        assert max_relative_difference(model.predict(inputs), predictions) < MIXED[policy]
        if compile:
            if policy == 'mixed_float16':
                assert isinstance(model.optimizer, mixed_precision.LossScaleOptimizer)
                assert K.get_value(model.optimizer.dynamic_counter) == 1
            _assert_restored_and_trains(model, dialect, name)
    finally:
        mixed_precision.set_global_policy('float32')
