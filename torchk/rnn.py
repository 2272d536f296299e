"""Loops over a time or element axis: `rnn`, `map_fn`, `foldl`, `foldr`.

`rnn` takes nested structures (`structure`: lists, tuples, namedtuples, dicts) as tf.keras'
does: inputs, states and the step's outputs are flattened at its boundary, the step
function is called on them packed back into their structures, and the loop runs on the
flat lists of tensors.

On symbolic inputs a loop body is traced once on per-step slot placeholders and compiled
into a sub-program (`program.compile_program`); one graph node then runs that sub-program in
a Python loop. What the body reads from outside the loop (kernels, dropout masks, constants,
the learning phase) is computed once per run by the outer program and handed to every step;
autograd flows through the loop into all of it.

Keras' own cells run faster, computing exactly what their `call` computes (`_fast_cell`
recognises them; `fast_paths = False` turns this off): a plain `LSTMCell` (tanh, sigmoid, no
dropout or mask) runs torch's fused `torch.lstm`, a plain `GRUCell(reset_after=True)` on CUDA
torch's `torch.gru` (both cuDNN's kernels there); every other `LSTMCell`, `GRUCell` and
`SimpleRNNCell` with known activations (dropout, recurrent dropout with `implementation=2`,
masks, `go_backwards` included) runs a whole-sequence kernel of `rnn_kernels`: the inputs
of all timesteps projected in one matmul, then a hand-written forward and backward loop.

While a program is being exported (`graph.exporting()`), the loops and kernels
are replaced by `rnn_scan`'s, which `torch.export` traces with a dynamic time axis.
"""
import inspect
import sys

import torch
import torch.nn.functional as F

from . import dtypes
from . import graph
from . import program
from . import rnn_kernels
from . import rnn_scan
from . import structure
from .array_ops import stack, zeros_like
from .function import placeholder
from .math_ops import cast
from .validation import check_shape, format_shape


def _slot_like(symbol, name, drop_leading=0):
    """A placeholder standing for one step's value of `symbol` during tracing."""
    shape = graph_shape(symbol)
    if shape is not None:
        shape = shape[:1] + shape[1 + drop_leading:] if drop_leading else shape
    return placeholder(shape=shape, dtype=_dtype_of(symbol), name=name)


def graph_shape(x):
    if isinstance(x, graph.KerasTensor):
        return x._keras_shape
    return tuple(x.shape)


def _dtype_of(x):
    return x._torch_dtype if isinstance(x, graph.KerasTensor) else x.dtype


class _Trace:
    """A Python loop body traced once and compiled into a callable sub-program.

    Calling it as `trace(*slot_values, *captured_values)` returns the flat list of outputs.
    """

    def __init__(self, slots, outputs):
        slot_ids = {id(s) for s in slots}
        symbols = [o for o in outputs if graph.is_symbol(o)]
        nodes, leaves = program.ancestors(symbols, stop=slot_ids)
        inner = set()
        for node in nodes:
            if any(id(i) in slot_ids or _node_id(i) in inner for i in node.inputs):
                inner.add(id(node))
        captured = {}
        for node in nodes:
            if id(node) in inner:
                for item in node.inputs:
                    if id(item) not in slot_ids and _node_id(item) not in inner:
                        captured.setdefault(id(item), item)
        for output in symbols:
            if id(output) not in slot_ids and _node_id(output) not in inner:
                captured.setdefault(id(output), output)
        self.captured = list(captured.values())
        self.run, unfed = program.compile_program(
            list(slots) + self.captured, list(outputs), [], [False] * len(outputs))
        if unfed:
            raise ValueError('A loop body needs placeholder(s) it cannot reach: %s.'
                             % ', '.join(p._describe() for p in unfed))

    def __call__(self, *values):
        return self.run(*values)


def _node_id(symbol):
    node = getattr(symbol, 'node', None) if isinstance(symbol, graph.KerasTensor) else None
    return None if node is None else id(node)


def _expand_mask(mask_t, value):
    return mask_t.reshape(tuple(mask_t.shape) + (1,) * (value.ndim - mask_t.ndim))


@graph.op
def _run_rnn(step, inputs, initial_states, mask, captured, go_backwards, n_outputs):
    if graph.exporting():
        if go_backwards:
            inputs = [x.flip(1) for x in inputs]
            mask = None if mask is None else mask.flip(1)
        outputs, states = rnn_scan.loop(step, inputs, initial_states, mask, captured,
                                        n_outputs)
        return [o[:, -1] for o in outputs], outputs, states
    _check_sequences(inputs)
    length = inputs[0].shape[1]
    steps = range(length - 1, -1, -1) if go_backwards else range(length)
    states = list(initial_states)
    outputs = [[] for _ in range(n_outputs)]
    previous = None
    for t in steps:
        results = step(*[x[:, t] for x in inputs], *states, *captured)
        output, new_states = results[:n_outputs], results[n_outputs:]
        if mask is not None:
            keep = mask[:, t].bool()
            if previous is None:
                previous = [torch.zeros_like(o) for o in output]
            output = [torch.where(_expand_mask(keep, o), o, p) for o, p in zip(output, previous)]
            new_states = [torch.where(_expand_mask(keep, new), new, old)
                          for new, old in zip(new_states, states)]
            previous = output
        states = new_states
        for collected, o in zip(outputs, output):
            collected.append(o)
    stacked = [torch.stack(o, dim=1) for o in outputs]
    return [o[:, -1] for o in stacked], stacked, states


def _check_sequences(inputs):
    """Checks that the flat inputs of a recurrence share their batch and time axes."""
    first = inputs[0].shape[:2]
    for x in inputs[1:]:
        if x.shape[:2] != first:
            raise ValueError('rnn: nested inputs must share their batch and time axes; got '
                             'shapes %s.' % ', '.join(format_shape(i.shape) for i in inputs))


@graph.op
def _masked_step(keep, new, old):
    return torch.where(_expand_mask(keep.bool(), new), new, old)


def _check_rnn_arguments(inputs, initial_states, mask, unroll, input_length):
    """Checks `rnn`'s flat inputs and states."""
    for x in inputs:
        shape = graph_shape(x)
        if shape is None or len(shape) < 3:
            raise ValueError('rnn: inputs must have at least 3 dimensions (samples, time, ...), '
                             'got shape %s.' % (shape,))
    if mask is not None and not initial_states:
        raise ValueError('rnn: a mask needs at least one state to hold on masked steps; '
                         'got no initial_states.')
    if unroll and graph_shape(inputs[0])[1] is None and input_length is None:
        raise ValueError('rnn: unroll=True needs a static number of timesteps; the inputs '
                         'have shape %s and no input_length was given.'
                         % (graph_shape(inputs[0]),))


def _keras_cell(step_function):
    """The Keras cell whose `call` `step_function` wraps (`RNN.call`'s closure over the
    layer, layers/recurrent.py:660-673), or None for any other step function.

    A subclass of a Keras cell counts when it keeps the Keras class's `call` (the CuDNN
    layers of `torchk.layers` make their weights so and compute with Keras' `call`)."""
    return _keras_cell_of(inspect.getclosurevars(step_function).nonlocals.get('self'))


def _keras_cell_of(layer):
    """The cell of the RNN `layer` when it is a Keras cell computing with its class's `call`
    (see `_keras_cell`), else None."""
    cell = getattr(layer, 'cell', None)
    keras_class = _keras_cell_class(cell)
    if keras_class is None or type(cell).call is not keras_class.call:
        return None
    return cell


def _keras_cell_class(cell):
    """The class of keras.layers.recurrent that `cell` is an instance of, else None."""
    for klass in type(cell).__mro__:
        if klass.__module__ == 'keras.layers.recurrent':
            return klass
    return None


def _cell_name(cell):
    return _keras_cell_class(cell).__name__


fast_paths = True
"""False makes every recurrence take the generic loop (tests compare the fast paths with it)."""

_KERNEL_CELLS = ('LSTMCell', 'GRUCell', 'SimpleRNNCell')


def _activation_name(function):
    """The name in `rnn_kernels.ACTIVATIONS` of a Keras activation function, else None."""
    activations = sys.modules['keras.activations']
    for name in rnn_kernels.ACTIVATIONS:
        if function is getattr(activations, name):
            return name
    return None


def _dropout(rate):
    """Whether a Keras cell applies dropout of `rate` (it does only for 0 < rate < 1)."""
    return 0. < rate < 1.


def _fast_cell(step_function, inputs, constants, unroll):
    """The Keras LSTM, GRU or SimpleRNN cell behind `step_function` when a fast recurrence
    computes exactly what its `call` does, else None."""
    if not fast_paths or constants or unroll or not inspect.isfunction(step_function):
        return None
    shape = graph_shape(inputs)
    if len(shape) != 3 or not _dtype_of(inputs).is_floating_point:
        return None
    cell = _keras_cell(step_function)
    if cell is None:
        return None
    name = _cell_name(cell)
    if name not in _KERNEL_CELLS or _activation_name(cell.activation) is None:
        return None
    if name == 'SimpleRNNCell':
        return cell
    if _activation_name(cell.recurrent_activation) is None:
        return None
    # implementation=1 drops h with a different recurrent mask for each gate
    if _dropout(cell.recurrent_dropout) and cell.implementation != 2:
        return None
    return cell


def _torch_computes(cell, mask):
    """Whether torch's fused `torch.lstm` computes exactly what `cell` does (it is faster
    than the LSTM kernel of rnn_kernels; for the GRU, rnn_kernels' is the faster one)."""
    if mask is not None or _cell_name(cell) != 'LSTMCell':
        return False
    if _dropout(cell.dropout) or _dropout(cell.recurrent_dropout):
        return False
    return (_activation_name(cell.activation) == 'tanh' and
            _activation_name(cell.recurrent_activation) == 'sigmoid')


def runs_torch_lstm(layer):
    """Whether the recurrence of the Keras RNN `layer` runs torch's fused `torch.lstm` on
    inputs without a mask (`_torch_computes`), which computes float16 and bfloat16 in the
    device's own kernels (cuDNN; oneDNN on the CPU)."""
    cell = _keras_cell_of(layer)
    if not fast_paths or getattr(layer, 'unroll', False) or cell is None:
        return False
    return _torch_computes(cell, None)


def _check_weights(op, inputs, states, kernel, recurrent_kernel, gates):
    """Checks states and weights against the inputs before a fused kernel reads them."""
    batch, _, features = inputs.shape
    units = recurrent_kernel.shape[0]
    check_shape(op, 'kernel', kernel.shape, (features, gates * units))
    check_shape(op, 'recurrent kernel', recurrent_kernel.shape, (units, gates * units))
    for i, state in enumerate(states):
        check_shape(op, 'initial state %d (for inputs of shape %s)'
                    % (i, format_shape(inputs.shape)), state.shape, (batch, units))


@graph.op
def _fused_lstm(inputs, h0, c0, kernel, recurrent_kernel, bias, go_backwards):
    _check_weights('LSTM (torch.lstm)', inputs, [h0, c0], kernel, recurrent_kernel, 4)
    if go_backwards:
        inputs = inputs.flip(1)
    if torch.compiler.is_compiling() and not inputs.is_cuda:
        # torch.lstm's CPU kernel (mkldnn_rnn_layer) has no fake-tensor implementation;
        # cuDNN's has one, so on CUDA dynamo traces torch.lstm itself.
        return _cell_recurrence('LSTMCell', inputs, [h0, c0], kernel, recurrent_kernel, bias,
                                None, None, None, False, 'tanh', 'sigmoid', False)
    if graph.exporting():
        h_all, states = rnn_scan.cell_recurrence(
            'LSTMCell', _project(inputs.transpose(0, 1), kernel, bias, None), [h0, c0],
            recurrent_kernel, None, None, None, 'tanh', 'sigmoid', False)
        return h_all[-1], h_all.transpose(0, 1), states
    weights = [kernel.t(), recurrent_kernel.t()]
    if bias is not None:
        weights += [bias, torch.zeros_like(bias)]
    inputs, weights = _cudnn_ready(inputs, weights)
    # cuDNN's backward needs the forward run in training mode (dropout is 0 either way)
    outputs, h, c = torch.lstm(inputs, (h0[None], c0[None]), weights, bias is not None, 1, 0.,
                               torch.is_grad_enabled(), False, True)
    return outputs[:, -1], outputs, [h[0], c[0]]


def _cudnn_ready(inputs, weights):
    """The inputs and weights of `torch.lstm` / `torch.gru` made contiguous on CUDA, where
    cuDNN views them as flat buffers (transposed or sliced weights raise there)."""
    if not inputs.is_cuda:
        return inputs, weights
    return inputs.contiguous(), [w.contiguous() for w in weights]


def _torch_gru_order(weight):
    """Keras' gate blocks (update, reset, candidate) on the last axis in torch's order
    (reset, update, candidate)."""
    update, reset, candidate = weight.chunk(3, dim=-1)
    return torch.cat([reset, update, candidate], dim=-1)


def _torch_gru(inputs, h0, kernel, recurrent_kernel, bias):
    """`GRU(reset_after=True)` (tanh, sigmoid) by torch's fused `torch.gru`, which runs
    cuDNN's kernel on CUDA; `bias` holds the input and the recurrent bias."""
    weights = [_torch_gru_order(kernel).t(), _torch_gru_order(recurrent_kernel).t(),
               _torch_gru_order(bias[0]), _torch_gru_order(bias[1])]
    inputs, weights = _cudnn_ready(inputs, weights)
    outputs, h = torch.gru(inputs, h0[None], weights, True, 1, 0., torch.is_grad_enabled(),
                           False, True)
    return outputs[:, -1], outputs, [h[0]]


def _project(inputs, kernel, bias, input_masks):
    """Inputs of all timesteps times the kernel, plus the bias, in one matmul (one per
    gate when each gate has its own dropout mask)."""
    if input_masks is None:
        return F.linear(inputs, kernel.t(), bias)
    if len(input_masks) == 1:
        return F.linear(inputs * input_masks[0], kernel.t(), bias)
    kernels = kernel.chunk(len(input_masks), dim=1)
    biases = [None] * len(kernels) if bias is None else bias.chunk(len(kernels))
    return torch.cat([F.linear(inputs * m, k.t(), b)
                      for m, k, b in zip(input_masks, kernels, biases)], dim=-1)


@graph.op
def _cell_recurrence(cell_name, inputs, initial_states, kernel, recurrent_kernel, bias,
                     input_masks, recurrent_mask, mask, go_backwards, activation,
                     recurrent_activation, reset_after):
    gates = {'LSTMCell': 4, 'GRUCell': 3, 'SimpleRNNCell': 1}[cell_name]
    _check_weights(cell_name, inputs, initial_states, kernel, recurrent_kernel, gates)
    if go_backwards:
        inputs = inputs.flip(1)
        mask = None if mask is None else mask.flip(1)
    keep = None if mask is None else mask.t().bool().unsqueeze(-1)
    if (inputs.is_cuda and cell_name == 'GRUCell' and reset_after and bias is not None and
            input_masks is None and recurrent_mask is None and keep is None and
            (activation, recurrent_activation) == ('tanh', 'sigmoid')):
        return _torch_gru(inputs, initial_states[0], kernel, recurrent_kernel, bias)
    recurrent_bias = None
    if reset_after and bias is not None:
        bias, recurrent_bias = bias[0], bias[1]
    inputs = inputs.transpose(0, 1)
    if graph.exporting():
        h_all, states = rnn_scan.cell_recurrence(
            cell_name, _project(inputs, kernel, bias, input_masks), initial_states,
            recurrent_kernel, recurrent_bias, recurrent_mask, keep, activation,
            recurrent_activation, reset_after)
    else:
        h_all, states = _kernel_recurrence(
            cell_name, inputs, initial_states, kernel, recurrent_kernel, bias, recurrent_bias,
            input_masks, recurrent_mask, keep, activation, recurrent_activation, reset_after)
    last = states[0]
    if keep is not None:
        # outputs repeat the previous output on masked steps: zeros before the first kept one
        # (`cumsum`, not `cummax`: ONNX has no cummax)
        seen = keep.cumsum(0) > 0
        h_all = torch.where(seen, h_all, torch.zeros_like(h_all))
        last = torch.where(seen[-1], last, torch.zeros_like(last))
    return last, h_all.transpose(0, 1), states


def _kernel_recurrence(cell_name, inputs, initial_states, kernel, recurrent_kernel, bias,
                       recurrent_bias, input_masks, recurrent_mask, keep, activation,
                       recurrent_activation, reset_after):
    """A kernel of `rnn_kernels` over time-major `inputs`: `(h of every step, states)`.
    The input weights (and the LSTM's recurrent kernel) are put in the kernels' gate order
    before the projection, so the kernels read and write the gates without copies."""
    if cell_name == 'SimpleRNNCell':
        h_all, h = rnn_kernels.SimpleRNNRecurrence.apply(
            _project(inputs, kernel, bias, input_masks), initial_states[0], recurrent_kernel,
            recurrent_mask, keep, activation)
        return h_all, [h]
    gates = 4 if cell_name == 'LSTMCell' else 3
    kernel, bias, input_masks = (None if w is None else rnn_kernels.kernel_order(w, gates)
                                 for w in (kernel, bias, input_masks))
    projected = _project(inputs, kernel, bias, input_masks)
    if cell_name == 'LSTMCell':
        h_all, h, c = rnn_kernels.LSTMRecurrence.apply(
            projected, *initial_states, rnn_kernels.kernel_order(recurrent_kernel, 4),
            recurrent_mask, keep, activation, recurrent_activation)
        return h_all, [h, c]
    h_all, h = rnn_kernels.GRURecurrence.apply(
        projected, initial_states[0], recurrent_kernel, recurrent_bias, recurrent_mask, keep,
        activation, recurrent_activation, reset_after)
    return h_all, [h]


def _masks(masks):
    """A cell's dropout masks as a list (Keras keeps one mask, or one per gate), or None."""
    if masks is None:
        return None
    return list(masks) if isinstance(masks, (list, tuple)) else [masks]


def _fast_rnn(cell, step_function, inputs, initial_states, go_backwards, mask):
    name = _cell_name(cell)
    output_0 = None
    if _dropout(cell.dropout) or _dropout(cell.recurrent_dropout):
        # the cell makes its dropout masks (once per sequence) on its call at time 0
        output_0, _ = step_function(inputs[:, -1 if go_backwards else 0], list(initial_states))
    if _torch_computes(cell, mask):
        # Keras' initial states are floatx zeros (`K.zeros_like`); a half-precision LSTM
        # starts from them in its own dtype, as tf.keras' does
        h0, c0 = (cast(s, _dtype_of(inputs)) for s in initial_states)
        last, outputs, states = _fused_lstm(inputs, h0, c0, cell.kernel, cell.recurrent_kernel,
                                            cell.bias, go_backwards)
        return last, outputs, list(states)
    input_masks = _masks(cell._dropout_mask)
    if input_masks and (name == 'SimpleRNNCell' or cell.implementation == 2):
        input_masks = input_masks[:1]
    recurrent_mask = _masks(cell._recurrent_dropout_mask)
    recurrent_mask = recurrent_mask and recurrent_mask[0]
    operands = [inputs, list(initial_states), cell.kernel, cell.recurrent_kernel, cell.bias,
                input_masks, recurrent_mask]
    low_precision = _dtype_of(inputs) in dtypes.HALF_PRECISION
    if low_precision:
        # rnn_kernels' step loops run their element-wise work slower in half precision than
        # in float32 (and a half-precision cell state drifts over long sequences)
        operands = structure.map_structure(
            lambda x: None if x is None else cast(x, torch.float32), operands)
    last, outputs, states = _cell_recurrence(
        name, *operands, mask, go_backwards, _activation_name(cell.activation),
        None if name == 'SimpleRNNCell' else _activation_name(cell.recurrent_activation),
        name == 'GRUCell' and cell.reset_after)
    if low_precision:
        last, outputs, states = structure.map_structure(
            lambda x: cast(x, _dtype_of(inputs)), (last, outputs, list(states)))
    if getattr(output_0, '_uses_learning_phase', False):
        last._uses_learning_phase = True
    return last, outputs, list(states)


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None,
        constants=None, unroll=False, input_length=None):
    """Iterates over the time dimension of a tensor.

    # Arguments
        step_function: called as `step_function(input_t, states + constants)`, returns
            `(output_t, new_states)`.
        inputs: tensor of shape `(samples, time, ...)`, or a nested structure of them
            (lists, tuples, namedtuples, dicts; same samples and time), which
            `step_function` gets in that structure, each without its time axis.
        initial_states: list of tensors `(samples, ...)` (may be empty, or variables), or
            of nested structures of them; `step_function` gets them in that structure and
            returns `new_states` of the same number of tensors.
        go_backwards: iterate from the last step to the first; outputs are returned in the
            order the loop ran.
        mask: `(samples, time)` tensor; on masked steps outputs repeat the previous output
            (zeros before the first) and states keep their value.
        constants: list of tensors passed to every step after the states.
        unroll: unroll the loop into separate ops (needs a static number of timesteps).
        input_length: static number of timesteps, for `unroll`.

    # Returns
        `(last_output, outputs, new_states)`: `(samples, ...)`, `(samples, time, ...)` (each
        nested as `step_function`'s output) and a list of `(samples, ...)` tensors, nested
        as `initial_states`.

    # Raises
        ValueError: for inputs of rank < 3, a mask without states, `unroll` with an
            unknown number of timesteps, or a step returning another number of states.
    """
    initial_states = list(initial_states or [])
    constants = list(constants or [])
    flat_inputs = structure.flatten(inputs)
    flat_states = structure.flatten(initial_states)
    _check_rnn_arguments(flat_inputs, flat_states, mask, unroll, input_length)
    if _is_flat(inputs, initial_states):
        cell = _fast_cell(step_function, inputs, constants, unroll)
        if cell is not None:
            return _fast_rnn(cell, step_function, inputs, initial_states, go_backwards, mask)
    step = _FlatStep(step_function, inputs, initial_states)
    first = -1 if go_backwards else 0
    output_0, _ = step([x[:, first] for x in flat_inputs], flat_states + constants)
    if unroll:
        last, outputs, states = _unrolled_rnn(
            step, flat_inputs, flat_states, go_backwards, mask, constants,
            input_length or graph_shape(flat_inputs[0])[1], output_0)
    else:
        slot_inputs = [_slot_like(x, 'rnn_input_%d_t' % i, drop_leading=1)
                       for i, x in enumerate(flat_inputs)]
        slot_states = [_slot_like(s, 'rnn_state_%d' % i) for i, s in enumerate(flat_states)]
        output_t, new_states = step(slot_inputs, slot_states + constants)
        trace = _Trace(slot_inputs + slot_states, output_t + new_states)
        last, outputs, states = _run_rnn(trace, flat_inputs, flat_states, mask,
                                         trace.captured, go_backwards, len(output_t))
        if any(getattr(o, '_uses_learning_phase', False) for o in output_t + output_0):
            for tensor in last:
                tensor._uses_learning_phase = True
    return (structure.pack_as(step.output, last), structure.pack_as(step.output, outputs),
            structure.pack_as(initial_states, states))


def _is_flat(inputs, initial_states):
    """Whether `rnn`'s inputs are one tensor and its states a list of tensors."""
    return not isinstance(inputs, (list, tuple, dict)) and not any(
        isinstance(s, (list, tuple, dict)) for s in initial_states)


class _FlatStep:
    """`step_function` on flat lists: called as `(inputs_t, states + constants)`, each a
    flat list of tensors, it calls `step_function` on them in the structures of `rnn`'s
    inputs and states, and returns `(flat outputs, flat new states)`; `output` is the
    structure of the last output."""

    def __init__(self, step_function, inputs, initial_states):
        self.step_function = step_function
        self.inputs = inputs
        self.initial_states = initial_states
        self.n_states = len(structure.flatten(initial_states))
        self.output = None

    def __call__(self, inputs_t, states_and_constants):
        states = structure.pack_as(self.initial_states, states_and_constants[:self.n_states])
        output, new_states = self.step_function(
            structure.pack_as(self.inputs, inputs_t),
            list(states) + list(states_and_constants[self.n_states:]))
        new_states = structure.flatten(new_states)
        if len(new_states) != self.n_states:
            raise ValueError('rnn: step_function returned %d states for %d initial states.'
                             % (len(new_states), self.n_states))
        self.output = output
        return structure.flatten(output), new_states


def _unrolled_rnn(step, inputs, states, go_backwards, mask, constants, length, output_0):
    steps = range(length - 1, -1, -1) if go_backwards else range(length)
    outputs = []
    previous = [zeros_like(o) for o in output_0] if mask is not None else None
    for t in steps:
        output, new_states = step([x[:, t] for x in inputs], states + constants)
        if mask is not None:
            keep = mask[:, t]
            output = [_masked_step(keep, o, p) for o, p in zip(output, previous)]
            new_states = [_masked_step(keep, new, old) for new, old in zip(new_states, states)]
            previous = output
        states = new_states
        outputs.append(output)
    stacked = [stack(list(o), axis=1) for o in zip(*outputs)]
    last = list(outputs[-1])
    if any(getattr(o, '_uses_learning_phase', False)
           for o in structure.flatten(outputs) + output_0):
        for tensor in last:
            tensor._uses_learning_phase = True
    return last, stacked, states


def _element_slot(elems, name):
    shape = graph_shape(elems)
    return placeholder(shape=None if shape is None else shape[1:], dtype=_dtype_of(elems),
                       name=name)


@graph.op
def _run_map(body, elems, captured):
    return torch.stack([body(e, *captured)[0] for e in elems.unbind(0)], dim=0)


@graph.op
def _run_fold(body, elems, initializer, captured, reverse):
    items = elems.unbind(0)
    if reverse:
        items = items[::-1]
    if initializer is None:
        accumulator, items = items[0], items[1:]
    else:
        accumulator = initializer
    for item in items:
        accumulator = body(accumulator, item, *captured)[0]
    return accumulator


def map_fn(fn, elems, name=None, dtype=None):
    """Maps `fn` over the first axis of `elems` and stacks the results.

    # Arguments
        fn: callable taking one element (a tensor without the first axis).
        elems: tensor.
        name, dtype: accepted for compatibility (the result's dtype is `fn`'s).

    # Returns
        Tensor whose first axis has `elems`' length.
    """
    if not graph.is_symbol(elems):
        return torch.stack([fn(e) for e in torch.as_tensor(elems).unbind(0)], dim=0)
    slot = _element_slot(elems, 'map_fn_element')
    trace = _Trace([slot], [fn(slot)])
    return _run_map(trace, elems, trace.captured)


def _fold(fn, elems, initializer, reverse):
    if not graph.is_symbol(elems) and not graph.is_symbol(initializer):
        items = list(torch.as_tensor(elems).unbind(0))
        if reverse:
            items = items[::-1]
        accumulator = items.pop(0) if initializer is None else initializer
        for item in items:
            accumulator = fn(accumulator, item)
        return accumulator
    element = _element_slot(elems, 'fold_element')
    start = element if initializer is None else initializer
    accumulator = placeholder(shape=graph_shape(start), dtype=_dtype_of(start),
                              name='fold_accumulator')
    trace = _Trace([accumulator, element], [fn(accumulator, element)])
    return _run_fold(trace, elems, initializer, trace.captured, reverse)


def foldl(fn, elems, initializer=None, name=None):
    """Reduces `elems` from the left: `fn(fn(fn(init, e0), e1), ...)`.

    # Arguments
        fn: callable `(accumulator, element) -> accumulator`.
        elems: tensor, iterated over its first axis.
        initializer: first accumulator (default: `elems[0]`, then from `elems[1]`).

    # Returns
        The final accumulator.
    """
    return _fold(fn, elems, initializer, reverse=False)


def foldr(fn, elems, initializer=None, name=None):
    """Reduces `elems` from the right: `fn(fn(fn(init, e_n), e_n-1), ...)`."""
    return _fold(fn, elems, initializer, reverse=True)
