"""SavedModel directories written by tf.keras 2.15 and tf_keras 2.21 load without TensorFlow
(torchk.saving.saved_model), predict as TensorFlow did, and train on from the saved optimizer
state; damaged directories raise ModelFileError naming the file and the fault."""
import json
import os
import shutil
import warnings

import pytest

import keras

from torchk.saving import protos, saved_model
from torchk.saving.errors import ModelFileError

from torchk.saving.tensor_bundle import read_table

from .saved_model_files import (DIALECTS, MODELS, arrays, max_relative_difference, table,
                                unpack)


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
