"""tf.keras 2's recurrent layers where they differ from Keras 2.3.1's.

- `GRU` and `GRUCell` apply the reset gate after the recurrent matmul (`reset_after=True`,
  the form tf.keras 2 and cuDNN use; Keras 2.3.1's default is False), so a tf.keras
  script's `GRU(n)` has tf.keras' weights and shapes (a bias of shape `(2, 3 * n)`).
- `nested_structures` puts tf.keras' nested structures on Keras 2.3.1's `RNN` (and so on
  the layers that inherit it): a cell's inputs, states and outputs may be tuples,
  namedtuples, dicts and lists of tensors, its `state_size` and `output_size` nests of
  ints and `TensorShape`s (keras-io's RNN guide, "RNNs with list/dict inputs, or nested
  inputs"). A call is nested when its inputs, initial states or constants are structures,
  or when the cell's sizes are not Keras 2.3.1's (an int, or a list of ints); every other
  call is Keras 2.3.1's, unchanged (LSTM and GRU keep their fast paths). A nested call is
  recorded with its structure (`engine.base_layer.call_structured`), the recurrence is
  `K.rnn`'s, on the flattened structures, and the layer returns what tf.keras returns:
  the output in the cell's structure, `[output, *states]` with `return_state`.
"""
import functools
import numbers

import numpy as np

from keras import backend as K
from keras import layers as _keras_layers
from keras.engine.base_layer import InputSpec, Layer
from keras.layers import recurrent
from keras.utils.generic_utils import has_arg, to_list

from ... import mixed_precision
from ... import structure
from .. import eager
from ..engine.base_layer import CALL_SPEC, call_structured


class GRU(_keras_layers.GRU):
    __doc__ = _keras_layers.GRU.__doc__

    def __init__(self, units, *args, reset_after=True, **kwargs):
        super(GRU, self).__init__(units, *args, reset_after=reset_after, **kwargs)


class GRUCell(_keras_layers.GRUCell):
    __doc__ = _keras_layers.GRUCell.__doc__

    def __init__(self, units, *args, reset_after=True, **kwargs):
        super(GRUCell, self).__init__(units, *args, reset_after=reset_after, **kwargs)


def _is_structure(value):
    return isinstance(value, (list, tuple, dict))


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _has_keras_sizes(cell):
    """Whether Keras 2.3.1's `RNN` takes `cell`'s sizes: a state size that is an int or a
    list (or tuple) of ints, and an output size that is an int or absent."""
    state_size = cell.state_size
    output_size = getattr(cell, 'output_size', None)
    return ((_is_int(state_size) or (isinstance(state_size, (list, tuple)) and
                                     all(_is_int(size) for size in state_size)))
            and (output_size is None or _is_int(output_size)))


def _state_sizes(cell):
    """The cell's `state_size` as a list, one item per state (each an int, a shape, or a
    nest of them), as tf.keras reads it: a list or tuple holds one size per state.

    # Raises
        ValueError: for a dict, which tf.keras cannot read either (a dict state goes in a
            list: `[{'h': 4, 'c': 4}]`)."""
    sizes = cell.state_size
    if isinstance(sizes, dict):
        raise ValueError('%s.state_size is a dict (%r); tf.keras takes an int, a TensorShape, '
                         'or a list of them, one per state (a dict state goes in a list: '
                         '[%r]).' % (type(cell).__name__, sizes, sizes))
    return list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]


def _dims(size):
    """The dimensions (after the batch axis) of a state or output of `size`: an int or a
    shape (`TensorShape`)."""
    if _is_int(size):
        return (int(size),)
    if hasattr(size, 'as_list'):
        return tuple(size.as_list())
    raise TypeError('A recurrent cell size must be an int or a TensorShape; got %r.' % (size,))


def _output_sizes(cell):
    """The sizes of the cell's flat outputs: its `output_size` flattened, or its first
    state's size (tf.keras' default)."""
    output_size = getattr(cell, 'output_size', None)
    if output_size is None:
        return structure.flatten(_state_sizes(cell)[0])[:1]
    return structure.flatten(output_size)


def _is_shape(value):
    return hasattr(value, 'as_list') or (isinstance(value, (list, tuple)) and all(
        d is None or _is_int(d) for d in value))


def _map_shapes(function, shapes):
    """`function` of each shape in a structure of shapes, in that structure."""
    if _is_shape(shapes):
        return function(tuple(shapes))
    if isinstance(shapes, dict):
        return type(shapes)((key, _map_shapes(function, value)) for key, value in shapes.items())
    items = [_map_shapes(function, value) for value in shapes]
    return type(shapes)(*items) if hasattr(shapes, '_fields') else type(shapes)(items)


def _shape_leaves(shapes):
    """The shapes of a structure of shapes, flat, in `structure.flatten`'s order."""
    if _is_shape(shapes):
        return [tuple(shapes)]
    items = [shapes[key] for key in sorted(shapes)] if isinstance(shapes, dict) else shapes
    return [leaf for item in items for leaf in _shape_leaves(item)]


def _inputs_shape(input_shape):
    """The shape(s) of the sequence inputs in `build`'s or `compute_output_shape`'s
    argument (which may list the states' shapes after them)."""
    if isinstance(input_shape, list) and not _is_shape(input_shape):
        return input_shape[0]
    return input_shape


def _split_inputs(layer, inputs, initial_state, constants):
    """tf.keras' reading of an `RNN` call: a list is `[inputs, *initial_states,
    *constants]` (inputs may be nested: a tuple, a namedtuple, a dict), anything else the
    inputs.

    # Returns
        `(inputs, initial states or None, constants or None)`, the last two lists.
    """
    if isinstance(inputs, list):
        n_constants = layer._num_constants or 0
        if n_constants:
            constants, inputs = inputs[-n_constants:], inputs[:-n_constants]
        if len(inputs) > 1:
            initial_state = inputs[1:]
        inputs = inputs[0]

    def as_list(value):
        if value is None or isinstance(value, list):
            return value
        return list(value) if isinstance(value, tuple) else [value]
    return inputs, as_list(initial_state), as_list(constants)


def _is_nested(layer, inputs, initial_state, constants):
    """Whether a call of `layer` on these (split) arguments is nested (see the module)."""
    return (_is_structure(inputs) or not _has_keras_sizes(layer.cell)
            or any(_is_structure(s) for s in (initial_state or []) + (constants or [])))


def _zero_states(cell, inputs):
    """Zero states of the cell's state sizes (nested as they are), with the batch size and
    dtype of `inputs` (the first of the flat inputs)."""
    first = structure.flatten(inputs)[0][:, 0]
    samples = K.sum(K.zeros_like(first), axis=list(range(1, K.ndim(first))))

    def zeros(size):
        dims = _dims(size)
        return K.tile(K.reshape(samples, (-1,) + (1,) * len(dims)), (1,) + dims)
    return structure.map_structure(zeros, _state_sizes(cell))


def _check_initial_states(layer, initial_state):
    sizes = structure.flatten(_state_sizes(layer.cell))
    states = structure.flatten(initial_state)
    if len(states) != len(sizes):
        raise ValueError('%s (%s) has %d state tensors (cell.state_size %r) but was given %d '
                         'initial state tensors.' % (type(layer).__name__, layer.name,
                                                     len(sizes), layer.cell.state_size,
                                                     len(states)))
    for state, size in zip(states, sizes):
        shape = K.int_shape(state)[1:]
        if len(shape) != len(_dims(size)) or any(
                have is not None and have != want for have, want in zip(shape, _dims(size))):
            raise ValueError('%s (%s): an initial state of shape %s does not match '
                             'cell.state_size %r (expected (batch,) + %s).'
                             % (type(layer).__name__, layer.name, K.int_shape(state),
                                layer.cell.state_size, _dims(size)))


def _nested_call(layer, inputs, mask, training, initial_state, constants):
    """`RNN.call` on nested structures (see the module), by `K.rnn` on their leaves."""
    flat_inputs = structure.flatten(inputs)
    if initial_state is None:
        initial_state = layer.states if layer.stateful else _zero_states(layer.cell, inputs)
    initial_state = list(initial_state)
    _check_initial_states(layer, initial_state)
    timesteps = K.int_shape(flat_inputs[0])[1]
    if layer.unroll and timesteps is None:
        raise ValueError('%s (%s) cannot unroll a recurrence whose number of timesteps is '
                         'unknown (inputs of shape %s): give the Input a fixed time axis.'
                         % (type(layer).__name__, layer.name, K.int_shape(flat_inputs[0])))
    constants = list(constants or [])
    if constants and not has_arg(layer.cell.call, 'constants'):
        raise ValueError('%s (%s) was given constants, which its cell %s does not take '
                         '(its call has no `constants` argument).'
                         % (type(layer).__name__, layer.name, type(layer.cell).__name__))
    cell_kwargs = {'training': training} if has_arg(layer.cell.call, 'training') else {}
    n_constants = len(constants)

    def step(inputs_t, states):
        kwargs = dict(cell_kwargs)
        if n_constants:
            kwargs['constants'], states = states[-n_constants:], states[:-n_constants]
        output, new_states = layer.cell.call(inputs_t, states, **kwargs)
        return output, (new_states if _is_structure(new_states) else [new_states])

    last_output, outputs, states = K.rnn(
        step, inputs, initial_state, constants=constants, go_backwards=layer.go_backwards,
        mask=None if mask is None else structure.flatten(mask)[0], unroll=layer.unroll,
        input_length=timesteps)
    if layer.stateful:
        layer.add_update(list(zip(structure.flatten(layer.states), structure.flatten(states))),
                         eager.leaves(inputs))
    output = outputs if layer.return_sequences else last_output
    if any(getattr(x, '_uses_learning_phase', False) for x in structure.flatten(last_output)):
        for x in structure.flatten(output) + structure.flatten(states):
            x._uses_learning_phase = True
    if layer.return_state:
        return to_list(output) + list(states)
    return output


def _nested_build(layer, input_shape):
    """`RNN.build` for nested inputs or cell sizes: the input specs in the inputs'
    structure, the cell built on the shapes of one step (tf.keras builds it without the
    constants' shapes), a state spec per state tensor."""
    input_shape = _inputs_shape(input_shape)
    batch = _shape_leaves(input_shape)[0][0] if layer.stateful else None
    layer.input_spec = [_map_shapes(
        lambda shape: InputSpec(shape=(batch, None) + shape[2:]), input_shape)]
    if isinstance(layer.cell, Layer) and not layer.cell.built:
        layer.cell.build(_map_shapes(lambda shape: (shape[0],) + shape[2:], input_shape))
        layer.cell.built = True
    layer.state_spec = [InputSpec(shape=(None,) + _dims(size))
                        for size in structure.flatten(_state_sizes(layer.cell))]
    if layer.stateful:
        layer.reset_states()
    layer.built = True


def _nested_output_shape(layer, input_shape):
    first = _shape_leaves(_inputs_shape(input_shape))[0]
    prefix = first[:2] if layer.return_sequences else first[:1]
    shapes = [prefix + _dims(size) for size in _output_sizes(layer.cell)]
    if layer.return_state:
        shapes += [first[:1] + _dims(size)
                   for size in structure.flatten(_state_sizes(layer.cell))]
    return shapes[0] if len(shapes) == 1 else shapes


def _nested_mask(layer, mask):
    """The masks of a nested call's flat outputs: the inputs' (first) mask for each
    output of `return_sequences=True`, None for the states."""
    output_mask = structure.flatten(mask)[0] if layer.return_sequences else None
    masks = [output_mask] * len(_output_sizes(layer.cell))
    if layer.return_state:
        masks += [None] * len(structure.flatten(_state_sizes(layer.cell)))
    return masks[0] if len(masks) == 1 else masks


def _check_nested_inputs(layer, inputs):
    """`assert_input_compatibility` for nested inputs: every leaf a Keras tensor of rank 3
    or more, as many as the built input specs, each of its spec's shape where known."""
    leaves = structure.flatten(inputs)
    for x in leaves:
        if not K.is_keras_tensor(x) or K.ndim(x) < 3:
            raise ValueError('%s (%s) takes tensors of shape (batch, time, ...) nested as its '
                             'cell expects; got %r.' % (type(layer).__name__, layer.name, x))
    if not layer.built:
        return
    specs = structure.flatten(layer.input_spec[0])
    if len(specs) != len(leaves):
        raise ValueError('%s (%s) was built for %d input tensors and called on %d.'
                         % (type(layer).__name__, layer.name, len(specs), len(leaves)))
    for x, spec in zip(leaves, specs):
        shape = K.int_shape(x)
        if len(shape) != len(spec.shape) or any(
                want is not None and have is not None and have != want
                for have, want in zip(shape, spec.shape)):
            raise ValueError('%s (%s) was built for inputs of shape %s and called on one of '
                             'shape %s.' % (type(layer).__name__, layer.name, spec.shape, shape))


def _reset_nested_states(layer, states):
    """`reset_states` of a stateful layer whose cell has nested or shaped states."""
    spec = structure.flatten(layer.input_spec[0])[0] if layer.input_spec else None
    batch = None if spec is None or spec.shape is None else spec.shape[0]
    if not batch:
        raise ValueError('%s (%s) is stateful and needs to know its batch size: give the Input '
                         'a `batch_shape` (or `batch_input_shape` to the first layer of a '
                         'Sequential model).' % (type(layer).__name__, layer.name))
    sizes = structure.flatten(_state_sizes(layer.cell))
    if structure.flatten(layer.states)[0] is None:
        layer.states = structure.map_structure(lambda size: K.zeros((batch,) + _dims(size)),
                                               _state_sizes(layer.cell))
        return
    variables = structure.flatten(layer.states)
    values = ([np.zeros((batch,) + _dims(size)) for size in sizes] if states is None
              else [np.asarray(value) for value in structure.flatten(states)])
    if len(values) != len(variables):
        raise ValueError('%s (%s) has %d state tensors but was given %d state values.'
                         % (type(layer).__name__, layer.name, len(variables), len(values)))
    for index, (value, variable) in enumerate(zip(values, variables)):
        if value.shape != K.int_shape(variable):
            raise ValueError('State %d of %s (%s) has shape %s; got a value of shape %s.'
                             % (index, type(layer).__name__, layer.name,
                                K.int_shape(variable), value.shape))
        K.set_value(variable, value)


def nested_structures(keras_function):
    """Override of Keras 2.3.1's `RNN.__call__`, `call`, `build`, `compute_output_shape`,
    `compute_mask`, `get_initial_state`, `states`, `reset_states` and
    `assert_input_compatibility` (one entry of `torchk.overrides`, the replacement chosen by
    the wrapped function's name): each takes the nested path for nested calls and cells (see
    the module) and is Keras 2.3.1's otherwise."""
    return _NESTED[keras_function.__name__](keras_function)


def _nested_dunder_call(keras_call):
    @functools.wraps(keras_call)
    def __call__(self, inputs, initial_state=None, constants=None, **kwargs):
        if CALL_SPEC in kwargs:
            return keras_call(self, inputs, **kwargs)
        split = _split_inputs(self, inputs, initial_state, constants)
        if not _is_nested(self, *split):
            return keras_call(self, inputs, initial_state=initial_state, constants=constants,
                              **kwargs)
        inputs, initial_state, constants = split
        if initial_state is not None:
            kwargs['initial_state'] = initial_state
        if constants is not None:
            kwargs['constants'] = constants
            self._num_constants = len(constants)
        return call_structured(self, inputs, kwargs)
    return __call__


def _nested_rnn_call(keras_rnn_call):
    def call(self, inputs, mask=None, training=None, initial_state=None, constants=None):
        split = _split_inputs(self, inputs, initial_state, constants)
        if not _is_nested(self, *split):
            return keras_rnn_call(self, inputs, mask=mask, training=training,
                                  initial_state=initial_state, constants=constants)
        return _nested_call(self, split[0], mask, training, split[1], split[2])
    call.__doc__ = keras_rnn_call.__doc__
    # The nested path runs in the layer's policy as the flat one does (Keras' `call`, which
    # this one calls, is already in it: the policy enters once per layer call).
    return mixed_precision.in_policy(call)


def _nested_shape(layer, input_shape):
    shape = _inputs_shape(input_shape)
    return not _has_keras_sizes(layer.cell) or not _is_shape(shape)


def _nested_build_of(keras_build):
    @functools.wraps(keras_build)
    def build(self, input_shape):
        if _nested_shape(self, input_shape):
            return _nested_build(self, input_shape)
        return keras_build(self, input_shape)
    return build


def _nested_output_shape_of(keras_output_shape):
    @functools.wraps(keras_output_shape)
    def compute_output_shape(self, input_shape):
        if _nested_shape(self, input_shape):
            return _nested_output_shape(self, input_shape)
        return keras_output_shape(self, input_shape)
    return compute_output_shape


def _nested_mask_of(keras_mask):
    @functools.wraps(keras_mask)
    def compute_mask(self, inputs, mask):
        if _is_nested(self, *_split_inputs(self, inputs, None, None)):
            return _nested_mask(self, mask)
        return keras_mask(self, inputs, mask)
    return compute_mask


def _nested_initial_state_of(keras_initial_state):
    @functools.wraps(keras_initial_state)
    def get_initial_state(self, inputs):
        if _is_nested(self, inputs, None, None):
            return _zero_states(self.cell, inputs)
        return keras_initial_state(self, inputs)
    return get_initial_state


def _nested_states_of(keras_states):
    @functools.wraps(keras_states)
    def states(self):
        if self._states is None and not _has_keras_sizes(self.cell):
            return structure.map_structure(lambda _: None, _state_sizes(self.cell))
        return keras_states(self)
    return states


def _nested_reset_states_of(keras_reset_states):
    @functools.wraps(keras_reset_states)
    def reset_states(self, states=None):
        if not self.stateful or _has_keras_sizes(self.cell):
            return keras_reset_states(self, states)
        return _reset_nested_states(self, states)
    return reset_states


def _nested_assert_of(keras_assert):
    @functools.wraps(keras_assert)
    def assert_input_compatibility(self, inputs):
        if _is_nested(self, *_split_inputs(self, inputs, None, None)):
            return _check_nested_inputs(self, inputs)
        return keras_assert(self, inputs)
    return assert_input_compatibility


_NESTED = {
    '__call__': _nested_dunder_call,
    'call': _nested_rnn_call,
    'build': _nested_build_of,
    'compute_output_shape': _nested_output_shape_of,
    'compute_mask': _nested_mask_of,
    'get_initial_state': _nested_initial_state_of,
    'states': _nested_states_of,
    'reset_states': _nested_reset_states_of,
    'assert_input_compatibility': _nested_assert_of,
}
