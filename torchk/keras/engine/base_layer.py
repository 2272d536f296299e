"""tf.keras 2's call conventions on Keras 2.3.1's `Layer.__call__` (`tf_keras_call`, an override
of `torchk.overrides`, puts them there).

Each difference from Keras 2.3.1 is one function here:
- `bind_call_arguments`: positional arguments after `inputs` bind to `call`'s parameters by
  name, as tf.keras binds them (`layer(logits, targets)`), and the inputs may be given by
  the name of `call`'s first parameter (`layer(logits=..., targets=...)`); a layer that
  tf.keras calls with tensors by keyword and Keras 2 with one input list
  (`MultiHeadAttention(query, value, key=..., attention_mask=...)`) is given the list.
- `flatten_call` (calls with tensor arguments): tensors among the keyword arguments, and an
  explicit `mask`, are inputs of the call, as in tf.keras. They join the node's input tensors,
  and the node's arguments keep where each goes (`CALL_SPEC`), so that a functional model
  replays the call (`functional.py`) and saves and loads it.
- `training_context`: a call without `training` takes the enclosing call's, as tf.keras
  propagates it into nested calls; a layer whose `call` has no `training` parameter (a
  functional model) passes the value given to the layers it calls (kept in its node); a
  `call` whose `training` parameter has no default gets None (the learning phase) when no
  value is given, as tf.keras always passes one.
- eager calls (values, not symbols: `eager.call_layer`) take the `_keras_mask` of their
  inputs as their mask, and their outputs carry the mask they compute, as in tf.keras.
- `add_weight_with_tf_keras_defaults`: `add_weight` without an initializer initialises
  floating weights with `glorot_uniform` and others with zeros, without a shape makes a
  scalar, and takes (and has no use for) tf.keras' distribution arguments.
- `node_of_tuple_outputs`: a `call` that returns a tuple of tensors has that many outputs.
- `recorded_call_first`: the `__call__` of Keras' recurrent layers and `Bidirectional` passes
  a recorded call straight to `Layer.__call__`.
- a Keras tensor's `_keras_mask` is the mask computed for it (`eager.mask_of`).
- `add_metric_with_aggregation`: `add_metric` takes tf.keras' `aggregation='mean'`.
- `compute_mask_if_supported`: a layer that does not support masking gives no mask to the
  next one, where Keras 2.3.1 raises (`Embedding(mask_zero=True)` then `Flatten`).
- structured calls: a call whose inputs are a dict, a tuple (a namedtuple too) or nested
  lists (`is_structured`), or that a layer takes as one nested input (`call_structured`: a
  recurrent layer's nested inputs), gets them as they are, where Keras 2.3.1 reads a tuple
  as a list of inputs: it records one node of their flat tensors (`CALL_SPEC`), its `build`
  gets their shapes in that structure (`build_shape`), and it returns what `call` returns, a
  structure included, the node holding the flat outputs (`flat_call_outputs`).
- `python_values_as_tensor`: a layer called on Python numbers (a number, nested lists of
  them) is called on one tensor of them (`model(1)` on a scalar), and one called on pandas
  data on a tensor of its values, as tf.keras converts such inputs.
"""
import contextlib
import functools
import inspect
import threading

import numpy as np
import torch

from keras import backend as K
from keras.engine import base_layer
from keras.layers import convolutional_recurrent, recurrent
from keras.utils.generic_utils import has_arg, to_list, unpack_singleton

from ... import structure
from ...call_spec import (CALL_SPEC, CALL_TENSOR_KEYWORDS, TF_KERAS_FIRST_INPUT, call_filled,
                          call_template, listed_keyword_tensors)
from ... import config
from ... import tf_dtypes
from .. import eager

_context = threading.local()
_symbolic = threading.local()


@contextlib.contextmanager
def symbolic_losses():
    """Within this block Keras 2.3.1 builds its training graph (`compile`, its `fit` and
    `evaluate`): models' `losses` are Keras' symbolic ones, and Python operators on a
    model's outputs are the loss's computation, not layers of the model."""
    depth = getattr(_symbolic, 'depth', 0)
    _symbolic.depth = depth + 1
    try:
        yield
    finally:
        _symbolic.depth = depth


def in_symbolic_block():
    """Whether Keras 2.3.1 is building its training graph (`symbolic_losses`)."""
    return getattr(_symbolic, 'depth', 0) > 0


@contextlib.contextmanager
def training_context(training):
    """Within this block a layer called without `training` is called with `training`
    (None keeps the enclosing block's)."""
    previous = getattr(_context, 'training', None)
    if training is not None:
        _context.training = training
    try:
        yield
    finally:
        _context.training = previous


def current_training():
    """The `training` of the enclosing call (None outside any call that set one)."""
    return getattr(_context, 'training', None)


@functools.lru_cache(maxsize=None)
def _positional_parameters(call):
    """The names of a `call` function's parameters after `self` and `inputs` that may be
    given by position."""
    parameters = list(inspect.signature(call).parameters.values())[2:]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return None
    return tuple(p.name for p in parameters
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


@functools.lru_cache(maxsize=None)
def _requires_training(call):
    """Whether a `call` function has a `training` parameter without a default."""
    parameter = inspect.signature(call).parameters.get('training')
    return parameter is not None and parameter.default is parameter.empty


@functools.lru_cache(maxsize=None)
def _first_parameter(call):
    """The name of a `call` function's first parameter after `self` (its inputs, which
    tf.keras also takes by that name), or None."""
    parameters = list(inspect.signature(call).parameters.values())[1:2]
    if parameters and parameters[0].kind in (parameters[0].POSITIONAL_ONLY,
                                             parameters[0].POSITIONAL_OR_KEYWORD):
        return parameters[0].name
    return None


def _keyword_list_class(layer):
    return next((cls.__name__ for cls in type(layer).__mro__
                 if cls.__name__ in CALL_TENSOR_KEYWORDS), None)


def bind_call_arguments(layer, args, kwargs):
    """tf.keras' reading of `layer(*args, **kwargs)`: the inputs (the first argument, or
    `inputs=`), and every other argument by name.

    # Returns
        `(inputs, keywords)`.

    # Raises
        TypeError: if the call has no inputs, too many positional arguments, or one given
            both by position and by name.
    """
    keywords = dict(kwargs)
    listing = _keyword_list_class(layer)
    if not args:
        first = _first_parameter(getattr(type(layer).call, '__func__', type(layer).call))
        name = next((n for n in (first, 'inputs', TF_KERAS_FIRST_INPUT.get(listing))
                     if n in keywords), None)
        if name is None:
            raise TypeError('%s (%s) was called without inputs (`%s`).'
                            % (type(layer).__name__, layer.name, first or 'inputs'))
        args = (keywords.pop(name),)
    inputs, rest = args[0], args[1:]
    if isinstance(inputs, tuple) and _holds_only(inputs, _is_keras_tensor):
        inputs = list(inputs)  # Keras 2.3.1 takes a list of input tensors, tf.keras any tuple
    if listing is not None:
        names = tuple(keyword for keyword, _ in CALL_TENSOR_KEYWORDS[listing])
    elif rest:
        names = _positional_parameters(getattr(type(layer).call, '__func__', type(layer).call))
        if names is None:
            raise TypeError('%s (%s): its call takes *args; tf.keras binds the arguments after '
                            'inputs by name, give them by keyword.'
                            % (type(layer).__name__, layer.name))
    else:
        names = ()
    if len(rest) > len(names):
        raise TypeError('%s (%s).call takes %d positional argument(s) after inputs (%s); got %d.'
                        % (type(layer).__name__, layer.name, len(names), ', '.join(names),
                           len(rest)))
    for name, value in zip(names, rest):
        if name in keywords:
            raise TypeError('%s (%s) got the argument %r both by position and by name.'
                            % (type(layer).__name__, layer.name, name))
        keywords[name] = value
    if listing is not None:
        listed = listed_keyword_tensors(listing, keywords)
        missing = [keyword for keyword, tensor in listed if tensor is None]
        if missing:
            raise ValueError('%s (%s) was called without the tensor %r, which Keras 2 takes in '
                             'its input list before %r.' % (type(layer).__name__, layer.name,
                                                           missing[0], listed[-1][0]))
        if listed:
            inputs = [inputs] + [tensor for _, tensor in listed]
    return inputs, keywords


def _is_python_number(value):
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def python_values_as_tensor(inputs):
    """Inputs given as Python numbers (`model(1)`, `layer([[2.0, 2.0, 2.0]])`: a number or
    nested lists of them) as one tensor (floats as `floatx`, integers as int32), and a pandas
    `DataFrame` or `Series` (also in a structure: a dict of columns) as a tensor of its values
    (TF's pandas tutorial calls a layer on `df.iloc[:3]`), as tf.keras converts such inputs; other inputs as they are."""
    if any(tf_dtypes.is_pandas(leaf) for leaf in structure.flatten(inputs)):
        return structure.map_structure(
            lambda leaf: tf_dtypes.value_to_tensor(leaf) if tf_dtypes.is_pandas(leaf)
            else leaf, inputs)
    if not (_is_python_number(inputs) or isinstance(inputs, (list, tuple))
            and _holds_only(inputs, _is_python_number)):
        return inputs
    value = np.asarray(inputs)
    if value.dtype == object:
        return inputs  # ragged: not one tensor
    if value.dtype.kind == 'f':
        value = value.astype(K.floatx())
    elif value.dtype.kind == 'i':
        value = value.astype('int32')
    return torch.as_tensor(value, device=config.device())


def _holds_only(value, is_tensor):
    leaves = eager.leaves(value)
    return bool(leaves) and all(is_tensor(leaf) for leaf in leaves)


def _is_keras_tensor(value):
    return hasattr(value, '_keras_history')


def _is_eager_tensor(value):
    return isinstance(value, (torch.Tensor, np.ndarray))


def flatten_call(inputs, tensors, mask=None):
    """The flat list of a call's tensors and its `CALL_SPEC`.

    # Arguments
        inputs: the call's inputs (a tensor, or lists and dicts of them).
        tensors: `{keyword: tensor(s)}`, the call's other tensor arguments.
        mask: the mask given for `inputs` (or None).
    """
    flat = []

    def template(value):
        return call_template(value, lambda v: not isinstance(v, (list, tuple, dict)), flat)
    spec = {'inputs': template(inputs),
            'keywords': {k: template(v) for k, v in sorted(tensors.items())}}
    if mask is not None:
        spec['mask'] = template(mask)
    return flat, spec


def unflatten_call(spec, flat, flat_masks=None):
    """`(inputs, tensor keywords, inputs' mask)` of a call from its flat tensors (and their
    masks, for the inputs' mask when the call was given none)."""
    flat = to_list(flat)
    inputs = call_filled(spec['inputs'], flat)
    keywords = {k: call_filled(t, flat) for k, t in spec['keywords'].items()}
    if 'mask' in spec:
        mask = call_filled(spec['mask'], flat)
    elif flat_masks is not None:
        mask = call_filled(spec['inputs'], to_list(flat_masks))
    else:
        mask = None
    return inputs, keywords, mask


def _is_all_none(mask):
    return all(m is None for m in eager.leaves(mask))


def is_structured(nest):
    """Whether a call's inputs or outputs form a structure that tf.keras keeps: a dict, a
    tuple (a namedtuple too), or lists nested in a list (a tensor and a flat list of tensors
    are Keras 2.3.1's own forms)."""
    if isinstance(nest, (dict, tuple)):
        return True
    return isinstance(nest, list) and any(isinstance(item, (list, tuple, dict))
                                          for item in nest)


def build_shape(inputs):
    """The input shape a layer's `build` gets for `inputs`: one shape, or a list of them
    (Keras 2.3.1's), or for structured inputs (tuples, dicts, nests) their shapes in that
    structure, as tf.keras gives them."""
    if not is_structured(inputs):
        return unpack_singleton([K.int_shape(x) for x in to_list(inputs)])
    return structure.map_structure(K.int_shape, inputs)


def flat_call_outputs(outputs, replace=None):
    """What a `call` returned, and its tensors as the flat list a node holds: a structure
    (`is_structured`: a dict, a tuple, nested lists) flattened in `tf.nest`'s order and kept
    as it is; a tensor or a list as Keras 2.3.1 returns them.

    # Arguments
        outputs: the call's result.
        replace: optional function applied to each tensor (both results hold its results).
    """
    flat = structure.flatten(outputs) if is_structured(outputs) else to_list(outputs)
    if replace is not None:
        flat = [replace(x) for x in flat]
    if is_structured(outputs):
        return structure.pack_as(outputs, flat), flat
    return unpack_singleton(flat), flat


def flat_output_masks(masks, count):
    """The masks `compute_mask` gave for a call of `count` outputs, one per output: masks
    nested as the outputs are flattened alike, one mask (or None) repeated."""
    if isinstance(masks, (list, tuple, dict)):
        flat = structure.flatten(masks)
        if len(flat) == count:
            return flat
        if count > 1 and len(flat) == 1:
            return flat * count
        return [None] * count if all(m is None for m in flat) else flat
    return [masks] * count


def _assert_input_compatibility(layer, inputs):
    """The layer's input checks, where they apply: `Layer`'s own reads a tensor or a flat
    list (a structure, a dict of a model's inputs, is no Keras tensor to it); a layer's own
    checks (`RNN`'s, for nested inputs) read structures too."""
    own = type(layer).assert_input_compatibility is base_layer.Layer.assert_input_compatibility
    if not (is_structured(inputs) and own):
        layer.assert_input_compatibility(inputs)


def call_with_spec(layer, flat, spec, constants):
    """Calls `layer` on symbols the tf.keras way (see `CALL_SPEC`), recording one node whose
    inputs are the flat tensors.

    # Arguments
        layer: a Keras layer.
        flat: the call's tensors (Keras tensors), as `flatten_call` lists them.
        spec: their `CALL_SPEC`.
        constants: the call's other keyword arguments.

    # Returns
        The outputs of `layer.call`.
    """
    flat_masks = to_list(base_layer._collect_previous_mask(flat))
    inputs, tensors, mask = unflatten_call(spec, flat, flat_masks)
    kwargs = dict(constants, **tensors)
    if not _is_all_none(mask) and has_arg(layer.call, 'mask'):
        kwargs['mask'] = mask
    with K.name_scope(layer.name), training_context(spec.get('training')):
        if not layer.built:
            _assert_input_compatibility(layer, inputs)
            layer.build(build_shape(inputs))
            layer.built = True
            if layer._initial_weights is not None:
                layer.set_weights(layer._initial_weights)
        _assert_input_compatibility(layer, inputs)
        given = {id(x) for x in flat}
        outputs, flat_outputs = flat_call_outputs(
            layer.call(inputs, **kwargs),
            lambda x: K.identity(x) if id(x) in given else x)
        output_mask = flat_output_masks(
            layer.compute_mask(inputs, None if _is_all_none(mask) else mask),
            len(flat_outputs))
        layer._add_inbound_node(
            input_tensors=flat, output_tensors=flat_outputs, input_masks=flat_masks,
            output_masks=output_mask, input_shapes=[K.int_shape(x) for x in flat],
            output_shapes=[K.int_shape(x) for x in flat_outputs],
            arguments=dict(constants, **{CALL_SPEC: spec}))
        if getattr(layer, 'activity_regularizer', None) is not None:
            with K.name_scope('activity_regularizer'):
                layer.add_loss([layer.activity_regularizer(x) for x in flat_outputs],
                               inputs=flat)
    return outputs


def _training_given(training):
    """`training` as a node keeps it: Python truth values only."""
    return bool(training) if isinstance(training, (bool, int, np.bool_)) else None


def _call_symbolically(layer, keras_call, inputs, keywords, structured=False):
    accepts_training = has_arg(layer.call, 'training')
    training = keywords.get('training')
    if training is None and accepts_training and current_training() is not None:
        keywords['training'] = training = current_training()
    if not accepts_training:
        keywords.pop('training', None)
    elif 'training' not in keywords and _requires_training(
            getattr(type(layer).call, '__func__', type(layer).call)):
        keywords['training'] = None  # tf.keras passes it always (None: the learning phase)
    mask = keywords.get('mask')
    if mask is not None and _holds_only(mask, _is_keras_tensor):
        del keywords['mask']
    else:
        mask = None
    tensors = {k: v for k, v in keywords.items()
               if k not in ('training', 'mask') and _holds_only(v, _is_keras_tensor)}
    given_training = None if accepts_training else _training_given(training)
    if (not structured and not tensors and mask is None and given_training is None
            and not is_structured(inputs)
            and not is_structured(getattr(layer, '_nested_outputs', None))):
        with training_context(training):
            return keras_call(layer, inputs, **keywords)
    constants = {k: v for k, v in keywords.items() if k not in tensors}
    flat, spec = flatten_call(inputs, tensors, mask)
    if given_training is not None:
        spec['training'] = given_training
    return call_with_spec(layer, flat, spec, constants)


def _keras_masks(inputs):
    """The `_keras_mask`s of eager inputs, nested as `inputs` (None if none has one)."""
    masks = eager.map_structure(lambda x: getattr(x, '_keras_mask', None), inputs)
    return None if _is_all_none(masks) else masks


def _call_eagerly(layer, inputs, keywords):
    training = keywords.pop('training', None)
    if training is None:
        training = current_training()
    training = eager.training_value(training)
    mask = keywords.pop('mask', None)
    if mask is None:
        mask = _keras_masks(inputs)
    elif not _holds_only(mask, _is_eager_tensor):
        keywords['mask'], mask = mask, None
    tensors = {k: v for k, v in keywords.items() if _holds_only(v, _is_eager_tensor)}
    constants = {k: v for k, v in keywords.items() if k not in tensors}
    if has_arg(layer.call, 'training'):
        constants['training'] = training
    if not tensors and mask is None:
        values, spec = inputs, None
    else:
        values, spec = flatten_call(inputs, tensors, mask)
        constants[CALL_SPEC] = spec

    def trace(symbols):
        with training_context(training):
            return layer(symbols, **constants)
    return eager.call_layer(layer, values, training, repr(sorted(constants.items())), trace)


def compute_mask_if_supported(self, inputs, mask=None):
    """`Layer.compute_mask` as tf.keras' layers apply it: the mask passes through a layer
    that supports masking, and stops at one that does not."""
    return mask if self.supports_masking else None


# tf.keras' `add_weight` arguments about distribution and graph variables: one device,
# eager variables, nothing to do with them.
_VARIABLE_PLACEMENT_ARGUMENTS = frozenset(('use_resource', 'synchronization', 'aggregation',
                                           'partitioner', 'experimental_autocast', 'caching_device'))


def _placement_arguments_checked(layer, kwargs):
    unknown = sorted(set(kwargs) - _VARIABLE_PLACEMENT_ARGUMENTS)
    if unknown:
        raise TypeError('%s (%s).add_weight got unexpected arguments %s.'
                        % (type(layer).__name__, layer.name, unknown))


def _is_floating(dtype):
    """True for a floating dtype (a name, numpy's, torch's or TF's), or None (floatx)."""
    name = K.floatx() if dtype is None else str(getattr(dtype, 'name', dtype))
    return name.replace('torch.', '').startswith(('float', 'bfloat', 'half', 'double'))


def add_weight_with_tf_keras_defaults(keras_add_weight):
    """`Layer.add_weight` with tf.keras' defaults: no `initializer` is `glorot_uniform` for a
    floating dtype (the layer's, if none is given) and `zeros` otherwise, where Keras 2.3.1
    raises; no `shape` is a scalar; `trainable=None` is True."""
    @functools.wraps(keras_add_weight)
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None,
                   regularizer=None, trainable=None, constraint=None, **kwargs):
        _placement_arguments_checked(self, kwargs)
        if initializer is None:
            initializer = 'glorot_uniform' if _is_floating(dtype or self.dtype) else 'zeros'
        return keras_add_weight(self, name=name, shape=() if shape is None else shape,
                                dtype=dtype, initializer=initializer, regularizer=regularizer,
                                trainable=True if trainable is None else trainable,
                                constraint=constraint)
    return add_weight


def metric_add_weight_with_tf_keras_arguments(keras_add_weight):
    """`Metric.add_weight` taking (and having no use for) tf.keras' distribution
    arguments."""
    @functools.wraps(keras_add_weight)
    def add_weight(self, name, shape=(), initializer=None, dtype=None, **kwargs):
        _placement_arguments_checked(self, kwargs)
        return keras_add_weight(self, name, shape=shape, initializer=initializer, dtype=dtype)
    return add_weight


def recorded_call_first(layer_call):
    """Override of the `__call__` of Keras' recurrent layers and `Bidirectional` (which read
    a list input as `[inputs, states...]`): passes a recorded call, whose flat tensors
    `CALL_SPEC` reads, straight to `Layer.__call__`. A convolutional recurrent layer called
    on a tuple (a nested input, which tf.keras' `ConvRNN` does not take either) is refused
    by name (`RNN` takes nested inputs: `torchk.keras.layers.recurrent`)."""
    @functools.wraps(layer_call)
    def __call__(self, *args, **kwargs):
        if CALL_SPEC in kwargs:
            return base_layer.Layer.__call__(self, *args, **kwargs)
        if (args and type(args[0]) is tuple and len(args[0]) > 1
                and isinstance(self, convolutional_recurrent.ConvRNN2D)):
            raise NotImplementedError(
                '%s (%s) was called on a tuple of %d tensors, which tf.keras takes for one '
                'nested input; convolutional recurrent layers take one tensor, or a list '
                '[inputs, *initial_states].' % (type(self).__name__, self.name, len(args[0])))
        return layer_call(self, *args, **kwargs)
    return __call__


def node_of_tuple_outputs(keras_add_inbound_node):
    """Keras 2.3.1's `Layer._add_inbound_node`, taking a tuple of output tensors (a `call`
    returning `output, kernel`) as that many outputs, each with its own shape; Keras took
    the tuple for one tensor."""
    @functools.wraps(keras_add_inbound_node)
    def _add_inbound_node(self, input_tensors, output_tensors, input_masks, output_masks,
                          input_shapes, output_shapes, arguments=None):
        if isinstance(output_tensors, tuple):
            output_tensors = list(output_tensors)
            output_shapes = [K.int_shape(tensor) for tensor in output_tensors]
            if not isinstance(output_masks, (list, tuple)):
                output_masks = [output_masks] * len(output_tensors)
        return keras_add_inbound_node(self, input_tensors, output_tensors, input_masks,
                                      output_masks, input_shapes, output_shapes, arguments)
    return _add_inbound_node


def add_metric_with_aggregation(keras_add_metric):
    """Keras 2.3.1's `add_metric`, taking tf.keras' `aggregation`: `'mean'` (the mean over
    the epoch's batches, Keras' way) or None; tf.keras accepts no other."""
    @functools.wraps(keras_add_metric)
    def add_metric(self, value, name=None, aggregation=None, **kwargs):
        if aggregation not in (None, 'mean'):
            raise ValueError("add_metric: aggregation must be 'mean' or None; got %r."
                             % (aggregation,))
        return keras_add_metric(self, value, name=name, **kwargs)
    return add_metric


def tf_keras_call(keras_call):
    """Override of Keras 2.3.1's `Layer.__call__`: tf.keras' call conventions (see the module
    docstring); calls on values compute at once (`eager.call_layer`)."""
    def __call__(self, *args, **kwargs):
        spec = kwargs.pop(CALL_SPEC, None)
        if spec is not None:  # a recorded call, replayed on its flat tensors
            return _call_recorded(self, to_list(args[0]), spec, kwargs)
        inputs, keywords = bind_call_arguments(self, args, kwargs)
        inputs = python_values_as_tensor(inputs)
        return _call_bound(self, keras_call, inputs, keywords)
    __call__.__doc__ = keras_call.__doc__
    return __call__


def _call_bound(layer, keras_call, inputs, keywords, structured=False):
    """A layer's call on its bound inputs and keyword arguments: eager on values, else
    recorded (see the module)."""
    if eager.is_eager(inputs):
        return _call_eagerly(layer, inputs, keywords)
    training = keywords.get('training')
    if training is None:
        training = current_training()
    with eager.tracing():
        outputs = _call_symbolically(layer, keras_call, inputs, keywords, structured)
    eager.record_layer_state(layer, inputs, training)
    return outputs


def call_structured(layer, inputs, keywords):
    """Calls `layer` on `inputs` kept in their structure (tuples, namedtuples, dicts,
    nests: a recurrent layer's nested inputs), as tf.keras passes them, where Keras 2.3.1
    takes a tuple for a list of inputs: the call is recorded with a `CALL_SPEC`, so that
    `build` gets the shapes and `call` the tensors in that structure, also when a
    functional model replays or loads the node.

    # Arguments
        layer: a Keras layer.
        inputs: a tensor, or a structure of tensors (symbols or values).
        keywords: the call's other arguments, by name.

    # Returns
        The layer's outputs, in the structure its `call` returns them.
    """
    return _call_bound(layer, None, inputs, keywords, structured=True)


def _call_recorded(layer, flat, spec, kwargs):
    """A call given its flat tensors and `CALL_SPEC` (a saved node loading, or an eager
    call's placeholders)."""
    training = kwargs.get('training')
    if not has_arg(layer.call, 'training'):
        kwargs.pop('training', None)
        if _training_given(training) is not None:
            spec = dict(spec, training=_training_given(training))
    with eager.tracing():
        return call_with_spec(layer, flat, spec, kwargs)
