"""tf.keras' layers and models in TF's object graph (`torchk.tf.trackable`): what
`tf.train.Checkpoint`, TF-format `save_weights` and `tf.saved_model.save` save of them, named
as tf.keras names them, and the hooks that give what a layer makes after a restore its value.

A layer's children are the weights it made (`add_weight`), by their names, then its
attributes that hold variables, layers, modules, or lists and dicts of them (the engine's
bookkeeping aside); a Sequential or functional model's layers, as `layer_with_weights-<k>`
(the k-th layer that has weights) and `layer-<i>`; a compiled model's `optimizer`
(`optimizers/slots.py`).

Overrides of Keras 2.3.1 (entries of `torchk.overrides`):
- `Layer.add_weight` (`add_weight_named`): the weight keeps the name given, its name in the
  object graph, and a pending restore of the layer gives it its value (a model restored
  before its first call gets its weights when it builds them).
- `Layer.__setattr__` (`setattr_told_to_restorations`): a pending restore of the layer gets
  what is set (a `tf.Variable` made in `build`, a sublayer made later).
- Keras layers are `tf.Module`s (`layers_as_modules`).
"""
import functools

from keras.engine import base_layer
from keras.engine.sequential import Sequential

from ...tf import module as tf_module
from ...tf import trackable

# Attributes of Keras 2.3.1's (and the facade's) layers and models that are the engine's
# bookkeeping: they hold weights, layers and metrics already saved under their own names,
# or symbols, nodes and compiled functions, never saved.
ENGINE_ATTRIBUTES = frozenset((
    '_trainable_weights', '_non_trainable_weights', '_layers', '_metrics', '_inbound_nodes',
    '_outbound_nodes', '_updates', '_losses', '_per_input_losses', '_per_input_updates',
    '_initial_weights', '_input_layers', '_output_layers', '_network_nodes',
    '_nodes_by_depth', '_layers_by_depth', '_output_mask_cache', '_output_tensor_cache',
    '_output_shape_cache', 'inputs', 'outputs', 'input_names', 'output_names', '_feed_inputs',
    '_feed_outputs', '_feed_targets', 'targets', '_collected_trainable_weights',
    '_compile_metric_functions', '_compile_metrics', '_compile_weighted_metrics',
    '_per_output_metrics', '_per_output_weighted_metrics', '_output_loss_metrics',
    'sample_weights', '_feed_sample_weights', 'loss_functions', '_feed_loss_fns', 'optimizer',
    'compiled_loss', 'compiled_metrics', 'history', 'train_function', 'test_function',
    'predict_function', 'metrics_tensors', 'stateful_metric_functions', 'states',
    'input_spec', 'total_loss'))
# Of those, the ones `tf.Module._flatten` does not walk either (it walks the weights' lists
# and sublayers, as TF's layers keep them too).
_NOT_WALKED = ENGINE_ATTRIBUTES - {'_trainable_weights', '_non_trainable_weights', '_layers'}


def _short_name(weight):
    return trackable.variable_full_name(weight).rsplit('/', 1)[-1]


def _own_weights(layer, attribute_ids):
    """`[(name, weight)]` of the weights the layer made (its own, not its sublayers')."""
    weights = (list(layer.__dict__.get('_trainable_weights', ()))
               + list(layer.__dict__.get('_non_trainable_weights', ())))
    named = []
    for weight in weights:
        name = getattr(weight, '_torchk_weight_name', None)
        if name is None and id(weight) in attribute_ids:
            continue  # a variable set as an attribute: saved under the attribute's name
        named.append((name or _short_name(weight), weight))
    return named


def _attributes(layer):
    return [(name, value) for name, value in vars(layer).items()
            if name not in ENGINE_ATTRIBUTES and not name.startswith('_torchk')
            and trackable.holds_trackable(value)]


def _model_layers(model):
    """`[(name, layer)]` of a Sequential or functional model's layers, as tf.keras names
    them."""
    entries = []
    with_weights = 0
    for i, layer in enumerate(model.layers):
        if layer.weights:
            entries.append(('layer_with_weights-%d' % with_weights, layer))
            with_weights += 1
        entries.append(('layer-%d' % i, layer))
    return entries


def layer_children(layer):
    """`[(local name, child)]` of a Keras layer or model in the object graph."""
    attributes = _attributes(layer)
    attribute_ids = {id(value) for _, value in attributes}
    children = _own_weights(layer, attribute_ids)
    if isinstance(layer, Sequential) or getattr(layer, '_is_graph_network', False):
        children += _model_layers(layer)
    children += attributes
    optimizer = layer.__dict__.get('optimizer')
    if optimizer is not None and trackable.is_trackable(optimizer):
        children.append(('optimizer', optimizer))
    return children


def add_weight_named(keras_add_weight):
    """`Layer.add_weight` whose weight keeps its name for the object graph and gets its
    value from a pending restore of the layer."""
    @functools.wraps(keras_add_weight)
    def add_weight(self, name=None, *args, **kwargs):
        weight = keras_add_weight(self, name, *args, **kwargs)
        if name is not None:
            weight._torchk_weight_name = str(name)
            trackable.child_added(self, str(name), weight)
        return weight
    return add_weight


def setattr_told_to_restorations(keras_setattr):
    """`Layer.__setattr__` telling a pending restore of the layer what was set."""
    @functools.wraps(keras_setattr)
    def __setattr__(self, name, value):
        keras_setattr(self, name, value)
        if trackable._PENDING:
            trackable.child_added(self, name, value)
    return __setattr__


def register_views():
    """Registers the view of Keras layers and optimizers in TF's object graph (torchk's own
    table, `trackable.register_view`: nothing of Keras changes)."""
    from ..optimizers import slots
    trackable.register_view(base_layer.Layer, trackable.View(children=layer_children))
    slots.install()


def layers_as_modules(base_layer_module):
    """Override (`torchk.overrides`, REGISTER into `keras.engine.base_layer`): Keras layers
    are `tf.Module`s (`submodules`, `name_scope`, `with_name_scope`, `_flatten`), whose
    `_flatten` does not walk the engine's bookkeeping."""
    tf_module.install_on_layers(base_layer_module.Layer, _NOT_WALKED)
