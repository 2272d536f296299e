"""torchk.layers.tf_ops: tf.keras' op layers as Keras 2.3.1 reads them. The numbers against
TF are in test_tf_keras_models.py; here the node format and the errors."""
import json
import os

import h5py
import numpy as np
import pytest

import keras

from tf_keras_fixtures import OPS_DIR
from torchk.layers import TFOpLambda, tf_ops
from torchk.saving import op_layer_nodes

TENSOR_0 = {'class_name': '__tensor__', 'index': 0}
TENSOR_1 = {'class_name': '__tensor__', 'index': 1}


@pytest.mark.parametrize('tf_keras_node, keras2_node', [
    # x * 2: one tensor, a constant keyword argument.
    (['x', 0, 0, {'y': 2, 'name': None}],
     [['x', 0, 0, {'call_structure': {'args': TENSOR_0, 'kwargs': {'y': 2, 'name': None}}}]]),
    # x + y: a tensor among the keyword arguments.
    (['x', 0, 0, {'y': ['y', 1, 0], 'name': None}],
     [['x', 0, 0, {'call_structure': {'args': TENSOR_0,
                                      'kwargs': {'y': TENSOR_1, 'name': None}}}],
      ['y', 1, 0, {'call_structure': {'args': TENSOR_0,
                                      'kwargs': {'y': TENSOR_1, 'name': None}}}]]),
    # 1.0 - x: the first argument is a constant.
    (['_CONSTANT_VALUE', -1, 1.0, {'y': ['x', 0, 0], 'name': None}],
     [['x', 0, 0, {'call_structure': {'args': 1.0,
                                      'kwargs': {'y': TENSOR_0, 'name': None}}}]]),
    # tf.concat([a, b], axis=-1): the first argument is a list of tensors.
    ([['a', 0, 0, {'axis': -1}], ['b', 0, 1, {'axis': -1}]],
     [['a', 0, 0, {'call_structure': {'args': [TENSOR_0, TENSOR_1], 'kwargs': {'axis': -1}}}],
      ['b', 0, 1, {'call_structure': {'args': [TENSOR_0, TENSOR_1], 'kwargs': {'axis': -1}}}]]),
    # x[:, 0]: slices stay as tf.keras saves them.
    (['x', 0, 0, {'slice_spec': [{'start': None, 'stop': None, 'step': None}, 0]}],
     [['x', 0, 0, {'call_structure': {'args': TENSOR_0, 'kwargs': {
         'slice_spec': [{'start': None, 'stop': None, 'step': None}, 0]}}}]]),
], ids=['constant', 'tensor_keyword', 'constant_first', 'tensor_list', 'slice'])
def test_tf_keras_node_becomes_keras2_node(tf_keras_node, keras2_node):
    assert op_layer_nodes.keras2_node(tf_keras_node) == keras2_node
    assert op_layer_nodes.keras2_node(keras2_node) == keras2_node


def test_unknown_op_names_layer_and_op():
    with pytest.raises(ValueError, match=r"'tf\.linalg\.expm'.*tf\.linalg\.expm"):
        TFOpLambda(function='linalg.expm', name='tf.linalg.expm')


def test_unknown_op_in_a_model_config_names_layer_and_op():
    config = {'name': 'model', 'layers': [
        {'class_name': 'InputLayer', 'name': 'x', 'inbound_nodes': [],
         'config': {'batch_input_shape': [None, 3], 'dtype': 'float32', 'name': 'x'}},
        {'class_name': 'TFOpLambda', 'name': 'tf.math.bessel_i0',
         'config': {'name': 'tf.math.bessel_i0', 'trainable': True, 'dtype': 'float32',
                    'function': 'math.bessel_i0'},
         'inbound_nodes': [['x', 0, 0, {}]]}],
        'input_layers': [['x', 0, 0]], 'output_layers': [['tf.math.bessel_i0', 0, 0]]}
    with pytest.raises(ValueError, match=r"'tf\.math\.bessel_i0'.*tf\.math\.bessel_i0"):
        keras.models.Model.from_config(config)


def test_wrong_op_argument_names_layer():
    layer = TFOpLambda(function='reshape', name='tf.reshape')
    with pytest.raises(TypeError, match=r"'tf\.reshape'.*tf\.reshape.*\['shap'\]"):
        layer(keras.Input((4,)), call_structure={'args': TENSOR_0, 'kwargs': {'shap': [2, 2]}})


def test_loaded_op_model_applies_to_new_inputs():
    """Keras 2.3.1 replays the op layers' nodes on new tensors (a model used as a layer)."""
    path = os.path.join(OPS_DIR, 'elementwise_ops')
    with h5py.File(path + '.h5', 'r') as f:
        config = json.loads(f.attrs['model_config'])
        groups = f['model_weights']
        weights = [np.asarray(groups['dense'][name])
                   for name in groups['dense'].attrs['weight_names']]
    inner = keras.models.model_from_config(config)
    inner.get_layer('dense').set_weights(weights)
    inputs = [keras.Input((4, 6)), keras.Input((4, 6))]
    outer = keras.Model(inputs, inner(inputs))
    arrays = np.load(path + '.npz')
    predictions = outer.predict([arrays['input_0'], arrays['input_1']])
    for i, prediction in enumerate(predictions):
        expected = arrays['output_%d' % i]
        np.testing.assert_allclose(prediction, expected, rtol=0,
                                   atol=1e-5 * max(1., np.abs(expected).max()))
