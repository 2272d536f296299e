"""What torchk changes in Keras 2.3.1, in one place: every attribute of a Keras module or class
(and the few of torchk's own that the tf.keras facade changes) that torchk replaces in place
is one `Override` of `OVERRIDES`, applied by one installer with one marker.

An override declares
- `targets`: the attributes it changes, as `'module:attribute path'`
  (`'keras.engine.network:Network.from_config'`);
- `implementation`: `'module:name'` of the code that changes them, resolved when the override
  is applied (this module imports nothing of torchk or Keras, so the backend can install it
  before either is loaded);
- `kind`: `WRAP` (the implementation takes the attribute's value and returns its replacement,
  which calls it; the function of a classmethod or property is what is wrapped), `SET` (the
  implementation is the new value; `as_property` makes a function a property), `REGISTER`
  (the implementation takes the module and sets the targets there) or `SUBCLASSES` (a `WRAP`
  of the attribute of the class and of each subclass that defines it, now and later: the
  class gets an `__init_subclass__`, and a subclass's attribute that another override sets
  later is wrapped again);
- `scope`: `BACKEND` (applied whenever torchk is installed, `torchk.keras_compat`, each
  target as soon as its module has run; `TORCHK_KERAS_COMPAT=0` turns them all off) or
  `FACADE` (applied when the tf.keras facade, `torchk.keras`, is imported);
- `reference`: the Keras 2.3.1 lines it fixes or the tf.keras behaviour it follows (where a
  tf.keras behaviour is a `BACKEND` override, why it is on for multi-backend Keras code too);
- `test`: the test that pins it (`tests/test_overrides.py` checks that it exists);
- `when`: conditions (`CONDITIONS`) that must hold for it to apply;
- `after`: for a `BACKEND` override whose implementation needs more of Keras than the
  targets' modules, the module whose import applies it instead.

Several overrides of one attribute form a chain, applied in the order of `OVERRIDES` (a `SET`
starts a new chain): `Network.from_config` is Keras' wrapped by the functional graph checks
of `torchk.saving.formats`, then by the op layers' node rewriting of
`torchk.saving.op_layer_nodes`, then (with the facade) by tf.keras' nested `input_layers`
and `output_layers` (`torchk.keras.engine.functional`). The marker is one attribute,
`__torchk_overrides__`, on each module or class changed: for each attribute, the value
installed and the chain of overrides that made it. An override already in an attribute's
chain is not applied again; a value that is no longer the one installed (the module was
reloaded) has no chain. `installed_chain(target)` reads it.

Beyond these, `torchk.keras_compat` restores names Python 3.10/3.11 and numpy 2.0 removed
(`collections.Mapping`, `np.float`, `inspect.getargspec`, ...), process-wide and only where
missing, when Keras is imported; and `torchk.tf` makes `torch.Tensor.numpy` TF's.
"""
import importlib
import sys
import typing

WRAP, SET, REGISTER, SUBCLASSES = 'wrap', 'set', 'register', 'subclasses'
BACKEND, FACADE = 'backend', 'facade'
MARKER = '__torchk_overrides__'


class Override(typing.NamedTuple):
    """One change to Keras (see the module docstring)."""
    targets: tuple
    implementation: str
    kind: str
    scope: str
    reference: str
    test: str
    when: tuple = ()
    as_property: bool = False
    after: str = None

    def trigger(self, target):
        """The module whose import applies this `BACKEND` override to `target`."""
        return self.after or _split(target)[0]


def _torchk_is_the_backend():
    loading = sys.modules.get('keras.backend.load_backend')
    return getattr(loading, '_BACKEND', None) == 'torchk.core'


def _module_has(module, name):
    return lambda owner, attribute: hasattr(sys.modules.get(module), name)


# Each condition: (owner, attribute) -> whether the override applies to that target.
CONDITIONS = {
    'torchk is the backend': lambda owner, attribute: _torchk_is_the_backend(),
    'the attribute exists': hasattr,
    'Keras has loss classes': _module_has('keras.losses', 'LossFunctionWrapper'),
    'Keras has no loss classes (2.2)': lambda owner, attribute: not hasattr(
        sys.modules.get('keras.losses'), 'Loss'),
    'Keras has metric classes': _module_has('keras.metrics', 'Metric'),
}

_TORCHK = ('torchk is the backend',)


def _backend(targets, implementation, kind, reference, test, when=(), after=None):
    return Override(targets, implementation, kind, BACKEND, reference, test, when, False, after)


def _facade(targets, implementation, kind, reference, test, as_property=False):
    return Override(targets, implementation, kind, FACADE, reference, test, (), as_property)


OVERRIDES = (
    # ---- keras.engine.saving ----------------------------------------------------------------
    _backend(('keras.engine.saving:_deserialize_model',
              'keras.engine.saving:load_attributes_from_hdf5_group',
              'keras.engine.saving:load_weights_from_hdf5_group',
              'keras.engine.saving:load_weights_from_hdf5_group_by_name'),
             'torchk.keras_compat.environment:reading_string_attributes_as_bytes', WRAP,
             'h5py 3 reads the strings Keras wrote as str, where saving.py:273, 278, 282, 345, '
             '377, 722, 727, 1183, 1187, 1262, 1266 call .decode(\'utf8\')',
             'tests/test_keras_compat.py::test_string_attributes_in_every_stored_form'),
    _backend(('keras.engine.saving:yaml',),
             'torchk.keras_compat.environment:yaml_load_with_a_loader', WRAP,
             'PyYAML 6 requires the Loader that Keras 2.2.4 saving.py:473 does not pass',
             'tests/integration/test_keras_versions.py::test_model_from_yaml_round_trip'),
    _backend(('keras.utils.io_utils:save_to_binary_h5py',
              'keras.engine.saving:save_to_binary_h5py'),
             'torchk.keras_compat.environment:save_to_binary_h5py', SET,
             'h5py 3 opens files read-only by default: io_utils.py:416 opens the in-memory file '
             'of save_model(model, stream) (saving.py:546) without a mode',
             'tests/test_keras_compat.py::'
             'test_save_model_into_a_stream_round_trips', after='keras.engine.saving'),
    _backend(('keras.engine.saving:save_model',),
             'torchk.saving.atomic_files:saving_model_atomically', WRAP,
             'saving.py:497 writes the target in place: a failed save destroyed the last file',
             'tests/integration/test_atomic_save.py::test_a_failing_save_keeps_the_previous_file'),
    _backend(('keras.engine.saving:save_model',),
             'torchk.saving.keras_zip_writer:saving_keras_zips', WRAP,
             "tf.keras 2.13+ model.save('x.keras') writes a .keras zip; Keras 2.3.1 wrote HDF5 "
             'under that name',
             'tests/saving/test_keras_zip_writer.py::'
             'test_round_trip_is_exact_and_writes_what_tensorflow_loaded'),
    _backend(('keras.engine.saving:model_from_config',),
             'torchk.saving.h5:translating_model_from_config', WRAP,
             'tf.keras 2.0-2.15 / tf_keras configurations, which saving.py:664 cannot read',
             'tests/integration/test_tf_keras_models.py::test_loads_and_predicts_as_tensorflow'),
    _backend(('keras.engine.saving:model_from_json',),
             'torchk.saving.h5:translating_model_from_json', WRAP,
             'tf.keras JSON configurations (saving.py:681)',
             'tests/integration/test_tf_keras_models.py::test_model_from_text_then_load_weights'),
    _backend(('keras.engine.saving:model_from_yaml',),
             'torchk.saving.h5:translating_model_from_yaml', WRAP,
             'tf.keras YAML configurations (saving.py:643)',
             'tests/integration/test_tf_keras_models.py::test_model_from_text_then_load_weights'),
    _backend(('keras.engine.saving:_deserialize_model',),
             'torchk.saving.h5:compiling_from_translation', WRAP,
             "a tf.keras file's training configuration and optimizer state (saving.py:354-382 "
             "read Keras 2.3.1's only)",
             'tests/integration/test_tf_keras_models.py::'
             'test_trains_one_step_from_the_saved_state'),
    _backend(('keras.engine.saving:_serialize_model',),
             'torchk.saving.h5:inlining_layer_state', WRAP,
             "the text layers' adapted state, which an HDF5 configuration has no place for",
             'tests/saving/test_text_model_files.py::'
             'test_h5_configuration_carries_the_adapted_state'),
    _backend(('keras.engine.saving:load_model',),
             'torchk.saving.formats:loading_every_format', WRAP,
             'load_model (saving.py:492) reads HDF5 only; tf.keras also saves .keras zips and '
             'SavedModel directories',
             'tests/saving/test_hostile_files.py::'
             'test_format_is_recognised_by_content_and_loaded_by_its_module'),
    _backend(('keras.engine.saving:model_from_config',),
             'torchk.saving.formats:loading_model_from_config', WRAP,
             "Keras 3's safe_mode keyword; a configuration's nesting checked before Keras "
             'recurses into it',
             'tests/saving/test_hostile_files.py::test_deeply_nested_text_and_configuration'),
    _backend(('keras.engine.saving:model_from_json', 'keras.engine.saving:model_from_yaml'),
             'torchk.saving.formats:loading_model_from_text', WRAP,
             "Keras 3's safe_mode keyword",
             'tests/saving/test_safe_mode.py::test_each_opt_in_loads_and_the_payload_runs'),
    _backend(('keras.engine.saving:unpickle_model', 'keras.models:clone_model'),
             'torchk.saving.formats:trusting', WRAP,
             'copy.deepcopy / pickle (saving.py:602) and clone_model (models.py:106, 205) '
             'rebuild a model the program holds: not a load of a file',
             'tests/saving/test_safe_mode.py::test_rebuilding_a_model_in_memory_is_not_a_load'),
    # ---- keras.engine.network and keras.engine.sequential ----------------------------------
    _backend(('keras.engine.network:Network.save_weights',),
             'torchk.saving.atomic_files:saving_weights_atomically', WRAP,
             'network.py:1154 writes the target in place',
             'tests/integration/test_atomic_save.py::'
             'test_keras_save_functions_are_the_atomic_ones'),
    _backend(('keras.engine.network:Network.load_weights',),
             'torchk.saving.keras_zip:reading_vars_layout', WRAP,
             "tf.keras 2.13+ weights files (.weights.h5, .keras), in the `vars` layout",
             'tests/saving/test_keras_zip.py::test_tf_keras_weights_load_into_keras_2_code'),
    _backend(('keras.engine.network:Network.from_config',),
             'torchk.saving.formats:checking_network_configs', WRAP,
             'network.py:953-1047 loops forever on a cycle of layers; safe_mode',
             'tests/saving/test_hostile_files.py::test_layer_cycle_is_named_not_a_hang'),
    _backend(('keras.engine.network:Network.from_config',),
             'torchk.saving.op_layer_nodes:rewriting_op_layer_nodes', WRAP,
             "tf.keras' op layer nodes (TFOpLambda), which network.py:953 cannot read",
             'tests/layers/test_tf_ops.py::test_loaded_op_model_applies_to_new_inputs'),
    _backend(('keras.engine.sequential:Sequential.from_config',),
             'torchk.saving.formats:checking_sequential_configs', WRAP,
             "Keras 3's safe_mode keyword; nesting checked first",
             'tests/saving/test_safe_mode.py::test_payload_is_refused_by_default'),
    # ---- keras.engine.base_layer --------------------------------------------------------------
    _backend(('keras.engine.base_layer:print',),
             'torchk.keras_compat.fixes:print_without_tracking', SET,
             "the leftover print('tracking', value, name) at base_layer.py:1237",
             'tests/test_keras_compat.py::test_tracking_print_is_dropped'),
    _backend(('keras.engine.base_layer:Layer.add_weight',),
             'torchk.saving.validation:charging_weights', WRAP,
             "a hostile file's declared weight sizes, checked against the load's memory budget",
             'tests/saving/test_hostile_files.py::'
             'test_declared_sizes_are_checked_before_allocating'),
    _backend(('keras.engine.base_layer:Layer.__init__',),
             'torchk.mixed_precision:layer_init_with_policy', WRAP,
             "tf.keras' dtype policies (Layer(dtype='mixed_float16'), set_global_policy)",
             'tests/test_mixed_precision.py::test_layers_created_before_the_policy_keep_theirs',
             _TORCHK, after='keras.engine.training'),
    _backend(('keras.engine.base_layer:Layer.get_config',),
             'torchk.mixed_precision:layer_config_with_policy', WRAP,
             "tf.keras saves a mixed layer's policy as its dtype",
             'tests/test_mixed_precision.py::'
             'test_layer_config_keeps_its_policy', _TORCHK, after='keras.engine.training'),
    _backend(('keras.engine.base_layer:Layer.call',), 'torchk.mixed_precision:in_policy',
             SUBCLASSES,
             "tf.keras' mixed precision: every layer computes in its policy's dtype",
             'tests/test_mixed_precision.py::test_a_mixed_layer_computes_in_low_precision',
             _TORCHK, after='keras.engine.training'),
    # ---- keras.layers -----------------------------------------------------------------------
    _backend(('keras.layers.wrappers:uses_learning_phase',),
             'torchk.keras_compat.fixes:define_uses_learning_phase', REGISTER,
             'wrappers.py:220-225 declares the global uses_learning_phase and never defines it',
             'tests/test_keras_compat.py::test_time_distributed_of_a_fixed_batch_builds'),
    _backend(('keras.layers.core:Lambda.compute_output_shape',),
             'torchk.keras_compat.fixes:inferring_lambda_output_shapes', WRAP,
             "core.py:667-690 infers a Lambda's output shape for TensorFlow and CNTK only",
             'tests/integration/test_backend_programs.py::'
             'test_lambda_without_output_shape_reports_the_inferred_shape_like_tf'),
    _backend(('keras.layers.core:Flatten.compute_output_shape',
              'keras.layers.core:Reshape.compute_output_shape'),
             'torchk.keras_compat.fixes:plain_int_output_shapes', WRAP,
             'core.py:381-385, 505 give numpy integers, which numpy 2 prints as np.int64(12)',
             'tests/test_keras_compat.py::'
             'test_keras_tensorboard_is_torchks_and_multi_gpu_model_points_to_distributed'),
    _backend(('keras.layers.core:Flatten.__init__',),
             'torchk.keras_compat.semantics:flatten_any_rank', WRAP,
             "tf.keras' Flatten of inputs of rank 1 and 2 (core.py:494 asks for 3); backend "
             "level: torchk.layers' lookup layers, multi-backend code's too, output "
             '(batch, classes)',
             'tests/test_keras_compat.py::test_flatten_takes_inputs_of_rank_1_and_2'),
    _backend(('keras.layers.core:Lambda.from_config',),
             'torchk.saving.safe_mode:gating_lambda_from_config', WRAP,
             "a Lambda's marshalled bytecode runs only when the load opts in (Keras 3's "
             'safe_mode)',
             'tests/saving/test_safe_mode.py::test_lambda_from_config_itself_is_gated'),
    _backend(('keras.layers:*',), 'torchk.layers:register', REGISTER,
             "tf.keras 2's layers that Keras 2.3.1 lacks, and CuDNN layers on any device, for "
             'load_model to find',
             'tests/layers/test_tf_keras_models.py::test_predicts_as_tf'),
    _backend(('keras.activations:*',), 'torchk.activations:register', REGISTER,
             "tf.keras' gelu, swish, silu, mish",
             'tests/test_activations.py::test_activation_by_name_in_a_model'),
    # ---- keras.backend ----------------------------------------------------------------------
    _backend(('keras.backend:clear_session', 'keras.backend:get_session',
              'keras.backend:set_session', 'keras.backend:manual_variable_initialization'),
             'torchk.keras_compat.fixes:export_session_functions', REGISTER,
             'backend/__init__.py:156-164 imports them from the backend for TensorFlow only',
             'tests/test_keras_compat.py::test_keras_backend_has_the_session_functions',
             _TORCHK),
    # ---- keras.callbacks --------------------------------------------------------------------
    _backend(('keras.callbacks:TensorBoard',), 'torchk.callbacks:TensorBoard', SET,
             'callbacks/tensorboard_v1.py:95-118 needs TensorFlow',
             'tests/test_callbacks.py::test_epoch_scalars_equal_the_history', _TORCHK),
    _backend(('keras.callbacks:CallbackList._call_batch_hook',),
             'torchk.keras_compat.loops:call_batch_hook', SET,
             'callbacks.py:70-101 takes np.median of ten floats twice per batch',
             'tests/test_keras_compat_loop.py::test_slow_callbacks_are_still_reported',
             ('the attribute exists',)),
    _backend(tuple('keras.callbacks:CallbackList.on_%s_%s' % (stage, event)
                   for stage in ('train', 'test', 'predict') for event in ('begin', 'end')),
             'torchk.keras_compat.semantics:with_logs_dict', WRAP,
             "tf.keras passes callbacks' begin and end hooks a dict of logs; backend level: "
             'callbacks written for tf.keras run in multi-backend code too',
             'tests/test_keras_compat.py::test_callbacks_begin_and_end_hooks_get_a_dict_of_logs'),
    # ---- the training loop ------------------------------------------------------------------
    _backend(('keras.engine.training_arrays:slice_arrays',),
             'torchk.keras_compat.loops:slicing_batches_as_views', WRAP,
             'training_arrays.py:182, 185, 327, 441 copy each batch through a list of indices',
             'tests/test_keras_compat_loop.py::'
             'test_batches_are_keras_batches_and_views_where_consecutive'),
    _backend(('keras.utils.multi_gpu_utils:multi_gpu_model',),
             'torchk.keras_compat.fixes:multi_gpu_model', SET,
             'multi_gpu_utils.py:16-258 replicates on TensorFlow devices only',
             'tests/test_keras_compat.py::'
             'test_keras_tensorboard_is_torchks_and_multi_gpu_model_points_to_distributed',
             _TORCHK),
    _backend(('keras.wrappers.scikit_learn:KerasClassifier._estimator_type',
              'keras.wrappers.scikit_learn:KerasClassifier.__sklearn_tags__',
              'keras.wrappers.scikit_learn:KerasRegressor._estimator_type',
              'keras.wrappers.scikit_learn:KerasRegressor.__sklearn_tags__'),
             'torchk.keras_compat.environment:add_sklearn_tags', REGISTER,
             'scikit-learn >= 1.6 asks every estimator for __sklearn_tags__ '
             '(scikit_learn.py:175, 303 predate it)',
             'tests/integration/test_programs_in_the_wild.py::'
             'test_keras_classifier_fit_score_cross_val_and_grid_search'),
    # ---- keras.losses and keras.metrics -----------------------------------------------------
    _backend(('keras.losses:*',), 'torchk.losses:register', REGISTER,
             "tf.keras' focal cross-entropies, CosineSimilarity and loss names",
             'tests/keras_facade/test_tf2_names.py::test_loss_matches_tf',
             ('Keras has loss classes',)),
    _backend(('keras.losses:Loss.__call__',), 'torchk.mixed_precision:loss_in_float32', WRAP,
             "tf.keras computes losses in float32 under mixed precision",
             'tests/test_mixed_precision.py::'
             'test_the_loss_is_computed_in_float32', _TORCHK, after='keras.engine.training'),
    _backend(('keras.metrics:*',), 'torchk.metrics:register', REGISTER,
             "tf.keras' MeanIoU, Precision and Recall with top_k (TensorFlow-only in Keras "
             '2.3.1), and its other metrics',
             'tests/test_metrics.py::test_metric_accumulates_tf_value',
             ('Keras has metric classes',)),
    _backend(('keras.metrics:get',), 'torchk.keras_compat.fixes:metric_configs_deserialized', WRAP,
             "metrics.py:1974 looks a metric's config up as a name: every load of a model "
             'compiled with metric objects failed',
             'tests/test_keras_compat.py::test_a_model_compiled_with_metric_objects_loads',
             ('Keras has metric classes',)),
    # ---- keras.engine.training --------------------------------------------------------------
    _backend(('keras.engine.training:Model._set_inputs',),
             'torchk.keras_compat.fixes:building_before_setting_inputs', WRAP,
             'training.py _set_inputs calls a subclassed model unbuilt (its weights made in '
             'build): Layer.__call__ builds first',
             'tests/test_keras_compat.py::'
             'test_subclassed_model_defining_build_is_built_before_its_first_fit'),
    _backend(('keras.engine.training:weighted_masked_objective',),
             'torchk.mixed_precision:objective_in_float32', WRAP,
             'Keras 2.2 wraps each loss function in weighted_masked_objective: float32 losses',
             'tests/integration/test_mixed_precision_models.py::test_mlp_classifier_trains',
             _TORCHK + ('Keras has no loss classes (2.2)',), after='keras.engine.training'),
    _backend(('keras.engine.training:Model.compile',),
             'torchk.mixed_precision:compile_with_loss_scaling', WRAP,
             "tf.keras' loss scaling under mixed_float16",
             'tests/test_mixed_precision.py::'
             'test_compile_wraps_the_optimizer_under_mixed_float16_only',
             _TORCHK, after='keras.engine.training'),
    _backend(('keras.utils.generic_utils:_GLOBAL_CUSTOM_OBJECTS',),
             'torchk.mixed_precision:register_loss_scale_optimizer', REGISTER,
             'load_model of a model compiled under mixed_float16 finds LossScaleOptimizer',
             'tests/test_mixed_precision.py::'
             'test_the_loss_scale_state_saves_and_loads_with_the_model',
             _TORCHK, after='keras.engine.training'),

    # ==== the tf.keras facade =================================================================
    _facade(('keras.engine.base_layer:Layer.__call__',),
            'torchk.keras.engine.base_layer:tf_keras_call', WRAP,
            "tf.keras' call conventions: arguments bound by name, keyword tensors, training "
            'propagated, eager calls',
            'tests/keras_facade/test_base_layer.py::test_extra_arguments_eager_and_symbolic'),
    _facade(('keras.engine.base_layer:Layer.compute_mask',),
            'torchk.keras.engine.base_layer:compute_mask_if_supported', SET,
            'a layer without masking drops the mask (base_layer.py:649 raises)',
            'tests/keras_facade/test_base_layer.py::test_a_layer_without_masking_drops_the_mask'),
    _facade(('torchk.graph:KerasTensor._keras_mask',), 'torchk.keras.eager:mask_of', SET,
            "a tensor's _keras_mask is the mask computed for it",
            'tests/keras_facade/test_base_layer.py::test_a_keras_tensor_carries_its_mask',
            as_property=True),
    _facade(('keras.engine.base_layer:Layer._add_inbound_node',),
            'torchk.keras.engine.base_layer:node_of_tuple_outputs', WRAP,
            'a call returning a tuple of tensors has that many outputs',
            'tests/keras_facade/test_base_layer.py::'
            'test_a_tuple_of_keras_tensors_is_the_layers_input_list'),
    _facade(('keras.layers.convolutional_recurrent:ConvRNN2D.__call__',
             'keras.layers.recurrent:RNN.__call__',
             'keras.layers.wrappers:Bidirectional.__call__'),
            'torchk.keras.engine.base_layer:recorded_call_first', WRAP,
            "recorded calls replayed through Layer.__call__; a tuple input to a convolutional "
            'RNN refused by name',
            'tests/keras_facade/test_recurrent.py::'
            'test_a_tuple_of_inputs_to_a_convolutional_rnn_is_refused_by_name'),
    _facade(('keras.engine.base_layer:Layer.add_weight',),
            'torchk.keras.engine.base_layer:add_weight_with_tf_keras_defaults', WRAP,
            "tf.keras' add_weight defaults (initializer by dtype, scalar shape)",
            'tests/keras_facade/test_base_layer.py::test_add_weight_defaults'),
    _facade(('keras.engine.base_layer:Layer.add_metric',),
            'torchk.keras.engine.base_layer:add_metric_with_aggregation', WRAP,
            "tf.keras' aggregation='mean'",
            'tests/keras_facade/test_engine.py::test_metric_data_may_be_lists_of_numbers'),
    _facade(('keras.metrics:Metric.add_weight',),
            'torchk.keras.engine.base_layer:metric_add_weight_with_tf_keras_arguments', WRAP,
            "tf.keras' Metric.add_weight arguments",
            'tests/keras_facade/test_eager.py::test_metric_update_state_and_result'),
    _facade(('keras.engine.network:Network.run_internal_graph',),
            'torchk.keras.engine.functional:run_internal_graph', SET,
            "tf.keras' replay of a functional model's nodes",
            'tests/keras_facade/test_base_layer.py::'
            'test_training_reaches_layers_of_a_functional_model'),
    _facade(('keras.engine.network:Network.get_config',),
            'torchk.keras.engine.functional:get_config_in_tf_keras_form', WRAP,
            'nodes of calls with keyword tensors saved as tf.keras saves them',
            'tests/keras_facade/test_base_layer.py::'
            'test_endpoint_model_saved_as_tf_keras_saves_it'),
    _facade(('keras.engine.network:Network._init_graph_network',),
            'torchk.keras.engine.functional:unique_output_names', WRAP,
            "tf.keras' unique names for the outputs of one layer (name, name_1, ...)",
            'tests/keras_facade/test_functional.py::test_outputs_of_one_layer_have_unique_names'),
    _facade(('keras.engine.network:Network.call',),
            'torchk.keras.engine.functional:call_with_structures', WRAP,
            "tf.keras' structured inputs and outputs: a functional model takes its inputs' "
            'structure (or a dict by input names) and returns its outputs in theirs',
            'tests/keras_facade/test_structures.py::'
            'test_a_model_of_dicts_is_flat_in_tf_nest_order_and_called_with_dicts'),
    _facade(('keras.engine.network:Network.compute_mask',),
            'torchk.keras.engine.functional:compute_mask_with_structures', WRAP,
            "a functional model's masks for inputs given in its structure or by input names",
            'tests/keras_facade/test_structures.py::'
            'test_a_model_of_dicts_is_flat_in_tf_nest_order_and_called_with_dicts'),
    _facade(('keras.engine.network:Network.input', 'keras.engine.network:Network.output'),
            'torchk.keras.engine.functional:structured_endpoint', WRAP,
            "tf.keras' model.input and model.output: the structures the model was made of",
            'tests/keras_facade/test_structures.py::'
            'test_a_model_of_dicts_is_flat_in_tf_nest_order_and_called_with_dicts'),
    _facade(('keras.engine.network:Network.from_config',),
            'torchk.keras.engine.functional:from_config_with_structures', WRAP,
            "input_layers and output_layers nested as tf.keras writes them (network.py:1095 "
            'reads a flat list)',
            'tests/keras_facade/test_structures.py::'
            'test_files_of_dict_models_keep_their_structure'),
    _facade(tuple('torchk.graph:KerasTensor.' + name for name in (
                '__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__',
                '__truediv__', '__rtruediv__', '__floordiv__', '__rfloordiv__', '__mod__',
                '__rmod__', '__pow__', '__rpow__', '__matmul__', '__rmatmul__', '__and__',
                '__rand__', '__or__', '__ror__', '__xor__', '__rxor__', '__lt__', '__le__',
                '__gt__', '__ge__', '__neg__', '__abs__', '__invert__', '__getitem__')),
            'torchk.keras.engine.functional:operator_as_op_layer', WRAP,
            "tf.keras' Python operators on a functional model's Keras tensors make op layers "
            '(TFOpLambda)',
            'tests/keras_facade/test_op_layers.py::'
            'test_operators_are_the_op_layers_tf_keras_makes'),
    _facade(('keras.initializers:get',), 'torchk.keras.initializers:none_gets_none', WRAP,
            "tf.keras' initializers.get(None) is None (initializers.py:522 raises)",
            'tests/keras_facade/test_initializers.py::test_no_initializer_is_add_weights_default'),
    _facade(('keras.layers.core:Dense.call',), 'torchk.keras.layers.core:casting_integer_inputs',
            WRAP, "tf.keras' Dense casts integer and bool inputs to its dtype",
            'tests/keras_facade/test_core_layers.py::'
            'test_dense_casts_integer_inputs_to_its_dtype'),
    _facade(('keras.engine.base_layer:Layer.losses',),
            'torchk.keras.engine.training:eager_layer_losses', WRAP,
            "tf.keras' Layer.losses: an eager call's losses",
            'tests/keras_facade/test_eager.py::'
            'test_losses_of_an_eager_layer_call_are_tensors_that_differentiate'),
    _facade(('keras.engine.base_layer:Layer.trainable_variables',),
            'torchk.keras.eager:trainable_variables', SET,
            "tf.keras' name of trainable_weights",
            'tests/keras_facade/test_eager.py::test_layer_variables_are_its_weights',
            as_property=True),
    _facade(('keras.engine.base_layer:Layer.non_trainable_variables',),
            'torchk.keras.eager:non_trainable_variables', SET,
            "tf.keras' name of non_trainable_weights",
            'tests/keras_facade/test_eager.py::test_layer_variables_are_its_weights',
            as_property=True),
    _facade(('keras.engine.base_layer:Layer.variables',), 'torchk.keras.eager:variables', SET,
            "tf.keras' name of weights",
            'tests/keras_facade/test_eager.py::test_layer_variables_are_its_weights',
            as_property=True),
    _facade(('torchk.tf.namespaces:eager',), 'torchk.keras.eager:eager_unless_tracing', WRAP,
            "tf ops in a layer's traced call record on its variables",
            'tests/keras_facade/test_base_layer.py::test_endpoint_layer_trains'),
    _facade(('torchk.variables:Variable.assign', 'torchk.variables:Variable.assign_add',
             'torchk.variables:Variable.assign_sub', 'torchk.variables:Variable.get_shape'),
            'torchk.keras.eager:weights_assign_as_tf_variables', REGISTER,
            "tf.keras metrics' update_state assigns their weights as tf.Variables",
            'tests/keras_facade/test_eager.py::'
            'test_variable_written_in_an_eager_call_is_updated_and_returned'),
    _facade(('keras.utils.metrics_utils:update_state_wrapper',),
            'torchk.keras.eager:eager_update_state_wrapper', WRAP,
            "tf.keras' metrics update at once on values",
            'tests/keras_facade/test_eager.py::test_metric_update_state_and_result'),
    _facade(('keras.utils.metrics_utils:result_wrapper',),
            'torchk.keras.eager:eager_result_wrapper', WRAP,
            "tf.keras' metric results computed at once after eager updates",
            'tests/keras_facade/test_eager.py::test_metric_update_state_and_result'),
    _facade(('keras.metrics:Metric.__call__',), 'torchk.keras.eager:eager_metric_call', WRAP,
            'a metric called on values updates and returns its result at once',
            'tests/keras_facade/test_eager.py::test_metric_call_accumulates'),
    _facade(('keras.metrics:Metric.reset_state',), 'torchk.keras.eager:reset_state', SET,
            "tf.keras' name of reset_states",
            'tests/keras_facade/test_metrics.py::test_result_before_any_update_is_zero'),
    _facade(('keras.losses:Loss.__init__',), 'torchk.keras.losses:auto_reduction', WRAP,
            "tf.keras' reduction='auto'",
            'tests/keras_facade/test_losses.py::test_auto_reduction_is_the_mean_over_the_batch'),
    _facade(('keras.losses:LossFunctionWrapper.call',),
            'torchk.keras.losses:squeezed_predictions', WRAP,
            "tf.keras' LossFunctionWrapper squeezes a last axis of 1",
            'tests/keras_facade/test_losses.py::test_loss_classes_squeeze_a_last_axis_of_one'),
    _facade(('keras.metrics:Reduce.result',),
            'torchk.keras.metrics:mean_results_zero_before_updates', WRAP,
            "tf.keras' means of no values are 0 (divide_no_nan)",
            'tests/keras_facade/test_metrics.py::test_result_before_any_update_is_zero'),
    _facade(('keras.metrics:RootMeanSquaredError.result',),
            'torchk.keras.metrics:root_mean_squared_error_result', SET,
            "tf.keras' means of no values are 0 (divide_no_nan)",
            'tests/keras_facade/test_metrics.py::test_result_before_any_update_is_zero'),
    _facade(('keras.layers.normalization:BatchNormalization.call',),
            'torchk.keras.layers.normalization:frozen_batch_normalization_infers', WRAP,
            "tf.keras 2's frozen BatchNormalization infers, in training too",
            'tests/keras_facade/test_recurrent.py::'
            'test_frozen_batch_normalization_infers_in_training'),
    _facade(('keras.layers.convolutional:_Conv.convolution_op',),
            'torchk.keras.layers.convolutional:convolution_op', SET,
            "tf.keras 2.7's Conv.convolution_op",
            'tests/keras_facade/test_convolutional.py::'
            'test_convolution_op_is_the_layers_convolution'),
    _facade(('keras.layers.convolutional:_Conv.call',),
            'torchk.keras.layers.convolutional:call', SET,
            "a convolution layer's call through its convolution_op, which a subclass may "
            'override',
            'tests/keras_facade/test_convolutional.py::'
            'test_an_overridden_convolution_op_is_what_the_layer_computes'),
    _facade(tuple('keras.layers.recurrent:RNN.' + name for name in (
                '__call__', 'call', 'build', 'compute_output_shape', 'compute_mask',
                'get_initial_state', 'states', 'reset_states', 'assert_input_compatibility')),
            'torchk.keras.layers.recurrent:nested_structures', WRAP,
            "tf.keras' RNN over cells of nested inputs, states and outputs (keras-io's RNN "
            'guide); flat calls and cells stay Keras 2.3.1\'s',
            'tests/keras_facade/test_nested_rnn.py::test_functional_model_matches_tf'),
    _facade(('keras.engine.base_layer:Layer.add_weight',),
            'torchk.keras.engine.tracking:add_weight_named', WRAP,
            "a weight keeps its name in TF's object graph, and a pending checkpoint restore "
            'gives it its value when it is made',
            'tests/tf/test_checkpoint.py::test_deferred_restoration_as_in_tf_guide'),
    _facade(('keras.engine.base_layer:Layer.__setattr__',),
            'torchk.keras.engine.tracking:setattr_told_to_restorations', WRAP,
            'a pending checkpoint restore of a layer gets what is set on it later (a '
            'tf.Variable made in build, a sublayer)',
            'tests/tf/test_checkpoint.py::test_deferred_restoration_as_in_tf_guide'),
    _facade(('keras.engine.base_layer:Layer.submodules',
             'keras.engine.base_layer:Layer.name_scope',
             'keras.engine.base_layer:Layer.with_name_scope',
             'keras.engine.base_layer:Layer._flatten'),
            'torchk.keras.engine.tracking:layers_as_modules', REGISTER,
            "tf.keras' layers are tf.Modules (submodules, name scopes, _flatten)",
            'tests/tf/test_module.py::test_keras_layers_are_modules'),
    _facade(('keras:__getattr__',), 'torchk.keras._facade:tf_keras_namespaces_on_keras',
            REGISTER,
            "TF 2.13-2.15's `import keras` was tf.keras: `keras.saving`, `keras.mixed_precision` "
            'and `keras.experimental` of the facade (Keras 2.3.1 has none of them)',
            'tests/keras_facade/test_namespaces.py::test_keras_gets_tf_keras_only_namespaces'),
)

_MISSING = object()
_ALL = '*'
# (class, attribute, override, implementation) of the SUBCLASSES overrides applied.
_INHERITED = []


def resolve(path):
    """The object `'module:name.attribute'` names (the module imported if needed)."""
    module_name, _, attribute_path = path.partition(':')
    value = importlib.import_module(module_name)
    for part in attribute_path.split('.'):
        value = getattr(value, part)
    return value


def _split(target):
    """`'module:Class.attribute'` -> (module name, owner path, attribute)."""
    module_name, _, path = target.partition(':')
    owner_path, _, attribute = path.rpartition('.')
    return module_name, owner_path, attribute


def _owner(target):
    """The module or class that holds `target`'s attribute, and the attribute's name; None
    if its module is not imported, or if this Keras release has no such class (Keras 2.2.5
    has no `keras.losses.Loss`: `tests/test_overrides.py` checks every target under 2.3.1)."""
    module_name, owner_path, attribute = _split(target)
    owner = sys.modules.get(module_name)
    for part in owner_path.split('.') if owner_path else ():
        owner = getattr(owner, part, None)
    return owner, attribute


def _value(owner, attribute):
    """The attribute as its owner holds it: a class's own or inherited descriptor, not what
    the descriptor gives."""
    if isinstance(owner, type):
        for cls in owner.__mro__:
            if attribute in vars(cls):
                return vars(cls)[attribute]
        return _MISSING
    return vars(owner).get(attribute, _MISSING)


def _chain(owner, attribute):
    installed, chain = vars(owner).get(MARKER, {}).get(attribute, (_MISSING, ()))
    if attribute != _ALL and installed is not _value(owner, attribute):
        return ()
    return chain


def _record(owner, attribute, chain):
    records = dict(vars(owner).get(MARKER, {}))
    records[attribute] = (_value(owner, attribute) if attribute != _ALL else None, chain)
    setattr(owner, MARKER, records)


def installed_chain(target):
    """The implementations of the overrides that made `target`'s current value, innermost
    first; () if none did (or its module is not imported)."""
    owner, attribute = _owner(target)
    return () if owner is None else _chain(owner, attribute)


def _function(value):
    if isinstance(value, (classmethod, staticmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    return value


def _like(original, function):
    """`function` as the same kind of descriptor as `original`."""
    if isinstance(original, classmethod):
        return classmethod(function)
    if isinstance(original, staticmethod):
        return staticmethod(function)
    if isinstance(original, property):
        return property(function, original.fset, original.fdel)
    return function


def _wrap(owner, attribute, override, implementation):
    original = _value(owner, attribute)
    if original is _MISSING:
        return
    chain = _chain(owner, attribute)
    if override.implementation in chain:
        return
    replacement = implementation(_function(original))
    if replacement is _function(original):  # the implementation declined
        return
    setattr(owner, attribute, _like(original, replacement))
    _record(owner, attribute, chain + (override.implementation,))


def _set(owner, attribute, override):
    if override.implementation in _chain(owner, attribute):
        return
    value = resolve(override.implementation)
    setattr(owner, attribute, property(value) if override.as_property else value)
    _record(owner, attribute, (override.implementation,))
    if isinstance(owner, type):
        for base, name, inherited, implementation in _INHERITED:
            if name == attribute and issubclass(owner, base):
                _wrap(owner, attribute, inherited, implementation)


def _wrap_subclasses(owner, attribute, override):
    """`SUBCLASSES`: the attribute of `owner` and of every subclass that defines it, and of
    those defined later (`__init_subclass__`)."""
    if override.implementation in _chain(owner, '__init_subclass__'):
        return
    implementation = resolve(override.implementation)
    pending = [owner]
    while pending:
        cls = pending.pop()
        if attribute in vars(cls) and callable(vars(cls)[attribute]):
            _wrap(cls, attribute, override, implementation)
        pending.extend(cls.__subclasses__())
    previous = vars(owner).get('__init_subclass__')

    def __init_subclass__(cls, **kwargs):
        if previous is not None:
            previous.__func__(cls, **kwargs)
        else:
            super(owner, cls).__init_subclass__(**kwargs)
        if attribute in vars(cls) and callable(vars(cls)[attribute]):
            _wrap(cls, attribute, override, implementation)
    owner.__init_subclass__ = classmethod(__init_subclass__)
    _record(owner, '__init_subclass__', _chain(owner, '__init_subclass__')
            + (override.implementation,))
    _INHERITED.append((owner, attribute, override, implementation))


def _applies(override, owner, attribute):
    return all(CONDITIONS[condition](owner, attribute) for condition in override.when)


def _apply(override, targets):
    """Applies `override` to those of `targets` (all of its own) whose modules are
    imported."""
    if override.kind == REGISTER:
        owner, attribute = _owner(targets[0])
        module = sys.modules.get(_split(targets[0])[0])
        if module is None or not _applies(override, owner, attribute):
            return
        if all(override.implementation in _chain(*_owner(t)) for t in override.targets):
            return
        resolve(override.implementation)(module)
        for target in override.targets:
            owner, attribute = _owner(target)
            if attribute == _ALL or _value(owner, attribute) is not _MISSING:
                _record(owner, attribute, (override.implementation,))
        return
    for target in targets:
        owner, attribute = _owner(target)
        if owner is None or not _applies(override, owner, attribute):
            continue
        if override.kind == WRAP:
            _wrap(owner, attribute, override, resolve(override.implementation))
        elif override.kind == SET:
            _set(owner, attribute, override)
        elif override.kind == SUBCLASSES:
            _wrap_subclasses(owner, attribute, override)
        else:
            raise ValueError('Override %s: unknown kind %r; expected one of %s.'
                             % (override.implementation, override.kind,
                                (WRAP, SET, REGISTER, SUBCLASSES)))


_BACKEND_MODULES = frozenset(override.trigger(target) for override in OVERRIDES
                             if override.scope == BACKEND for target in override.targets)


def backend_modules():
    """The names of the modules whose import applies `BACKEND` overrides."""
    return _BACKEND_MODULES


def apply_backend(module_names):
    """Applies the `BACKEND` overrides that the import of `module_names` (modules that have
    run) applies, in the order of `OVERRIDES`."""
    names = set(module_names)
    for override in OVERRIDES:
        if override.scope == BACKEND:
            targets = [t for t in override.targets if override.trigger(t) in names]
            if targets:
                _apply(override, targets)


def install_facade():
    """Applies the `FACADE` overrides, in the order of `OVERRIDES` (`torchk.keras` calls it
    once Keras is imported), importing the modules they change."""
    for override in OVERRIDES:
        if override.scope == FACADE:
            for target in override.targets:
                importlib.import_module(_split(target)[0])
            _apply(override, override.targets)
