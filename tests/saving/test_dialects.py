"""The translation rules of torchk.saving, one by one (the whole files are tested in
tests/integration/test_tf_keras_models.py)."""
import numpy as np
import pytest

import keras
from keras import backend as K

from torchk import call_spec
from torchk.saving import dialects, optimizer_state, training_config


def _layer(class_name, **config):
    config.setdefault('name', 'the_layer')
    return {'class_name': class_name, 'config': config}


def _initializer(class_name, **config):
    return {'module': 'keras.initializers', 'class_name': class_name, 'config': config,
            'registered_name': None}


@pytest.mark.parametrize('saved, expected', [
    (_layer('InputLayer', batch_input_shape=[None, 3], ragged=False, optional=False),
     _layer('InputLayer', batch_input_shape=[None, 3])),
    (_layer('InputLayer', batch_shape=[None, 3]),
     _layer('InputLayer', batch_input_shape=[None, 3])),
    (_layer('SeparableConv2D', groups=1, filters=2), _layer('SeparableConv2D', filters=2)),
    (_layer('Conv2D', groups=2, filters=2), _layer('Conv2D', groups=2, filters=2)),
    (_layer('LSTM', time_major=False, unroll=True), _layer('LSTM', unroll=True)),
    (_layer('BatchNormalization', axis=[3], fused=None, renorm=False),
     _layer('BatchNormalization', axis=3)),
    (_layer('Dense', dtype={'module': 'keras.mixed_precision', 'class_name': 'Policy',
                            'config': {'name': 'float64'}, 'registered_name': None}),
     _layer('Dense', dtype='float64')),
    (_layer('Dense', kernel_initializer=_initializer('GlorotUniform', seed=None),
            kernel_regularizer=_initializer('L2', l2=0.5), activation='relu'),
     _layer('Dense', kernel_initializer={'class_name': 'glorot_uniform', 'config': {'seed': None}},
            kernel_regularizer={'class_name': 'L1L2', 'config': {'l1': 0.0, 'l2': 0.5}},
            activation='relu')),
    (_layer('Dense', activation={'class_name': 'function', 'config': 'tanh'}),
     _layer('Dense', activation='tanh')),
    (_layer('Dense', kernel_initializer=_initializer('VarianceScaling', scale=2.0, mode='fan_in',
                                                     distribution='truncated_normal', seed=1)),
     _layer('Dense', kernel_initializer={'class_name': 'VarianceScaling', 'config': {
         'scale': 2.0, 'mode': 'fan_in', 'distribution': 'normal', 'seed': 1}})),
])
def test_layer_rule_translates(saved, expected):
    assert dialects.translate_model_config(saved) == expected


@pytest.mark.parametrize('saved, message', [
    (_layer('DepthwiseConv2D', groups=2), r"'the_layer' \(DepthwiseConv2D\).*groups=2"),
    (_layer('LSTM', time_major=True), r"'the_layer' \(LSTM\).*time_major=True"),
    (_layer('BatchNormalization', axis=[1, 2]), r"'the_layer'.*axis=\[1, 2\]"),
])
def test_layer_rule_refuses_what_keras_2_3_1_cannot_compute(saved, message):
    with pytest.raises(ValueError, match=message):
        dialects.translate_model_config(saved)


@pytest.mark.parametrize('policy', ['mixed_float16', 'mixed_bfloat16'])
def test_mixed_policy_drops_the_dtype_with_one_warning_per_model(policy):
    """The layers follow the global policy (float32 until mixed precision is turned on); a
    layer saved with an explicit float32 policy keeps it."""
    mixed = {'class_name': 'Policy', 'config': {'name': policy}}
    saved = _functional([
        dict(_layer('InputLayer', batch_input_shape=[None, 2], name='x'), name='x',
             inbound_nodes=[]),
        dict(_layer('Dense', name='a', units=2, dtype=mixed), name='a',
             inbound_nodes=[[['x', 0, 0, {}]]]),
        dict(_layer('Dense', name='b', units=2, dtype=mixed), name='b',
             inbound_nodes=[[['a', 0, 0, {}]]]),
        dict(_layer('Activation', name='c', activation='softmax',
                    dtype={'class_name': 'Policy', 'config': {'name': 'float32'}}), name='c',
             inbound_nodes=[[['b', 0, 0, {}]]]),
    ], [['x', 0, 0]], [['c', 0, 0]])
    with pytest.warns(UserWarning, match=r'^2 layers of the model \(a, b\) were saved with the '
                      + policy) as caught:
        translated = dialects.translate_model_config(saved)
    assert len(caught) == 1
    layers = translated['config']['layers']
    assert 'dtype' not in layers[1]['config'] and 'dtype' not in layers[2]['config']
    assert layers[3]['config']['dtype'] == 'float32'


def _functional(layers, inputs, outputs):
    return {'class_name': 'Functional', 'config': {
        'name': 'model', 'layers': layers, 'input_layers': inputs, 'output_layers': outputs}}


def test_functional_model_nodes_and_tensor_keywords():
    """`Functional` is Keras 2.3.1's `Model`; a bare input triple becomes a list; a tensor
    passed by keyword (`value`) moves into the node's input list."""
    saved = _functional([
        dict(_layer('InputLayer', batch_input_shape=[None, 4, 2], name='x'), name='x',
             inbound_nodes=[]),
        dict(_layer('MultiHeadAttention', name='mha', num_heads=1, key_dim=2), name='mha',
             inbound_nodes=[[['x', 0, 0, {'value': ['x', 0, 0], 'attention_mask': None}]]]),
    ], ['x', 0, 0], ['mha', 0, 0])
    translated = dialects.translate_model_config(saved)
    assert translated['class_name'] == 'Model'
    assert translated['config']['input_layers'] == [['x', 0, 0]]
    assert translated['config']['layers'][1]['inbound_nodes'] == [
        [['x', 0, 0, {}], ['x', 0, 0, {}]]]


def test_keras_3_node_form():
    saved = _functional([
        dict(_layer('InputLayer', batch_shape=[None, 2], name='x'), name='x', inbound_nodes=[]),
        dict(_layer('Dense', name='d', units=1), name='d', inbound_nodes=[{
            'args': [{'class_name': '__keras_tensor__',
                      'config': {'shape': [None, 2], 'keras_history': ['x', 0, 0]}}],
            'kwargs': {}}]),
    ], [['x', 0, 0]], [['d', 0, 0]])
    translated = dialects.translate_model_config(saved)
    assert translated['config']['layers'][1]['inbound_nodes'] == [[['x', 0, 0, {}]]]


def _keyword_node(value):
    return _functional([
        dict(_layer('InputLayer', batch_input_shape=[None, 2], name='x'), name='x',
             inbound_nodes=[]),
        dict(_layer('Dense', name='d', units=1), name='d',
             inbound_nodes=[[['x', 0, 0, {'other': value, 'scale': 2.}]]]),
    ], [['x', 0, 0]], [['d', 0, 0]])


def test_tensor_keyword_becomes_node_inputs_with_a_call_spec():
    """tf.keras' tensors by keyword (`layer(x, other=y)`) become the node's input tensors,
    `CALL_SPEC` saying which argument each is (torchk.keras' record of such calls)."""
    import torchk.keras  # noqa: F401  (installs the call conventions that read them)
    translated = dialects.translate_model_config(_keyword_node([['x', 0, 0], None]))
    spec = {'inputs': 0, 'keywords': {'other': [1, None]}}
    assert translated['config']['layers'][1]['inbound_nodes'] == [[
        ['x', 0, 0, {}], ['x', 0, 0, {'scale': 2., call_spec.CALL_SPEC: spec}]]]
    assert call_spec.tf_keras_node(translated['config']['layers'][1]['inbound_nodes'][0]) == [
        ['x', 0, 0, {'scale': 2., 'other': [['x', 0, 0], None]}]]


def test_tensor_keyword_mixed_with_constants_is_refused():
    import torchk.keras  # noqa: F401
    with pytest.raises(ValueError, match=r"'d' \(Dense\).*mixes tensors and constants"):
        dialects.translate_model_config(_keyword_node([['x', 0, 0], 3]))


def _optimizer(class_name, **config):
    base = {'name': class_name, 'weight_decay': None, 'clipnorm': None, 'global_clipnorm': None,
            'clipvalue': None, 'use_ema': False, 'ema_momentum': 0.99,
            'ema_overwrite_frequency': None, 'jit_compile': True, 'is_legacy_optimizer': False,
            'learning_rate': 0.01}
    base.update(config)
    return {'class_name': 'Custom>' + class_name, 'config': base}


def test_v2_optimizer_becomes_keras_optimizer_with_same_hyper_parameters():
    translated = training_config.translate_optimizer_config(
        _optimizer('Adam', beta_1=0.8, beta_2=0.99, epsilon=1e-6, amsgrad=True, clipnorm=1.0))
    assert translated == {'class_name': 'Adam', 'config': {
        'learning_rate': 0.01, 'beta_1': 0.8, 'beta_2': 0.99, 'epsilon': 1e-6, 'amsgrad': True,
        'clipnorm': 1.0}}
    optimizer = keras.optimizers.deserialize(translated)
    assert K.get_value(optimizer.beta_1) == np.float32(0.8)


FACADE = 'with torchk.keras.models.load_model'


@pytest.mark.parametrize('config, message, names_the_facade', [
    (_optimizer('Adam', weight_decay=0.004), 'weight_decay=0.004', True),
    (_optimizer('Adam', use_ema=True), 'use_ema=True', False),
    (_optimizer('SGD', global_clipnorm=1.0), 'global_clipnorm=1.0', True),
    (_optimizer('RMSprop', centered=True), 'centered=True', True),
    (_optimizer('RMSprop', momentum=0.9), 'momentum=0.9', True),
    (_optimizer('Adam', learning_rate={'class_name': 'ExponentialDecay', 'config': {}}),
     'ExponentialDecay', True),
    (_optimizer('Ftrl'), 'Ftrl has no Keras 2.3.1 equivalent', False),
    (_optimizer('AdamW'), 'AdamW has no Keras 2.3.1 equivalent', True),
])
def test_optimizer_setting_that_changes_training_is_refused(config, message, names_the_facade):
    """Refused, naming the setting, and torchk.keras' loader where its optimizers compute it."""
    with pytest.raises(ValueError, match=message) as refusal:
        training_config.translate_optimizer_config(config)
    assert (FACADE in str(refusal.value)) == names_the_facade


@pytest.mark.parametrize('class_name', ['RMSprop', 'Adagrad'])
def test_epsilon_placement_of_rmsprop_and_adagrad_is_announced(class_name):
    with pytest.warns(UserWarning, match='sqrt'):
        training_config.translate_optimizer_config(_optimizer(class_name, epsilon=1e-7))


def _compiled_adam_model():
    inputs = keras.layers.Input((3,))
    outputs = keras.layers.Dense(1, name='out')(keras.layers.Dense(2, name='hidden')(inputs))
    model = keras.models.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(), 'mse')
    model._make_train_function()
    return model


@pytest.mark.parametrize('layout', ['legacy', 'v2'])
def test_adam_state_maps_from_tf_keras_slot_names(layout):
    """Legacy tf.keras optimizers save [iter, hyper-parameters, m..., v...] named
    `Adam/<weight>/m`; v2 ones [iteration, m, v, m, v, ...] named `Adam/m/<weight>`.
    Either way Keras gets [iterations, m..., v..., vhat...] in its weights' order."""
    model = _compiled_adam_model()
    weights = [w.name.split(':')[0] for w in model._collected_trainable_weights]
    m = {w: np.full(K.int_shape(v), i + 1.0) for i, (w, v) in
         enumerate(zip(weights, model._collected_trainable_weights))}
    v = {w: value * 10 for w, value in m.items()}
    if layout == 'legacy':
        names = ['Adam/iter:0', 'Adam/beta_1:0'] + ['Adam/%s/m:0' % w for w in weights[::-1]]
        names += ['Adam/%s/v:0' % w for w in weights[::-1]]
        values = [np.array(7), np.array(0.9)] + [m[w] for w in weights[::-1]]
        values += [v[w] for w in weights[::-1]]
    else:
        names, values = ['iteration:0'], [np.array(7)]
        for w in weights:
            names += ['Adam/m/%s:0' % w, 'Adam/v/%s:0' % w]
            values += [m[w], v[w]]
    state = optimizer_state.optimizer_state(model.optimizer, names, values,
                                        model._collected_trainable_weights)
    model.optimizer.set_weights(state)
    restored = K.batch_get_value(model.optimizer.weights)
    assert restored[0] == 7
    count = len(weights)
    for i, w in enumerate(weights):
        np.testing.assert_array_equal(restored[1 + i], m[w])
        np.testing.assert_array_equal(restored[1 + count + i], v[w])


def test_unknown_slot_is_reported_not_guessed():
    model = _compiled_adam_model()
    state = optimizer_state.optimizer_state(model.optimizer, ['iteration:0', 'Adam/zeta/out/bias:0'],
                                        [np.array(3), np.zeros(1)],
                                        model._collected_trainable_weights)
    assert isinstance(state, str) and 'zeta' in state


def test_torchk_layer_taking_the_key_gets_it_as_saved(monkeypatch):
    """A rule translates for Keras 2.3.1's class; a torchk.layers class registered under the
    same name that takes the key receives it unchanged."""
    class Conv2D(keras.layers.Conv2D):
        def __init__(self, filters, kernel_size, groups=1, **kwargs):
            super(Conv2D, self).__init__(filters, kernel_size, **kwargs)
    Conv2D.__module__ = 'torchk.layers.convolutional'
    monkeypatch.setattr(keras.layers, 'Conv2D', Conv2D)
    saved = _layer('Conv2D', filters=4, kernel_size=3, groups=2)
    assert dialects.translate_model_config(saved) == saved


def test_layer_called_on_a_constant_is_refused():
    saved = _functional([
        dict(_layer('InputLayer', batch_input_shape=[None, 2], name='x'), name='x',
             inbound_nodes=[]),
        dict(_layer('Add', name='add'), name='add',
             inbound_nodes=[[['x', 0, 0, {}], ['_CONSTANT_VALUE', -1, [1.0, 2.0], {}]]]),
    ], [['x', 0, 0]], [['add', 0, 0]])
    with pytest.raises(ValueError, match=r"'add' \(Add\) was called on a constant"):
        dialects.translate_model_config(saved)


@pytest.mark.parametrize('wrapper', ['LossScaleOptimizer', 'LossScaleOptimizerV3'])
def test_loss_scale_optimizer_is_its_inner_optimizer(wrapper):
    inner = _optimizer('SGD', learning_rate=0.1, momentum=0.5, nesterov=False)
    saved = {'class_name': wrapper, 'config': {'inner_optimizer': inner, 'dynamic': True,
                                               'initial_scale': 32768.0,
                                               'dynamic_growth_steps': 2000}}
    assert training_config.translate_optimizer_config(saved) == {
        'class_name': 'SGD', 'config': {'learning_rate': 0.1, 'momentum': 0.5,
                                        'nesterov': False}}


def test_compile_config_of_a_keras_zip_is_a_training_config():
    compile_config = {'optimizer': 'adam', 'loss': 'mse', 'metrics': ['mae'],
                      'loss_weights': None, 'weighted_metrics': None, 'run_eagerly': None,
                      'steps_per_execution': None, 'jit_compile': None}
    saved = training_config.training_config_from_compile_config(compile_config)
    assert saved == {'optimizer_config': {'class_name': 'adam', 'config': {}},
                     'loss': 'mse', 'metrics': ['mae'], 'weighted_metrics': None,
                     'loss_weights': None}
    assert training_config.translate_optimizer_config(saved['optimizer_config']) == {
        'class_name': 'Adam', 'config': {}}
