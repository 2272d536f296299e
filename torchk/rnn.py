"""Loops over a time or element axis: `rnn`, `map_fn`, `foldl`, `foldr`.

On symbolic inputs a loop body is traced once on per-step slot placeholders and compiled
into a sub-program (`program.compile_program`); one graph node then runs that sub-program in
a Python loop. What the body reads from outside the loop (kernels, dropout masks, constants,
the learning phase) is computed once per run by the outer program and handed to every step;
autograd flows through the loop into all of it.

A Keras `LSTMCell`, or `GRUCell` with `reset_after=True`, with tanh and sigmoid activations,
no dropout, mask or constants computes exactly what torch's fused `torch.lstm`/`torch.gru`
compute (gate orders differ only by a permutation of the weights): those run instead of
the loop.
"""
import inspect
import sys

import torch

from . import graph
from . import program
from .array_ops import stack, zeros_like
from .function import placeholder


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
def _run_rnn(step, inputs, initial_states, mask, captured, go_backwards):
    steps = range(inputs.shape[1] - 1, -1, -1) if go_backwards else range(inputs.shape[1])
    states = list(initial_states)
    outputs = []
    previous = None
    for t in steps:
        output, *new_states = step(inputs[:, t], *states, *captured)
        if mask is not None:
            keep = mask[:, t].bool()
            if previous is None:
                previous = torch.zeros_like(output)
            output = torch.where(_expand_mask(keep, output), output, previous)
            new_states = [torch.where(_expand_mask(keep, new), new, old)
                          for new, old in zip(new_states, states)]
            previous = output
        states = new_states
        outputs.append(output)
    stacked = torch.stack(outputs, dim=1)
    return stacked[:, -1], stacked, states


@graph.op
def _masked_step(keep, new, old):
    return torch.where(_expand_mask(keep.bool(), new), new, old)


def _check_rnn_arguments(inputs, initial_states, mask, unroll, input_length):
    shape = graph_shape(inputs)
    if shape is None or len(shape) < 3:
        raise ValueError('rnn: inputs must have at least 3 dimensions (samples, time, ...), '
                         'got shape %s.' % (shape,))
    if mask is not None and not initial_states:
        raise ValueError('rnn: a mask needs at least one state to hold on masked steps; '
                         'got no initial_states.')
    if unroll and shape[1] is None and input_length is None:
        raise ValueError('rnn: unroll=True needs a static number of timesteps; the inputs '
                         'have shape %s and no input_length was given.' % (shape,))


def _keras_cell(step_function):
    """The Keras cell whose `call` `step_function` wraps (`RNN.call`'s closure over the
    layer, layers/recurrent.py:660-673), or None for any other step function."""
    layer = inspect.getclosurevars(step_function).nonlocals.get('self')
    cell = getattr(layer, 'cell', None)
    if type(cell).__module__ != 'keras.layers.recurrent':
        return None
    return cell


def _fusable_cell(step_function, inputs, mask, constants, unroll):
    """The Keras LSTM or GRU cell behind `step_function` when torch's fused recurrence
    computes exactly the same function, else None."""
    if mask is not None or constants or unroll or not inspect.isfunction(step_function):
        return None
    if _dtype_of(inputs) not in (torch.float32, torch.float64):
        return None
    cell = _keras_cell(step_function)
    name = type(cell).__name__
    if name not in ('LSTMCell', 'GRUCell') or (name == 'GRUCell' and not cell.reset_after):
        return None
    activations = sys.modules['keras.activations']
    if cell.activation is not activations.tanh or \
            cell.recurrent_activation is not activations.sigmoid:
        return None
    if cell.dropout or cell.recurrent_dropout:
        return None
    return cell


def _torch_gate_order(weights):
    """Keras GRU gates (z, r, h) on the last axis, in torch's order (r, z, n)."""
    update, reset, new = weights.chunk(3, dim=-1)
    return torch.cat([reset, update, new], dim=-1)


@graph.op
def _fused_lstm(inputs, h0, c0, kernel, recurrent_kernel, bias, go_backwards):
    if go_backwards:
        inputs = inputs.flip(1)
    weights = [kernel.t(), recurrent_kernel.t()]
    if bias is not None:
        weights += [bias, torch.zeros_like(bias)]
    outputs, h, c = torch.lstm(inputs, (h0[None], c0[None]), weights, bias is not None, 1, 0.,
                               False, False, True)
    return outputs[:, -1], outputs, [h[0], c[0]]


@graph.op
def _fused_gru(inputs, h0, kernel, recurrent_kernel, bias, go_backwards):
    if go_backwards:
        inputs = inputs.flip(1)
    weights = [_torch_gate_order(kernel).t(), _torch_gate_order(recurrent_kernel).t()]
    if bias is not None:
        weights += [_torch_gate_order(bias[0]), _torch_gate_order(bias[1])]
    outputs, h = torch.gru(inputs, h0[None], weights, bias is not None, 1, 0., False, False,
                           True)
    return outputs[:, -1], outputs, [h[0]]


def _fused_rnn(cell, inputs, initial_states, go_backwards):
    if type(cell).__name__ == 'LSTMCell':
        last, outputs, states = _fused_lstm(inputs, initial_states[0], initial_states[1],
                                            cell.kernel, cell.recurrent_kernel, cell.bias,
                                            go_backwards)
    else:
        last, outputs, states = _fused_gru(inputs, initial_states[0], cell.kernel,
                                           cell.recurrent_kernel, cell.bias, go_backwards)
    return last, outputs, list(states)


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None,
        constants=None, unroll=False, input_length=None):
    """Iterates over the time dimension of a tensor.

    # Arguments
        step_function: called as `step_function(input_t, states + constants)`, returns
            `(output_t, new_states)`.
        inputs: tensor of shape `(samples, time, ...)`.
        initial_states: list of tensors `(samples, ...)` (may be empty, or variables).
        go_backwards: iterate from the last step to the first; outputs are returned in the
            order the loop ran.
        mask: `(samples, time)` tensor; on masked steps outputs repeat the previous output
            (zeros before the first) and states keep their value.
        constants: list of tensors passed to every step after the states.
        unroll: unroll the loop into separate ops (needs a static time dimension).
        input_length: static number of timesteps, for `unroll`.

    # Returns
        `(last_output, outputs, new_states)`: `(samples, ...)`, `(samples, time, ...)` and
        a list of `(samples, ...)` tensors.

    # Raises
        ValueError: for inputs of rank < 3, a mask without states, or `unroll` with an
            unknown number of timesteps.
    """
    initial_states = list(initial_states or [])
    constants = list(constants or [])
    _check_rnn_arguments(inputs, initial_states, mask, unroll, input_length)
    cell = _fusable_cell(step_function, inputs, mask, constants, unroll)
    if cell is not None:
        return _fused_rnn(cell, inputs, initial_states, go_backwards)
    first = -1 if go_backwards else 0
    output_0, _ = step_function(inputs[:, first], initial_states + constants)
    if unroll:
        return _unrolled_rnn(step_function, inputs, initial_states, go_backwards, mask,
                             constants, input_length or graph_shape(inputs)[1], output_0)
    slot_input = _slot_like(inputs, 'rnn_input_t', drop_leading=1)
    slot_states = [_slot_like(s, 'rnn_state_%d' % i) for i, s in enumerate(initial_states)]
    output_t, new_states = step_function(slot_input, slot_states + constants)
    new_states = list(new_states)
    if len(new_states) != len(initial_states):
        raise ValueError('rnn: step_function returned %d states for %d initial states.'
                         % (len(new_states), len(initial_states)))
    trace = _Trace([slot_input] + slot_states, [output_t] + new_states)
    last, outputs, states = _run_rnn(trace, inputs, initial_states, mask, trace.captured,
                                     go_backwards)
    if getattr(output_t, '_uses_learning_phase', False) or \
            getattr(output_0, '_uses_learning_phase', False):
        last._uses_learning_phase = True
    return last, outputs, list(states)


def _unrolled_rnn(step_function, inputs, states, go_backwards, mask, constants, length,
                  output_0):
    steps = range(length - 1, -1, -1) if go_backwards else range(length)
    outputs = []
    previous = zeros_like(output_0) if mask is not None else None
    for t in steps:
        output, new_states = step_function(inputs[:, t], states + constants)
        new_states = list(new_states)
        if mask is not None:
            keep = mask[:, t]
            output = _masked_step(keep, output, previous)
            new_states = [_masked_step(keep, new, old) for new, old in zip(new_states, states)]
            previous = output
        states = new_states
        outputs.append(output)
    stacked = stack(outputs, axis=1)
    last = outputs[-1]
    if any(getattr(o, '_uses_learning_phase', False) for o in outputs + [output_0]):
        last._uses_learning_phase = True
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
