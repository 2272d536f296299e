"""Exportable recurrences: loops over a dynamic time axis with `torch._higher_order_ops.scan`.

`torch.export` cannot trace a Python loop over a time axis of unknown length (it would fix
the length), nor `torch.lstm` with a dynamic time axis; a `scan` becomes one node whose body
is traced once. `rnn.py` runs these instead of its loops and kernels while a program is
being exported (`graph.exporting()`); they compute the same values, without a
hand-written backward (an exported program is for inference).

Arguments shared with `rnn_kernels` (time-major tensors): `projected` `(time, batch,
gates * units)`, states `(batch, units)`, `recurrent_kernel` `(units, gates * units)` in
Keras' gate order, `recurrent_mask` multiplying `h` at the start of each step (or None),
`keep` `(time, batch, 1)` bool, False where a masked step holds the states (or None).
"""
import torch
from torch._higher_order_ops import scan

ACTIVATIONS = {
    'tanh': torch.tanh,
    'sigmoid': torch.sigmoid,
    'hard_sigmoid': lambda x: (x * 0.2 + 0.5).clamp(0., 1.),
    'relu': torch.relu,
    'linear': lambda x: x * 1.,
}
"""The functions of `rnn_kernels.ACTIVATIONS`, without `out=` (a scan body is pure)."""


def _separate(tensors):
    """Copies of `tensors`: a scan's inputs must not alias one another (Keras gives both
    LSTM states the same zeros, and cells read slices of one kernel)."""
    return [t.clone() if isinstance(t, torch.Tensor) else t for t in tensors]


def _dropped(h, recurrent_mask):
    return h if recurrent_mask is None else h * recurrent_mask


def _lstm_step(recurrent_kernel, recurrent_mask, act, ract):
    def step(states, x):
        h, c = states
        gates = x + _dropped(h, recurrent_mask) @ recurrent_kernel
        i, f, candidate, o = gates.chunk(4, dim=-1)
        c_new = ract(f) * c + ract(i) * act(candidate)
        return ract(o) * act(c_new), c_new
    return step


def _gru_step(recurrent_kernel, recurrent_bias, recurrent_mask, act, ract, reset_after):
    # gates by `chunk`, not by sizes read outside the body: ONNX decomposition re-traces
    # the body and a captured size becomes a symbolic output
    def step(states, x):
        h, = states
        hd = _dropped(h, recurrent_mask)
        x_z, x_r, x_h = x.chunk(3, dim=-1)
        if reset_after:
            inner = hd @ recurrent_kernel
            if recurrent_bias is not None:
                inner = inner + recurrent_bias
            inner_z, inner_r, inner_h = inner.chunk(3, dim=-1)
            z, r = ract(x_z + inner_z), ract(x_r + inner_r)
            candidate = act(x_h + r * inner_h)
        else:
            kernel_z, kernel_r, kernel_h = recurrent_kernel.chunk(3, dim=-1)
            z, r = ract(x_z + hd @ kernel_z), ract(x_r + hd @ kernel_r)
            candidate = act(x_h + (r * hd) @ kernel_h)
        return (candidate + z * (hd - candidate),)
    return step


def _simple_step(recurrent_kernel, recurrent_mask, act):
    def step(states, x):
        h, = states
        return (act(x + _dropped(h, recurrent_mask) @ recurrent_kernel),)
    return step


def _held(step):
    """`step` over `(x, keep)` slices: masked samples keep their states."""
    def held_step(states, xs):
        x, keep = xs
        new = step(states, x)
        return tuple(torch.where(keep, n, s) for n, s in zip(new, states))
    return held_step


def cell_recurrence(cell_name, projected, initial_states, recurrent_kernel, recurrent_bias,
                    recurrent_mask, keep, activation, recurrent_activation, reset_after):
    """A Keras `LSTMCell`, `GRUCell` or `SimpleRNNCell` over a sequence.

    # Returns
        `(h of every step, final states)`: `(time, batch, units)` and a list of states.
    """
    act = ACTIVATIONS[activation]
    if cell_name == 'LSTMCell':
        step = _lstm_step(recurrent_kernel, recurrent_mask, act,
                          ACTIVATIONS[recurrent_activation])
    elif cell_name == 'GRUCell':
        step = _gru_step(recurrent_kernel, recurrent_bias, recurrent_mask, act,
                         ACTIVATIONS[recurrent_activation], reset_after)
    else:
        step = _simple_step(recurrent_kernel, recurrent_mask, act)
    xs = projected if keep is None else (projected, keep)
    body = step if keep is None else _held(step)

    def combine(states, x):
        new = body(states, x)
        return new, new[0].clone()
    states, h_all = scan(combine, tuple(_separate(initial_states)), xs)
    return h_all, list(states)


def loop(step, inputs, initial_states, mask, captured, n_outputs):
    """A traced step function (`rnn._Trace`) over the time axis (axis 1) of `inputs` (a
    list of tensors), returning `n_outputs` outputs and then the new states.

    # Returns
        `(outputs, final states)`: lists, each output `(batch, time, ...)`; on masked steps
        outputs repeat the previous output (zeros before the first kept step) and states
        hold.
    """
    xs = tuple(x.transpose(0, 1) for x in inputs)
    initial_states, captured = _separate(initial_states), _separate(captured)
    if mask is None:
        def combine(states, x):
            results = step(*x, *states, *captured)
            return tuple(results[n_outputs:]), tuple(o.clone() for o in results[:n_outputs])
        states, outputs = scan(combine, tuple(initial_states), xs)
        return [o.transpose(0, 1) for o in outputs], list(states)

    first_outputs = step(*[x[0] for x in xs], *initial_states, *captured)[:n_outputs]

    def masked_combine(carry, x_and_keep):
        previous, states = carry
        x, keep = x_and_keep
        results = step(*x, *states, *captured)
        output = tuple(torch.where(_expand(keep, o), o, p)
                       for o, p in zip(results[:n_outputs], previous))
        new_states = tuple(torch.where(_expand(keep, n), n, s)
                           for n, s in zip(results[n_outputs:], states))
        return (output, new_states), tuple(o.clone() for o in output)
    carry = (tuple(torch.zeros_like(o) for o in first_outputs), tuple(initial_states))
    (_, states), outputs = scan(masked_combine, carry, (xs, mask.t().bool()))
    return [o.transpose(0, 1) for o in outputs], list(states)


def _expand(keep, value):
    return keep.reshape(tuple(keep.shape) + (1,) * (value.ndim - keep.ndim))
