"""Today's changes to Keras 2.3.1, frozen: every attribute torchk replaces in a Keras module or
class, with the chain of wrappers it installs there (outermost first, down to Keras' own
function), with the backend alone and with the tf.keras facade imported.

The inventory is observed, not declared (`tests/override_chains.py`, in a fresh process): a
change to what torchk patches, to the order of two wrappers of one attribute, or a wrapper
moved to another module, shows here as a difference to the tables below. Each name is
`file:qualified name` of the code that the attribute runs; `<keras ...>` is Keras' original,
`(replaces ...)` a replacement that does not call it, `(added)` a new attribute.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IN_POLICY_CALL = 'torchk/mixed_precision.py:in_policy.<locals>.call_in_policy'


def _observed(scenario):
    environment = dict(os.environ, PYTHONPATH=ROOT, KERAS_BACKEND='torchk.core')
    environment.pop('TORCHK_KERAS_COMPAT', None)
    run = subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'override_chains.py'),
                          scenario], capture_output=True, text=True, env=environment,
                         cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    return ({target: tuple(names) for target, names in found['keras'].items()},
            {target: (name,) for target, name in found['torchk'].items()})


def _expected(scenario):
    keras = dict(BACKEND)
    keras.update((target, (IN_POLICY_CALL, '<keras %s>' % original))
                 for target, original in IN_POLICY.items())
    torchk = dict(TORCHK_BACKEND)
    if scenario == 'facade':
        keras.update(FACADE)
        torchk.update(TORCHK_FACADE)
    return keras, torchk


@pytest.mark.parametrize('scenario', ['backend', 'facade'])
def test_the_chains_of_wrappers_are_todays(scenario):
    keras, torchk = _observed(scenario)
    expected_keras, expected_torchk = _expected(scenario)
    assert sorted(set(keras) - set(expected_keras)) == []
    assert sorted(set(expected_keras) - set(keras)) == []
    assert {t: c for t, c in keras.items() if c != expected_keras[t]} == {}
    assert torchk == expected_torchk


# With the backend alone (`import keras`): each changed attribute, its chain outermost first.
BACKEND = {
    'keras.activations.gelu': ('torchk/activations.py:gelu', '(added)'),
    'keras.activations.mish': ('torchk/activations.py:mish', '(added)'),
    'keras.activations.silu': ('torchk/activations.py:silu', '(added)'),
    'keras.activations.swish': ('torchk/activations.py:swish', '(added)'),
    'keras.backend.clear_session': ('torchk/function.py:clear_session', '(added)'),
    'keras.backend.get_session': ('torchk/function.py:get_session', '(added)'),
    'keras.backend.manual_variable_initialization': (
        'torchk/function.py:manual_variable_initialization',
        '(added)',
    ),
    'keras.backend.set_session': ('torchk/function.py:set_session', '(added)'),
    'keras.callbacks.TensorBoard': (
        'torchk.callbacks.TensorBoard',
        '(replaces keras.callbacks.tensorboard_v1.TensorBoard)',
    ),
    'keras.callbacks.callbacks.CallbackList._call_batch_hook': (
        'torchk/keras_compat/loops.py:call_batch_hook',
        '(replaces keras/callbacks/callbacks.py:CallbackList._call_batch_hook)',
    ),
    'keras.callbacks.callbacks.CallbackList.on_predict_begin': (
        'torchk/keras_compat/semantics.py:with_logs_dict.<locals>.with_logs_dict',
        '<keras keras/callbacks/callbacks.py:CallbackList.on_predict_begin>',
    ),
    'keras.callbacks.callbacks.CallbackList.on_predict_end': (
        'torchk/keras_compat/semantics.py:with_logs_dict.<locals>.with_logs_dict',
        '<keras keras/callbacks/callbacks.py:CallbackList.on_predict_end>',
    ),
    'keras.callbacks.callbacks.CallbackList.on_test_begin': (
        'torchk/keras_compat/semantics.py:with_logs_dict.<locals>.with_logs_dict',
        '<keras keras/callbacks/callbacks.py:CallbackList.on_test_begin>',
    ),
    'keras.callbacks.callbacks.CallbackList.on_test_end': (
        'torchk/keras_compat/semantics.py:with_logs_dict.<locals>.with_logs_dict',
        '<keras keras/callbacks/callbacks.py:CallbackList.on_test_end>',
    ),
    'keras.callbacks.callbacks.CallbackList.on_train_begin': (
        'torchk/keras_compat/semantics.py:with_logs_dict.<locals>.with_logs_dict',
        '<keras keras/callbacks/callbacks.py:CallbackList.on_train_begin>',
    ),
    'keras.callbacks.callbacks.CallbackList.on_train_end': (
        'torchk/keras_compat/semantics.py:with_logs_dict.<locals>.with_logs_dict',
        '<keras keras/callbacks/callbacks.py:CallbackList.on_train_end>',
    ),
    'keras.engine.base_layer.Layer.__init__': (
        'torchk/mixed_precision.py:layer_init_with_policy.<locals>.__init__',
        '<keras keras/engine/base_layer.py:Layer.__init__>',
    ),
    'keras.engine.base_layer.Layer.__init_subclass__': (
        'classmethod torchk/overrides.py:_wrap_subclasses.<locals>.__init_subclass__',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.add_weight': (
        'torchk/saving/validation.py:charging_weights.<locals>.add_weight',
        '<keras keras/engine/base_layer.py:Layer.add_weight>',
    ),
    'keras.engine.base_layer.Layer.get_config': (
        'torchk/mixed_precision.py:layer_config_with_policy.<locals>.get_config',
        '<keras keras/engine/base_layer.py:Layer.get_config>',
    ),
    'keras.engine.base_layer.print': (
        'torchk/keras_compat/fixes.py:print_without_tracking',
        '(added)',
    ),
    'keras.engine.network.Network.from_config': (
        'classmethod torchk/saving/op_layer_nodes.py:rewriting_op_layer_nodes.<locals>.from_config',  # noqa: E501
        'torchk/saving/formats.py:_model_from_config.<locals>.from_config',
        '<keras classmethod keras/engine/network.py:Network.from_config>',
    ),
    'keras.engine.network.Network.load_weights': (
        'torchk/saving/keras_zip.py:reading_vars_layout.<locals>.wrapper',
        '<keras keras/engine/saving.py:allow_read_from_gcs.<locals>.load_wrapper>',
    ),
    'keras.engine.network.Network.save_weights': (
        'torchk/saving/atomic_files.py:_saving_atomically.<locals>.save_atomically',
        '<keras keras/engine/saving.py:allow_write_to_gcs.<locals>.save_wrapper>',
    ),
    'keras.engine.saving._deserialize_model': (
        'torchk/saving/h5.py:compiling_from_translation.<locals>.wrapper',
        'torchk/keras_compat/environment.py:_reading_through.<locals>.wrapper',
        '<keras keras/engine/saving.py:_deserialize_model>',
    ),
    'keras.engine.saving._serialize_model': (
        'torchk/saving/h5.py:inlining_layer_state.<locals>.wrapper',
        '<keras keras/engine/saving.py:_serialize_model>',
    ),
    'keras.engine.saving.load_attributes_from_hdf5_group': (
        'torchk/keras_compat/environment.py:_reading_through.<locals>.wrapper',
        '<keras keras/engine/saving.py:load_attributes_from_hdf5_group>',
    ),
    'keras.engine.saving.load_model': (
        'torchk/saving/formats.py:load_model',
        '(replaces keras/engine/saving.py:allow_read_from_gcs.<locals>.load_wrapper)',
    ),
    'keras.engine.saving.load_weights_from_hdf5_group': (
        'torchk/keras_compat/environment.py:_reading_through.<locals>.wrapper',
        '<keras keras/engine/saving.py:load_weights_from_hdf5_group>',
    ),
    'keras.engine.saving.load_weights_from_hdf5_group_by_name': (
        'torchk/keras_compat/environment.py:_reading_through.<locals>.wrapper',
        '<keras keras/engine/saving.py:load_weights_from_hdf5_group_by_name>',
    ),
    'keras.engine.saving.model_from_config': (
        'torchk/saving/formats.py:_loading_configuration.<locals>.wrapper',
        'torchk/saving/h5.py:translating_model_from_config.<locals>.wrapper',
        '<keras keras/engine/saving.py:model_from_config>',
    ),
    'keras.engine.saving.model_from_json': (
        'torchk/saving/formats.py:_loading_configuration.<locals>.wrapper',
        'torchk/saving/h5.py:_translating_model_from_text.<locals>.wrapper',
        '<keras keras/engine/saving.py:model_from_json>',
    ),
    'keras.engine.saving.model_from_yaml': (
        'torchk/saving/formats.py:_loading_configuration.<locals>.wrapper',
        'torchk/saving/h5.py:_translating_model_from_text.<locals>.wrapper',
        '<keras keras/engine/saving.py:model_from_yaml>',
    ),
    'keras.engine.saving.save_model': (
        'torchk/saving/keras_zip_writer.py:saving_keras_zips.<locals>.save_keras_zip_or_other',
        'torchk/saving/atomic_files.py:_saving_atomically.<locals>.save_atomically',
        '<keras keras/engine/saving.py:allow_write_to_gcs.<locals>.save_wrapper>',
    ),
    'keras.engine.saving.save_to_binary_h5py': (
        'torchk/keras_compat/environment.py:save_to_binary_h5py',
        '(replaces keras/utils/io_utils.py:save_to_binary_h5py)',
    ),
    'keras.engine.saving.unpickle_model': (
        'torchk/saving/formats.py:trusting.<locals>.wrapper',
        '<keras keras/engine/saving.py:unpickle_model>',
    ),
    'keras.engine.saving.yaml': (
        'instance of torchk.keras_compat.environment.yaml_load_with_a_loader.<locals>.Yaml',
        '(replaces module yaml)',
    ),
    'keras.engine.sequential.Sequential.from_config': (
        'classmethod torchk/saving/formats.py:_model_from_config.<locals>.from_config',
        '<keras classmethod keras/engine/sequential.py:Sequential.from_config>',
    ),
    'keras.engine.training.Model._set_inputs': (
        'torchk/keras_compat/fixes.py:building_before_setting_inputs.<locals>._set_inputs',
        '<keras keras/engine/training.py:Model._set_inputs>',
    ),
    'keras.engine.training.Model.compile': (
        'torchk/mixed_precision.py:compile_with_loss_scaling.<locals>.compile',
        '<keras keras/engine/training.py:Model.compile>',
    ),
    'keras.engine.training_arrays.slice_arrays': (
        'torchk/keras_compat/loops.py:slicing_batches_as_views.<locals>.slice_arrays',
        '<keras keras/utils/generic_utils.py:slice_arrays>',
    ),
    'keras.layers.AbstractRNNCell': ('torchk.layers.recurrent.AbstractRNNCell', '(added)'),
    'keras.layers.AdditiveAttention': ('torchk.layers.attention.AdditiveAttention', '(added)'),
    'keras.layers.Attention': ('torchk.layers.attention.Attention', '(added)'),
    'keras.layers.CategoryEncoding': ('torchk.layers.categorical.CategoryEncoding', '(added)'),
    'keras.layers.CenterCrop': ('torchk.layers.preprocessing.CenterCrop', '(added)'),
    'keras.layers.Conv1D': (
        'torchk.layers.grouped_convolution.Conv1D',
        '(replaces keras.layers.convolutional.Conv1D)',
    ),
    'keras.layers.Conv1DTranspose': ('torchk.layers.convolutional.Conv1DTranspose', '(added)'),
    'keras.layers.Conv2D': (
        'torchk.layers.grouped_convolution.Conv2D',
        '(replaces keras.layers.convolutional.Conv2D)',
    ),
    'keras.layers.Conv3D': (
        'torchk.layers.grouped_convolution.Conv3D',
        '(replaces keras.layers.convolutional.Conv3D)',
    ),
    'keras.layers.Convolution1D': (
        'torchk.layers.grouped_convolution.Conv1D',
        '(replaces keras.layers.convolutional.Conv1D)',
    ),
    'keras.layers.Convolution2D': (
        'torchk.layers.grouped_convolution.Conv2D',
        '(replaces keras.layers.convolutional.Conv2D)',
    ),
    'keras.layers.Convolution3D': (
        'torchk.layers.grouped_convolution.Conv3D',
        '(replaces keras.layers.convolutional.Conv3D)',
    ),
    'keras.layers.CuDNNGRU': (
        'torchk.layers.cudnn_recurrent.CuDNNGRU',
        '(replaces keras.layers.cudnn_recurrent.CuDNNGRU)',
    ),
    'keras.layers.CuDNNLSTM': (
        'torchk.layers.cudnn_recurrent.CuDNNLSTM',
        '(replaces keras.layers.cudnn_recurrent.CuDNNLSTM)',
    ),
    'keras.layers.DepthwiseConv1D': ('torchk.layers.convolutional.DepthwiseConv1D', '(added)'),
    'keras.layers.Discretization': ('torchk.layers.categorical.Discretization', '(added)'),
    'keras.layers.EinsumDense': ('torchk.layers.core.EinsumDense', '(added)'),
    'keras.layers.GlobalAveragePooling1D': (
        'torchk.layers.pooling.GlobalAveragePooling1D',
        '(replaces keras.layers.pooling.GlobalAveragePooling1D)',
    ),
    'keras.layers.GlobalAveragePooling2D': (
        'torchk.layers.pooling.GlobalAveragePooling2D',
        '(replaces keras.layers.pooling.GlobalAveragePooling2D)',
    ),
    'keras.layers.GlobalAveragePooling3D': (
        'torchk.layers.pooling.GlobalAveragePooling3D',
        '(replaces keras.layers.pooling.GlobalAveragePooling3D)',
    ),
    'keras.layers.GlobalAvgPool1D': (
        'torchk.layers.pooling.GlobalAveragePooling1D',
        '(replaces keras.layers.pooling.GlobalAveragePooling1D)',
    ),
    'keras.layers.GlobalAvgPool2D': (
        'torchk.layers.pooling.GlobalAveragePooling2D',
        '(replaces keras.layers.pooling.GlobalAveragePooling2D)',
    ),
    'keras.layers.GlobalAvgPool3D': (
        'torchk.layers.pooling.GlobalAveragePooling3D',
        '(replaces keras.layers.pooling.GlobalAveragePooling3D)',
    ),
    'keras.layers.GlobalMaxPool1D': (
        'torchk.layers.pooling.GlobalMaxPooling1D',
        '(replaces keras.layers.pooling.GlobalMaxPooling1D)',
    ),
    'keras.layers.GlobalMaxPool2D': (
        'torchk.layers.pooling.GlobalMaxPooling2D',
        '(replaces keras.layers.pooling.GlobalMaxPooling2D)',
    ),
    'keras.layers.GlobalMaxPool3D': (
        'torchk.layers.pooling.GlobalMaxPooling3D',
        '(replaces keras.layers.pooling.GlobalMaxPooling3D)',
    ),
    'keras.layers.GlobalMaxPooling1D': (
        'torchk.layers.pooling.GlobalMaxPooling1D',
        '(replaces keras.layers.pooling.GlobalMaxPooling1D)',
    ),
    'keras.layers.GlobalMaxPooling2D': (
        'torchk.layers.pooling.GlobalMaxPooling2D',
        '(replaces keras.layers.pooling.GlobalMaxPooling2D)',
    ),
    'keras.layers.GlobalMaxPooling3D': (
        'torchk.layers.pooling.GlobalMaxPooling3D',
        '(replaces keras.layers.pooling.GlobalMaxPooling3D)',
    ),
    'keras.layers.GroupNormalization': (
        'torchk.layers.normalization.GroupNormalization',
        '(added)',
    ),
    'keras.layers.Hashing': ('torchk.layers.categorical.Hashing', '(added)'),
    'keras.layers.Identity': ('torchk.layers.core.Identity', '(added)'),
    'keras.layers.IntegerLookup': ('torchk.layers.text.IntegerLookup', '(added)'),
    'keras.layers.LayerNormalization': (
        'torchk.layers.normalization.LayerNormalization',
        '(added)',
    ),
    'keras.layers.MultiHeadAttention': ('torchk.layers.attention.MultiHeadAttention', '(added)'),
    'keras.layers.Normalization': ('torchk.layers.preprocessing.Normalization', '(added)'),
    'keras.layers.RandomBrightness': ('torchk.layers.preprocessing.RandomBrightness', '(added)'),
    'keras.layers.RandomContrast': ('torchk.layers.preprocessing.RandomContrast', '(added)'),
    'keras.layers.RandomCrop': ('torchk.layers.preprocessing.RandomCrop', '(added)'),
    'keras.layers.RandomFlip': ('torchk.layers.preprocessing.RandomFlip', '(added)'),
    'keras.layers.RandomFourierFeatures': (
        'torchk.layers.kernelized.RandomFourierFeatures',
        '(added)',
    ),
    'keras.layers.RandomHeight': ('torchk.layers.preprocessing.RandomHeight', '(added)'),
    'keras.layers.RandomRotation': ('torchk.layers.preprocessing.RandomRotation', '(added)'),
    'keras.layers.RandomTranslation': ('torchk.layers.preprocessing.RandomTranslation', '(added)'),
    'keras.layers.RandomWidth': ('torchk.layers.preprocessing.RandomWidth', '(added)'),
    'keras.layers.RandomZoom': ('torchk.layers.preprocessing.RandomZoom', '(added)'),
    'keras.layers.Rescaling': ('torchk.layers.preprocessing.Rescaling', '(added)'),
    'keras.layers.Resizing': ('torchk.layers.preprocessing.Resizing', '(added)'),
    'keras.layers.SlicingOpLambda': ('torchk.layers.tf_ops.SlicingOpLambda', '(added)'),
    'keras.layers.StringLookup': ('torchk.layers.text.StringLookup', '(added)'),
    'keras.layers.SyncBatchNormalization': (
        'torchk.layers.normalization.SyncBatchNormalization',
        '(added)',
    ),
    'keras.layers.TFOpLambda': ('torchk.layers.tf_ops.TFOpLambda', '(added)'),
    'keras.layers.TextVectorization': ('torchk.layers.text.TextVectorization', '(added)'),
    'keras.layers.UnitNormalization': ('torchk.layers.normalization.UnitNormalization', '(added)'),
    'keras.layers.core.Flatten.__init__': (
        'torchk/keras_compat/semantics.py:flatten_any_rank.<locals>.__init__',
        '<keras keras/layers/core.py:Flatten.__init__>',
    ),
    'keras.layers.core.Flatten.compute_output_shape': (
        'torchk/keras_compat/fixes.py:plain_int_output_shapes.<locals>.compute_output_shape',
        '<keras keras/layers/core.py:Flatten.compute_output_shape>',
    ),
    'keras.layers.core.Lambda.compute_output_shape': (
        'torchk/keras_compat/fixes.py:inferring_lambda_output_shapes.<locals>.compute_output_shape',  # noqa: E501
        '<keras keras/layers/core.py:Lambda.compute_output_shape>',
    ),
    'keras.layers.core.Lambda.from_config': (
        'classmethod torchk/saving/safe_mode.py:gating_lambda_from_config.<locals>.from_config',
        '<keras classmethod keras/layers/core.py:Lambda.from_config>',
    ),
    'keras.layers.core.Reshape.compute_output_shape': (
        'torchk/keras_compat/fixes.py:plain_int_output_shapes.<locals>.compute_output_shape',
        '<keras keras/layers/core.py:Reshape.compute_output_shape>',
    ),
    'keras.layers.cudnn_recurrent.CuDNNGRU': (
        'torchk.layers.cudnn_recurrent.CuDNNGRU',
        '(replaces keras.layers.cudnn_recurrent.CuDNNGRU)',
    ),
    'keras.layers.cudnn_recurrent.CuDNNLSTM': (
        'torchk.layers.cudnn_recurrent.CuDNNLSTM',
        '(replaces keras.layers.cudnn_recurrent.CuDNNLSTM)',
    ),
    'keras.layers.wrappers.uses_learning_phase': ('False', '(added)'),
    'keras.losses.BinaryFocalCrossentropy': ('torchk.losses.BinaryFocalCrossentropy', '(added)'),
    'keras.losses.CategoricalFocalCrossentropy': (
        'torchk.losses.CategoricalFocalCrossentropy',
        '(added)',
    ),
    'keras.losses.CosineSimilarity': ('torchk.losses.CosineSimilarity', '(added)'),
    'keras.losses.Loss.__call__': (
        'torchk/mixed_precision.py:loss_in_float32.<locals>.__call__',
        '<keras keras/losses.py:Loss.__call__>',
    ),
    'keras.losses.binary_focal_crossentropy': (
        'torchk/losses.py:binary_focal_crossentropy',
        '(added)',
    ),
    'keras.losses.categorical_focal_crossentropy': (
        'torchk/losses.py:categorical_focal_crossentropy',
        '(added)',
    ),
    'keras.losses.huber': ('torchk/losses.py:huber', '(added)'),
    'keras.losses.kl_divergence': ('keras/losses.py:kullback_leibler_divergence', '(added)'),
    'keras.losses.log_cosh': ('keras/losses.py:logcosh', '(added)'),
    'keras.metrics.BinaryIoU': ('torchk.metrics.BinaryIoU', '(added)'),
    'keras.metrics.F1Score': ('torchk.score_metrics.F1Score', '(added)'),
    'keras.metrics.FBetaScore': ('torchk.score_metrics.FBetaScore', '(added)'),
    'keras.metrics.IoU': ('torchk.metrics.IoU', '(added)'),
    'keras.metrics.KLD': ('keras/losses.py:kullback_leibler_divergence', '(added)'),
    'keras.metrics.MeanIoU': ('torchk.metrics.MeanIoU', '(replaces keras.metrics.MeanIoU)'),
    'keras.metrics.MeanRelativeError': ('torchk.score_metrics.MeanRelativeError', '(added)'),
    'keras.metrics.MeanTensor': ('torchk.score_metrics.MeanTensor', '(added)'),
    'keras.metrics.OneHotIoU': ('torchk.metrics.OneHotIoU', '(added)'),
    'keras.metrics.OneHotMeanIoU': ('torchk.metrics.OneHotMeanIoU', '(added)'),
    'keras.metrics.Precision': ('torchk.metrics.Precision', '(replaces keras.metrics.Precision)'),
    'keras.metrics.PrecisionAtRecall': ('torchk.metrics.PrecisionAtRecall', '(added)'),
    'keras.metrics.R2Score': ('torchk.score_metrics.R2Score', '(added)'),
    'keras.metrics.Recall': ('torchk.metrics.Recall', '(replaces keras.metrics.Recall)'),
    'keras.metrics.RecallAtPrecision': ('torchk.metrics.RecallAtPrecision', '(added)'),
    'keras.metrics.binary_focal_crossentropy': (
        'torchk/losses.py:binary_focal_crossentropy',
        '(added)',
    ),
    'keras.metrics.categorical_focal_crossentropy': (
        'torchk/losses.py:categorical_focal_crossentropy',
        '(added)',
    ),
    'keras.metrics.get': (
        'torchk/keras_compat/fixes.py:metric_configs_deserialized.<locals>.get',
        '<keras keras/metrics.py:get>',
    ),
    'keras.metrics.kl_divergence': ('keras/losses.py:kullback_leibler_divergence', '(added)'),
    'keras.metrics.kld': ('keras/losses.py:kullback_leibler_divergence', '(added)'),
    'keras.metrics.log_cosh': ('keras/losses.py:logcosh', '(added)'),
    'keras.models.clone_model': (
        'torchk/saving/formats.py:trusting.<locals>.wrapper',
        '<keras keras/models.py:clone_model>',
    ),
    "keras.utils.generic_utils._GLOBAL_CUSTOM_OBJECTS['LossScaleOptimizer']": (
        'torchk.mixed_precision._define_loss_scale_optimizer.<locals>.LossScaleOptimizer',
        '(added)',
    ),
    'keras.utils.io_utils.save_to_binary_h5py': (
        'torchk/keras_compat/environment.py:save_to_binary_h5py',
        '(replaces keras/utils/io_utils.py:save_to_binary_h5py)',
    ),
    'keras.utils.multi_gpu_utils.multi_gpu_model': (
        'torchk/keras_compat/fixes.py:multi_gpu_model',
        '(replaces keras/utils/multi_gpu_utils.py:multi_gpu_model)',
    ),
    'keras.wrappers.scikit_learn.KerasClassifier.__sklearn_tags__': (
        'torchk/keras_compat/environment.py:_sklearn_tags.<locals>.__sklearn_tags__',
        '(added)',
    ),
    'keras.wrappers.scikit_learn.KerasClassifier._estimator_type': ("'classifier'", '(added)'),
    'keras.wrappers.scikit_learn.KerasRegressor.__sklearn_tags__': (
        'torchk/keras_compat/environment.py:_sklearn_tags.<locals>.__sklearn_tags__',
        '(added)',
    ),
    'keras.wrappers.scikit_learn.KerasRegressor._estimator_type': ("'regressor'", '(added)'),
}

# Keras' layer classes whose `call` the backend wraps in the layer's dtype policy
# (`IN_POLICY_CALL`), and the original each wraps.
IN_POLICY = {
    'keras.engine.base_layer.Layer.call': 'keras/engine/base_layer.py:Layer.call',
    'keras.engine.network.Network.call': 'keras/engine/network.py:Network.call',
    'keras.layers.advanced_activations.ELU.call': 'keras/layers/advanced_activations.py:ELU.call',
    'keras.layers.advanced_activations.LeakyReLU.call':
        'keras/layers/advanced_activations.py:LeakyReLU.call',
    'keras.layers.advanced_activations.PReLU.call':
        'keras/layers/advanced_activations.py:PReLU.call',
    'keras.layers.advanced_activations.ReLU.call':
        'keras/layers/advanced_activations.py:ReLU.call',
    'keras.layers.advanced_activations.Softmax.call':
        'keras/layers/advanced_activations.py:Softmax.call',
    'keras.layers.advanced_activations.ThresholdedReLU.call':
        'keras/layers/advanced_activations.py:ThresholdedReLU.call',
    'keras.layers.convolutional.Conv2DTranspose.call':
        'keras/layers/convolutional.py:Conv2DTranspose.call',
    'keras.layers.convolutional.Conv3DTranspose.call':
        'keras/layers/convolutional.py:Conv3DTranspose.call',
    'keras.layers.convolutional.Convolution2DTranspose.call':
        'keras/layers/convolutional.py:Conv2DTranspose.call',
    'keras.layers.convolutional.Deconv2D.call':
        'keras/layers/convolutional.py:Conv2DTranspose.call',
    'keras.layers.convolutional.Deconv3D.call':
        'keras/layers/convolutional.py:Conv3DTranspose.call',
    'keras.layers.convolutional.Deconvolution2D.call':
        'keras/layers/convolutional.py:Conv2DTranspose.call',
    'keras.layers.convolutional.Deconvolution3D.call':
        'keras/layers/convolutional.py:Conv3DTranspose.call',
    'keras.layers.convolutional.DepthwiseConv2D.call':
        'keras/layers/convolutional.py:DepthwiseConv2D.call',
    'keras.layers.convolutional.UpSampling1D.call':
        'keras/layers/convolutional.py:UpSampling1D.call',
    'keras.layers.convolutional.UpSampling2D.call':
        'keras/layers/convolutional.py:UpSampling2D.call',
    'keras.layers.convolutional.UpSampling3D.call':
        'keras/layers/convolutional.py:UpSampling3D.call',
    'keras.layers.convolutional.ZeroPadding1D.call':
        'keras/layers/convolutional.py:ZeroPadding1D.call',
    'keras.layers.convolutional.ZeroPadding2D.call':
        'keras/layers/convolutional.py:ZeroPadding2D.call',
    'keras.layers.convolutional.ZeroPadding3D.call':
        'keras/layers/convolutional.py:ZeroPadding3D.call',
    'keras.layers.convolutional._Conv.call': 'keras/layers/convolutional.py:_Conv.call',
    'keras.layers.convolutional._Cropping.call': 'keras/layers/convolutional.py:_Cropping.call',
    'keras.layers.convolutional._SeparableConv.call':
        'keras/layers/convolutional.py:_SeparableConv.call',
    'keras.layers.convolutional._UpSampling.call':
        'keras/layers/convolutional.py:_UpSampling.call',
    'keras.layers.convolutional._ZeroPadding.call':
        'keras/layers/convolutional.py:_ZeroPadding.call',
    'keras.layers.convolutional_recurrent.ConvLSTM2D.call':
        'keras/layers/convolutional_recurrent.py:ConvLSTM2D.call',
    'keras.layers.convolutional_recurrent.ConvLSTM2DCell.call':
        'keras/layers/convolutional_recurrent.py:ConvLSTM2DCell.call',
    'keras.layers.convolutional_recurrent.ConvRNN2D.call':
        'keras/layers/convolutional_recurrent.py:ConvRNN2D.call',
    'keras.layers.core.Activation.call': 'keras/layers/core.py:Activation.call',
    'keras.layers.core.Dense.call': 'keras/layers/core.py:Dense.call',
    'keras.layers.core.Dropout.call': 'keras/layers/core.py:Dropout.call',
    'keras.layers.core.Flatten.call': 'keras/layers/core.py:Flatten.call',
    'keras.layers.core.Lambda.call': 'keras/layers/core.py:Lambda.call',
    'keras.layers.core.Masking.call': 'keras/layers/core.py:Masking.call',
    'keras.layers.core.Permute.call': 'keras/layers/core.py:Permute.call',
    'keras.layers.core.RepeatVector.call': 'keras/layers/core.py:RepeatVector.call',
    'keras.layers.core.Reshape.call': 'keras/layers/core.py:Reshape.call',
    'keras.layers.cudnn_recurrent._CuDNNRNN.call':
        'keras/layers/cudnn_recurrent.py:_CuDNNRNN.call',
    'keras.layers.embeddings.Embedding.call': 'keras/layers/embeddings.py:Embedding.call',
    'keras.layers.local.LocallyConnected1D.call': 'keras/layers/local.py:LocallyConnected1D.call',
    'keras.layers.local.LocallyConnected2D.call': 'keras/layers/local.py:LocallyConnected2D.call',
    'keras.layers.merge._Merge.call': 'keras/layers/merge.py:_Merge.call',
    'keras.layers.noise.AlphaDropout.call': 'keras/layers/noise.py:AlphaDropout.call',
    'keras.layers.noise.GaussianDropout.call': 'keras/layers/noise.py:GaussianDropout.call',
    'keras.layers.noise.GaussianNoise.call': 'keras/layers/noise.py:GaussianNoise.call',
    'keras.layers.normalization.BatchNormalization.call':
        'keras/layers/normalization.py:BatchNormalization.call',
    'keras.layers.pooling.GlobalAveragePooling1D.call':
        'keras/layers/pooling.py:GlobalAveragePooling1D.call',
    'keras.layers.pooling.GlobalAveragePooling2D.call':
        'keras/layers/pooling.py:GlobalAveragePooling2D.call',
    'keras.layers.pooling.GlobalAveragePooling3D.call':
        'keras/layers/pooling.py:GlobalAveragePooling3D.call',
    'keras.layers.pooling.GlobalAvgPool1D.call':
        'keras/layers/pooling.py:GlobalAveragePooling1D.call',
    'keras.layers.pooling.GlobalAvgPool2D.call':
        'keras/layers/pooling.py:GlobalAveragePooling2D.call',
    'keras.layers.pooling.GlobalAvgPool3D.call':
        'keras/layers/pooling.py:GlobalAveragePooling3D.call',
    'keras.layers.pooling.GlobalMaxPool1D.call': 'keras/layers/pooling.py:GlobalMaxPooling1D.call',
    'keras.layers.pooling.GlobalMaxPool2D.call': 'keras/layers/pooling.py:GlobalMaxPooling2D.call',
    'keras.layers.pooling.GlobalMaxPool3D.call': 'keras/layers/pooling.py:GlobalMaxPooling3D.call',
    'keras.layers.pooling.GlobalMaxPooling1D.call':
        'keras/layers/pooling.py:GlobalMaxPooling1D.call',
    'keras.layers.pooling.GlobalMaxPooling2D.call':
        'keras/layers/pooling.py:GlobalMaxPooling2D.call',
    'keras.layers.pooling.GlobalMaxPooling3D.call':
        'keras/layers/pooling.py:GlobalMaxPooling3D.call',
    'keras.layers.pooling._GlobalPooling1D.call': 'keras/layers/pooling.py:_GlobalPooling1D.call',
    'keras.layers.pooling._GlobalPooling2D.call': 'keras/layers/pooling.py:_GlobalPooling2D.call',
    'keras.layers.pooling._GlobalPooling3D.call': 'keras/layers/pooling.py:_GlobalPooling3D.call',
    'keras.layers.pooling._Pooling1D.call': 'keras/layers/pooling.py:_Pooling1D.call',
    'keras.layers.pooling._Pooling2D.call': 'keras/layers/pooling.py:_Pooling2D.call',
    'keras.layers.pooling._Pooling3D.call': 'keras/layers/pooling.py:_Pooling3D.call',
    'keras.layers.recurrent.GRU.call': 'keras/layers/recurrent.py:GRU.call',
    'keras.layers.recurrent.GRUCell.call': 'keras/layers/recurrent.py:GRUCell.call',
    'keras.layers.recurrent.LSTM.call': 'keras/layers/recurrent.py:LSTM.call',
    'keras.layers.recurrent.LSTMCell.call': 'keras/layers/recurrent.py:LSTMCell.call',
    'keras.layers.recurrent.RNN.call': 'keras/layers/recurrent.py:RNN.call',
    'keras.layers.recurrent.SimpleRNN.call': 'keras/layers/recurrent.py:SimpleRNN.call',
    'keras.layers.recurrent.SimpleRNNCell.call': 'keras/layers/recurrent.py:SimpleRNNCell.call',
    'keras.layers.recurrent.StackedRNNCells.call':
        'keras/layers/recurrent.py:StackedRNNCells.call',
    'keras.layers.wrappers.Bidirectional.call': 'keras/layers/wrappers.py:Bidirectional.call',
    'keras.layers.wrappers.TimeDistributed.call': 'keras/layers/wrappers.py:TimeDistributed.call',
    'keras.legacy.layers.Highway.call': 'keras/legacy/layers.py:Highway.call',
    'keras.legacy.layers.MaxoutDense.call': 'keras/legacy/layers.py:MaxoutDense.call',
    'keras.legacy.layers.Recurrent.call': 'keras/legacy/layers.py:Recurrent.call',
}

# What importing the tf.keras facade (`torchk.keras`) adds to or changes in BACKEND.
FACADE = {
    'keras.__getattr__': (
        'torchk/keras/_facade.py:tf_keras_namespaces_on_keras.<locals>.__getattr__',
        '(added)',
    ),
    'keras.engine.network.Network.call': (
        'torchk/keras/engine/functional.py:call_with_structures.<locals>.call',
        IN_POLICY_CALL,
        '<keras keras/engine/network.py:Network.call>',
    ),
    'keras.engine.network.Network.compute_mask': (
        'torchk/keras/engine/functional.py:compute_mask_with_structures.<locals>.compute_mask',
        '<keras keras/engine/network.py:Network.compute_mask>',
    ),
    'keras.engine.network.Network.from_config': (
        'classmethod torchk/keras/engine/functional.py:'
        'from_config_with_structures.<locals>.from_config',
        'torchk/saving/op_layer_nodes.py:rewriting_op_layer_nodes.<locals>.from_config',
        'torchk/saving/formats.py:_model_from_config.<locals>.from_config',
        '<keras classmethod keras/engine/network.py:Network.from_config>',
    ),
    'keras.engine.network.Network.input': (
        'property torchk/keras/engine/functional.py:structured_endpoint.<locals>.endpoint',
        '(added)',
    ),
    'keras.engine.network.Network.output': (
        'property torchk/keras/engine/functional.py:structured_endpoint.<locals>.endpoint',
        '(added)',
    ),
    'keras.initializers.get': (
        'torchk/keras/initializers.py:none_gets_none.<locals>.get',
        '<keras keras/initializers.py:get>',
    ),
    'keras.layers.core.Dense.call': (
        'torchk/keras/layers/core.py:casting_integer_inputs.<locals>.call',
        IN_POLICY_CALL,
        '<keras keras/layers/core.py:Dense.call>',
    ),
    'keras.engine.base_layer.Layer.__setattr__': (
        'torchk/keras/engine/tracking.py:setattr_told_to_restorations.<locals>.__setattr__',
        '<keras keras/engine/base_layer.py:Layer.__setattr__>',
    ),
    'keras.engine.base_layer.Layer._flatten': (
        'torchk/tf/module.py:Module._flatten',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.name_scope': (
        'property torchk/tf/module.py:install_on_layers.<locals>.<lambda>',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.submodules': (
        'property torchk/tf/module.py:_layer_submodules',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.with_name_scope': (
        'classmethod torchk/tf/module.py:Module.with_name_scope',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.add_weight': (
        'torchk/keras/engine/tracking.py:add_weight_named.<locals>.add_weight',
        'torchk/keras/engine/base_layer.py:add_weight_with_tf_keras_defaults.<locals>.add_weight',
        'torchk/saving/validation.py:charging_weights.<locals>.add_weight',
        '<keras keras/engine/base_layer.py:Layer.add_weight>',
    ),
    'keras.engine.network.Network._init_graph_network': (
        'torchk/keras/engine/functional.py:unique_output_names.<locals>._init_graph_network',
        '<keras keras/engine/network.py:Network._init_graph_network>',
    ),
    'keras.layers.recurrent.RNN.__call__': (
        'torchk/keras/layers/recurrent.py:_nested_dunder_call.<locals>.__call__',
        'torchk/keras/engine/base_layer.py:recorded_call_first.<locals>.__call__',
        '<keras keras/layers/recurrent.py:RNN.__call__>',
    ),
    'keras.layers.recurrent.RNN.assert_input_compatibility': (
        'torchk/keras/layers/recurrent.py:_nested_assert_of.<locals>.assert_input_compatibility',
        '(added)',
    ),
    'keras.layers.recurrent.RNN.build': (
        'torchk/keras/layers/recurrent.py:_nested_build_of.<locals>.build',
        '<keras keras/layers/recurrent.py:RNN.build>',
    ),
    'keras.layers.recurrent.RNN.call': (
        'torchk/mixed_precision.py:in_policy.<locals>.call_in_policy',
        'torchk/keras/layers/recurrent.py:_nested_rnn_call.<locals>.call',
        'torchk/mixed_precision.py:in_policy.<locals>.call_in_policy',
        '<keras keras/layers/recurrent.py:RNN.call>',
    ),
    'keras.layers.recurrent.RNN.compute_mask': (
        'torchk/keras/layers/recurrent.py:_nested_mask_of.<locals>.compute_mask',
        '<keras keras/layers/recurrent.py:RNN.compute_mask>',
    ),
    'keras.layers.recurrent.RNN.compute_output_shape': (
        'torchk/keras/layers/recurrent.py:_nested_output_shape_of.<locals>.compute_output_shape',
        '<keras keras/layers/recurrent.py:RNN.compute_output_shape>',
    ),
    'keras.layers.recurrent.RNN.get_initial_state': (
        'torchk/keras/layers/recurrent.py:_nested_initial_state_of.<locals>.get_initial_state',
        '<keras keras/layers/recurrent.py:RNN.get_initial_state>',
    ),
    'keras.layers.recurrent.RNN.reset_states': (
        'torchk/keras/layers/recurrent.py:_nested_reset_states_of.<locals>.reset_states',
        '<keras keras/layers/recurrent.py:RNN.reset_states>',
    ),
    'keras.layers.recurrent.RNN.states': (
        'property torchk/keras/layers/recurrent.py:_nested_states_of.<locals>.states',
        '<keras property keras/layers/recurrent.py:RNN.states>',
    ),
    'keras.engine.base_layer.Layer.__call__': (
        'torchk/keras/engine/base_layer.py:tf_keras_call.<locals>.__call__',
        '<keras keras/engine/base_layer.py:Layer.__call__>',
    ),
    'keras.engine.base_layer.Layer._add_inbound_node': (
        'torchk/keras/engine/base_layer.py:node_of_tuple_outputs.<locals>._add_inbound_node',
        '<keras keras/engine/base_layer.py:Layer._add_inbound_node>',
    ),
    'keras.engine.base_layer.Layer.add_metric': (
        'torchk/keras/engine/base_layer.py:add_metric_with_aggregation.<locals>.add_metric',
        '<keras keras/engine/base_layer.py:Layer.add_metric>',
    ),
    'keras.engine.base_layer.Layer.compute_mask': (
        'torchk/keras/engine/base_layer.py:compute_mask_if_supported',
        '(replaces keras/engine/base_layer.py:Layer.compute_mask)',
    ),
    'keras.engine.base_layer.Layer.losses': (
        'property torchk/keras/engine/training.py:eager_layer_losses.<locals>.losses',
        '<keras property keras/engine/base_layer.py:Layer.losses>',
    ),
    'keras.engine.base_layer.Layer.non_trainable_variables': (
        'property torchk/keras/eager.py:non_trainable_variables',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.trainable_variables': (
        'property torchk/keras/eager.py:trainable_variables',
        '(added)',
    ),
    'keras.engine.base_layer.Layer.variables': (
        'property torchk/keras/eager.py:variables',
        '(added)',
    ),
    'keras.engine.network.Network.get_config': (
        'torchk/keras/engine/functional.py:get_config_in_tf_keras_form.<locals>.get_config',
        '<keras keras/engine/network.py:Network.get_config>',
    ),
    'keras.engine.network.Network.run_internal_graph': (
        'torchk/keras/engine/functional.py:run_internal_graph',
        '(replaces keras/engine/network.py:Network.run_internal_graph)',
    ),
    'keras.layers.convolutional._Conv.call': (
        'torchk/mixed_precision.py:in_policy.<locals>.call_in_policy',
        'torchk/keras/layers/convolutional.py:call',
        '(replaces keras/layers/convolutional.py:_Conv.call)',
    ),
    'keras.layers.convolutional._Conv.convolution_op': (
        'torchk/keras/layers/convolutional.py:convolution_op',
        '(added)',
    ),
    'keras.layers.convolutional_recurrent.ConvRNN2D.__call__': (
        'torchk/keras/engine/base_layer.py:recorded_call_first.<locals>.__call__',
        '<keras keras/layers/convolutional_recurrent.py:ConvRNN2D.__call__>',
    ),
    'keras.layers.normalization.BatchNormalization.call': (
        'torchk/keras/layers/normalization.py:frozen_batch_normalization_infers.<locals>.call',
        'torchk/mixed_precision.py:in_policy.<locals>.call_in_policy',
        '<keras keras/layers/normalization.py:BatchNormalization.call>',
    ),
    'keras.layers.wrappers.Bidirectional.__call__': (
        'torchk/keras/engine/base_layer.py:recorded_call_first.<locals>.__call__',
        '<keras keras/layers/wrappers.py:Bidirectional.__call__>',
    ),
    'keras.losses.Loss.__init__': (
        'torchk/keras/losses.py:auto_reduction.<locals>.__init__',
        '<keras keras/losses.py:Loss.__init__>',
    ),
    'keras.losses.LossFunctionWrapper.call': (
        'torchk/keras/losses.py:squeezed_predictions.<locals>.call',
        '<keras keras/losses.py:LossFunctionWrapper.call>',
    ),
    'keras.metrics.Metric.__call__': (
        'torchk/keras/eager.py:eager_metric_call.<locals>.metric_call',
        '<keras keras/metrics.py:Metric.__call__>',
    ),
    'keras.metrics.Metric.add_weight': (
        'torchk/keras/engine/base_layer.py:metric_add_weight_with_tf_keras_arguments.<locals>.add_weight',  # noqa: E501
        '<keras keras/metrics.py:Metric.add_weight>',
    ),
    'keras.metrics.Metric.reset_state': ('torchk/keras/eager.py:reset_state', '(added)'),
    'keras.metrics.Reduce.result': (
        'torchk/keras/metrics.py:mean_results_zero_before_updates.<locals>.result',
        '<keras keras/metrics.py:Reduce.result>',
    ),
    'keras.metrics.RootMeanSquaredError.result': (
        'torchk/keras/metrics.py:root_mean_squared_error_result',
        '(replaces keras/metrics.py:RootMeanSquaredError.result)',
    ),
    "keras.utils.generic_utils._GLOBAL_CUSTOM_OBJECTS['OrthogonalRegularizer']": (
        'torchk.keras.regularizers.OrthogonalRegularizer',
        '(added)',
    ),
    'keras.utils.metrics_utils.result_wrapper': (
        'torchk/keras/eager.py:eager_result_wrapper.<locals>.result_wrapper',
        '<keras keras/utils/metrics_utils.py:result_wrapper>',
    ),
    'keras.utils.metrics_utils.update_state_wrapper': (
        'torchk/keras/eager.py:eager_update_state_wrapper.<locals>.update_state_wrapper',
        '<keras keras/utils/metrics_utils.py:update_state_wrapper>',
    ),
}

# torchk's own attributes that the facade changes, with the backend alone...
TORCHK_BACKEND = {
    'torchk.graph.KerasTensor._keras_mask': ('None',),
    'torchk.tf.namespaces.eager': ('torchk/tf/tensors.py:eager',),
    'torchk.variables.Variable.assign': ('None',),
    'torchk.variables.Variable.assign_add': ('None',),
    'torchk.variables.Variable.assign_sub': ('None',),
    'torchk.variables.Variable.get_shape': ('None',),
}

# ...and once the facade is imported.
TORCHK_FACADE = {
    'torchk.graph.KerasTensor._keras_mask': ('property torchk/keras/eager.py:mask_of',),
    'torchk.tf.namespaces.eager': ('torchk/keras/eager.py:eager_unless_tracing.<locals>.eager',),
    'torchk.variables.Variable.assign': ('torchk/tf/variable.py:Variable.assign',),
    'torchk.variables.Variable.assign_add': ('torchk/tf/variable.py:Variable.assign_add',),
    'torchk.variables.Variable.assign_sub': ('torchk/tf/variable.py:Variable.assign_sub',),
    'torchk.variables.Variable.get_shape': ('torchk/tf/variable.py:Variable.get_shape',),
}

# Python operators of Keras tensors: op layers once the facade is imported.
KERAS_TENSOR_OPERATORS = (
    '__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__', '__truediv__',
    '__rtruediv__', '__floordiv__', '__rfloordiv__', '__mod__', '__rmod__', '__pow__',
    '__rpow__', '__matmul__', '__rmatmul__', '__and__', '__rand__', '__or__', '__ror__',
    '__xor__', '__rxor__', '__lt__', '__le__', '__gt__', '__ge__', '__neg__', '__abs__',
    '__invert__', '__getitem__')
TORCHK_BACKEND.update(('torchk.graph.KerasTensor.' + name, ('None',))
                      for name in KERAS_TENSOR_OPERATORS)
TORCHK_FACADE.update(
    ('torchk.graph.KerasTensor.' + name,
     ('torchk/keras/engine/functional.py:operator_as_op_layer.<locals>.operator',))
    for name in KERAS_TENSOR_OPERATORS)
