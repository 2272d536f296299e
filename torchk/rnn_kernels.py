"""Whole-sequence recurrences of Keras' `LSTMCell`, `GRUCell` and `SimpleRNNCell`, with
backpropagation through time written by hand in one `torch.autograd.Function` each.

The caller projects the inputs of all timesteps at once (one matmul). A step then runs the
recurrent matmul into a preallocated buffer and its element-wise work in as few ops as torch
has (LSTM: 7 forward, 5 backward; GRU: 6 and 6, or 5 and 4 with `reset_after`; SimpleRNN: 2
and 2; one more forward with recurrent dropout). What does not depend on the recurrence is
done for all timesteps at once: activation derivatives, with the recurrent-dropout mask and
the time mask folded into them, and weight gradients. A loop makes no host synchronisation,
creates no tensor on another device and reads no number from a tensor, so the same loop can
be captured as a CUDA graph. Compiling a step's element-wise work with `torch.compile` (one
C++ kernel instead of five or six ops) or a whole unrolled loop was measured slower on the
CPU: the call of a compiled function costs more than the eager ops it replaces.

Tensors are time-major. The gate blocks of `projected` and of its gradient are in the
kernels' order, `kernel_order` of Keras' (the last block first: LSTM (o, i, f, c), GRU
(h, z, r)), so that gates sharing an activation or a gradient factor sit side by side.
Arguments shared by the kernels:
    projected: inputs times kernel plus input bias, `(time, batch, gates * units)`.
    h0: `(batch, units)`.
    recurrent_kernel: `(units, gates * units)`; LSTM: in the kernel's order, GRU: in
        Keras' order.
    recurrent_mask: `(batch, units)` recurrent-dropout mask that multiplies `h` at the start
        of every step (Keras' `implementation=2`), or None.
    keep: `(time, batch, 1)` bool, False where a masked step holds the states; or None.
    activation, recurrent_activation: names in `ACTIVATIONS`.
Each returns `h` after every step `(time, batch, units)` and the last states (`h`, and `c`
for the LSTM), separate tensors so that a layer using only the last state makes no
gradient flow into the sequence.
"""
import contextlib

import torch

_SMALL_STEP = 65536
"""Steps whose gates have at most this many elements run their ops on one thread."""


def _tanh(x, out):
    return torch.tanh(x, out=out)


def _sigmoid(x, out):
    return torch.sigmoid(x, out=out)


def _hard_sigmoid(x, out):
    return torch.mul(x, 0.2, out=out).add_(0.5).clamp_(0., 1.)


def _relu(x, out):
    return torch.clamp_min(x, 0., out=out)


def _linear(x, out):
    return x if x is out else out.copy_(x)


# name: (f(x, out) writing the activation of `x` into `out`, derivative from the output, in
# one pass over the sequence where torch has the op)
ACTIVATIONS = {
    'tanh': (_tanh, lambda y: torch.addcmul(y.new_ones(()), y, y, value=-1.)),
    'sigmoid': (_sigmoid, lambda y: torch.addcmul(y, y, y, value=-1.)),
    'hard_sigmoid': (_hard_sigmoid, lambda y: ((y > 0.) & (y < 1.)).to(y.dtype) * 0.2),
    'relu': (_relu, lambda y: (y > 0.).to(y.dtype)),
    'linear': (_linear, torch.ones_like),
}


def kernel_order(weight, gates):
    """Keras' gate blocks in the kernels' order, the last block first (LSTM (i, f, c, o) ->
    (o, i, f, c), GRU (z, r, h) -> (h, z, r)): on the last axis of `weight`, which holds
    `gates` blocks, or of a list of one tensor per gate."""
    if isinstance(weight, list):
        return weight[-1:] + weight[:-1]
    return weight.roll(weight.shape[-1] // gates, dims=-1)


@contextlib.contextmanager
def _step_threads(step):
    """One intra-op thread, on the CPU, for the loop over the steps of a small recurrence.

    torch splits element-wise ops of more than 2048 elements (tanh through MKL's VML)
    across threads; on `(batch, units)` tensors waking them costs more than the op, and
    much more on a loaded machine. The input projection and weight gradients, outside the
    loop, keep every thread.
    """
    threads = torch.get_num_threads()
    if threads == 1 or step.device.type != 'cpu' or step.numel() > _SMALL_STEP:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class _States:
    """A state over a forward pass: `all` `(time + 1, batch, units)`, the initial state
    then the state after every step, and `dropped`, the copies the steps' matmuls read
    (times the recurrent mask, if any), with their per-step views. Step t writes its new
    state into `new[t]` and calls `store`."""

    def __init__(self, first, steps, keep, recurrent_mask=None):
        self.all = first.new_empty((steps + 1,) + tuple(first.shape))
        self.all[0] = first
        self.steps = self.all.unbind(0)
        self.keep = None if keep is None else keep.unbind(0)
        self.mask = recurrent_mask
        if recurrent_mask is None:
            self.dropped = self.all[:-1]
        else:
            self.dropped = first.new_empty((steps,) + tuple(first.shape))
            torch.mul(first, recurrent_mask, out=self.dropped[0])
        self.dropped_steps = self.dropped.unbind(0)
        # a masked step computes its new state apart, then holds the old one where masked
        self.new = self.steps[1:] if keep is None else [first.new_empty(first.shape)] * steps

    def store(self, t, new):
        """Makes `new` the state after step `t` (held where the step is masked) and writes
        its dropped copy."""
        if self.keep is not None:
            torch.where(self.keep[t], new, self.steps[t], out=self.steps[t + 1])
        if self.mask is not None and t + 1 < len(self.dropped_steps):
            torch.mul(self.steps[t + 1], self.mask, out=self.dropped_steps[t + 1])


class _StateGradient:
    """The gradient on `h` carried back through the steps.

    `dh` of step t is the gradient on the state after step t. Each step's gradient on its
    dropped input state, written into a buffer of this object (`matmul`, plus any other
    terms), becomes the previous step's `dh` (`previous`): times the recurrent mask, plus
    the part a masked step held, plus the outputs' gradient. Where only the last state has
    an outer gradient, the recurrent mask is instead folded into the factors that multiply
    `dh` of every step but the last (`fold`); the time mask's `keep` is always folded into
    them (a held step passes `dh` on instead).
    """

    def __init__(self, d_h_all, d_h_last, recurrent_mask, keep, states):
        """`states`: a `(time, batch, units)` tensor of the forward pass (for its size and
        dtype)."""
        self.d_outputs = None if d_h_all is None else d_h_all.unbind(0)
        self.mask = recurrent_mask
        self.folded = recurrent_mask is not None and d_h_all is None and keep is None
        self.not_keep = self.scale = None
        if keep is not None:
            self.scale = keep.to(states.dtype)
            self.not_keep = (~keep).to(states.dtype).unbind(0)
        elif self.folded:
            self.scale = recurrent_mask.expand(states.shape).clone()
            self.scale[-1].fill_(1.)
        if d_h_all is None:
            self.last = torch.zeros_like(states[0]) if d_h_last is None else d_h_last
        else:
            self.last = d_h_all[-1] if d_h_last is None else d_h_last + d_h_all[-1]
        gradients = torch.empty_like(states)
        self._steps = gradients.unbind(0)
        self._columns = gradients.unsqueeze(2).unbind(0)

    def fold(self, factor, in_place=True):
        """`factor` (`(time, batch, units)` or `(time, batch, k, units)`) of `dh` with the
        masks folded in (into `factor` itself unless `in_place` is False)."""
        if self.scale is None:
            return factor
        scale = self.scale if factor.dim() == 3 else self.scale.unsqueeze(2)
        return factor.mul_(scale) if in_place else factor * scale

    def _output(self, t):
        return self.d_outputs[t - 1] if self.d_outputs is not None and t > 0 else None

    def matmul(self, t, d_pre, kernel_t):
        """The gradient on step `t`'s dropped input state from its pre-activations (and the
        outputs' gradient at step t - 1 where no mask comes between)."""
        d_output = self._output(t)
        if d_output is not None and self.mask is None:
            return torch.addmm(d_output, d_pre, kernel_t, out=self._steps[t])
        return torch.mm(d_pre, kernel_t, out=self._steps[t])

    def previous(self, t, dh):
        """`dh` of step t - 1, finished in place from step `t`'s `matmul` (plus terms)."""
        d_dropped = self._steps[t]
        if self.mask is not None and not self.folded:
            d_output = self._output(t)
            if d_output is None:
                d_dropped.mul_(self.mask)
            else:
                torch.addcmul(d_output, d_dropped, self.mask, out=d_dropped)
        if self.not_keep is not None:
            d_dropped.addcmul_(dh, self.not_keep[t])
        return d_dropped

    def column(self, t):
        """`previous(t, ...)` viewed `(batch, 1, units)`."""
        return self._columns[t]

    def initial(self, dh):
        """The gradient on the initial state from the first step's `dh`."""
        return dh * self.mask if self.folded else dh


def _stacked_products(*products):
    """Element-wise products stacked on a new axis 2, each written in place: `(a, b)` is
    `a * b` (`b` a tensor or a number), `(a, value, b, c)` is `a + value * b * c`."""
    first = products[0][0]
    stacked = first.new_empty(first.shape[:2] + (len(products),) + first.shape[2:])
    for k, product in enumerate(products):
        if len(product) == 2:
            torch.mul(*product, out=stacked[:, :, k])
        else:
            a, value, b, c = product
            torch.addcmul(a, b, c, value=value, out=stacked[:, :, k])
    return stacked


def _weight_gradient(inputs, d_outputs):
    """Gradient of a matmul's weight, summed over all timesteps: one matmul."""
    return inputs.reshape(-1, inputs.shape[-1]).t() @ d_outputs.reshape(-1, d_outputs.shape[-1])


class LSTMRecurrence(torch.autograd.Function):
    """`LSTMCell` over a sequence, gates in the order (o, i, f, c).
    Returns `(h after every step, last h, last c)`."""

    @staticmethod
    def forward(ctx, projected, h0, c0, recurrent_kernel, recurrent_mask, keep, activation,
                recurrent_activation):
        ctx.set_materialize_grads(False)
        steps, batch, width = projected.shape
        units = width // 4
        act, ract = ACTIVATIONS[activation][0], ACTIVATIONS[recurrent_activation][0]
        gates = torch.empty_like(projected)
        h, c = _States(h0, steps, keep, recurrent_mask), _States(c0, steps, keep)
        tanh_c = projected.new_empty(steps, batch, units)
        # per-step views, made at once
        x_steps, gate_steps, tanh_c_steps = (x.unbind(0) for x in (projected, gates, tanh_c))
        sigmoid_steps, candidate_steps = (
            x.unbind(0) for x in gates.split([3 * units, units], dim=2))
        o_steps, i_steps, f_steps = (x.unbind(0) for x in gates[:, :, :3 * units].split(units, 2))
        with _step_threads(gates[0]):
            for t in range(steps):
                torch.addmm(x_steps[t], h.dropped_steps[t], recurrent_kernel, out=gate_steps[t])
                ract(sigmoid_steps[t], sigmoid_steps[t])
                act(candidate_steps[t], candidate_steps[t])
                c_new = torch.mul(f_steps[t], c.steps[t], out=c.new[t])
                c_new.addcmul_(i_steps[t], candidate_steps[t])
                c.store(t, c_new)
                act(c_new, tanh_c_steps[t])
                h.store(t, torch.mul(o_steps[t], tanh_c_steps[t], out=h.new[t]))
        ctx.save_for_backward(recurrent_kernel, recurrent_mask, keep, gates, c.all, tanh_c,
                              h.dropped)
        ctx.activations = activation, recurrent_activation
        return h.all[1:], h.steps[steps].clone(), c.steps[steps].clone()

    @staticmethod
    def backward(ctx, d_h_all, d_h_last, d_c_last):
        recurrent_kernel, recurrent_mask, keep, gates, c_states, tanh_c, dropped = (
            ctx.saved_tensors)
        dact, dract = (ACTIVATIONS[name][1] for name in ctx.activations)
        steps, batch, width = gates.shape
        units = width // 4
        state = _StateGradient(d_h_all, d_h_last, recurrent_mask, keep, tanh_c)
        o, i, f, candidate = gates.split(units, dim=2)
        do, di, df = dract(gates[:, :, :3 * units]).split(units, dim=2)
        # d(pre-activation of o) = dh * o_factor; of i, f, c: dc * ifc_factors
        o_factor = state.fold(tanh_c * do)
        dc_dh = state.fold(o * dact(tanh_c))
        ifc_factors = _stacked_products((candidate, di), (c_states[:-1], df),
                                        (i, dact(candidate)))
        dc_previous = f
        if keep is not None:
            ifc_factors = state.fold(ifc_factors)
            dc_previous = torch.where(keep, f, torch.ones_like(f))
        d_gates = torch.empty_like(gates)
        kernel_t = recurrent_kernel.t().contiguous()  # mm of a transposed view: 2x slower
        dh = state.last
        dc = torch.zeros_like(dh) if d_c_last is None else d_c_last.clone()
        dc_column = dc.unsqueeze(1)
        d_gate_steps, d_o_steps, d_ifc_steps = (x.unbind(0) for x in (
            d_gates, d_gates[:, :, :units], d_gates[:, :, units:].unflatten(2, (3, units))))
        o_factors, dc_dh_steps, ifc_factor_steps, dc_previous_steps = (
            x.unbind(0) for x in (o_factor, dc_dh, ifc_factors, dc_previous))
        with _step_threads(d_gates[0]):
            for t in range(steps - 1, -1, -1):
                dc.addcmul_(dh, dc_dh_steps[t])
                torch.mul(dh, o_factors[t], out=d_o_steps[t])
                torch.mul(dc_column, ifc_factor_steps[t], out=d_ifc_steps[t])
                dc.mul_(dc_previous_steps[t])
                state.matmul(t, d_gate_steps[t], kernel_t)
                dh = state.previous(t, dh)
        d_kernel = _weight_gradient(dropped, d_gates)
        return d_gates, state.initial(dh), dc, d_kernel, None, None, None, None


class GRURecurrence(torch.autograd.Function):
    """`GRUCell` over a sequence, with the reset gate applied before (`reset_after=False`)
    or after the recurrent matmul; `projected`'s gates in the order (h, z, r), the
    recurrent kernel's in Keras' (z, r, h). `recurrent_bias` (reset_after only, or None,
    Keras' order) is added to the recurrent matmul. The state is mixed from its dropped
    copy, as `implementation=2` does. Returns `(h after every step, last h)`."""

    @staticmethod
    def forward(ctx, projected, h0, recurrent_kernel, recurrent_bias, recurrent_mask, keep,
                activation, recurrent_activation, reset_after):
        ctx.set_materialize_grads(False)
        steps, batch, width = projected.shape
        units = width // 3
        act, ract = ACTIVATIONS[activation][0], ACTIVATIONS[recurrent_activation][0]
        x_h, x_zr = projected.split([units, 2 * units], dim=2)
        candidates = projected.new_empty(steps, batch, units)
        h = _States(h0, steps, keep, recurrent_mask)
        if reset_after:
            # z, r (activated) and the recurrent matmul's h part, for every step; the
            # matmul adds itself to the inputs' z and r parts and the recurrent bias
            inner = projected.new_empty(steps, batch, 3 * units)
            base = torch.empty_like(inner)
            if recurrent_bias is None:
                base[:, :, :2 * units] = x_zr
                base[:, :, 2 * units:].zero_()
            else:
                torch.add(x_zr, recurrent_bias[:2 * units], out=base[:, :, :2 * units])
                base[:, :, 2 * units:] = recurrent_bias[2 * units:]
            zr = inner[:, :, :2 * units]
        else:
            zr = projected.new_empty(steps, batch, 2 * units)
            inner = projected.new_empty(steps, batch, units)  # r * h of every step
            kernel_zr, kernel_h = recurrent_kernel.split([2 * units, units], dim=1)
        # per-step views, made at once
        x_h_steps, x_zr_steps, zr_steps, inner_steps, candidate_steps = (
            x.unbind(0) for x in (x_h, x_zr, zr, inner, candidates))
        z_steps, r_steps = (x.unbind(0) for x in zr.split(units, dim=2))
        if reset_after:
            base_steps = base.unbind(0)
            inner_h_steps = inner[:, :, 2 * units:].unbind(0)
        with _step_threads(projected[0]):
            for t in range(steps):
                hd = h.dropped_steps[t]
                if reset_after:
                    torch.addmm(base_steps[t], hd, recurrent_kernel, out=inner_steps[t])
                    ract(zr_steps[t], zr_steps[t])
                    candidate = torch.addcmul(x_h_steps[t], r_steps[t], inner_h_steps[t],
                                              out=candidate_steps[t])
                else:
                    torch.addmm(x_zr_steps[t], hd, kernel_zr, out=zr_steps[t])
                    ract(zr_steps[t], zr_steps[t])
                    reset_h = torch.mul(r_steps[t], hd, out=inner_steps[t])
                    candidate = torch.addmm(x_h_steps[t], reset_h, kernel_h,
                                            out=candidate_steps[t])
                act(candidate, candidate)
                h.store(t, torch.lerp(candidate, hd, z_steps[t], out=h.new[t]))
        ctx.save_for_backward(recurrent_kernel, recurrent_mask, keep, zr, candidates, inner,
                              h.dropped)
        ctx.reset_after = reset_after
        ctx.activations = activation, recurrent_activation
        ctx.has_bias = recurrent_bias is not None
        return h.all[1:], h.steps[steps].clone()

    @staticmethod
    def backward(ctx, d_h_all, d_h_last):
        recurrent_kernel, recurrent_mask, keep, zr, candidates, inner, dropped = (
            ctx.saved_tensors)
        dact, dract = (ACTIVATIONS[name][1] for name in ctx.activations)
        reset_after = ctx.reset_after
        steps, batch, units = candidates.shape
        state = _StateGradient(d_h_all, d_h_last, recurrent_mask, keep, candidates)
        z, r = zr.split(units, dim=2)
        # h = lerp(candidate, hd, z): d(pre-activations of candidate and z) = dh * these,
        # d(hd) = dh * z + what the matmuls give back
        d_candidates = dact(candidates)
        candidate_z_factors = state.fold(_stacked_products(
            (d_candidates, -1., z, d_candidates), (dropped - candidates, dract(z))))
        z_factor = state.fold(z, in_place=False)
        # d(pre-activations) in the order (candidate, z, r[, the recurrent matmul's h part])
        d_pre = candidates.new_empty(steps, batch, (4 if reset_after else 3) * units)
        kernel_t = recurrent_kernel.t().contiguous()  # mm of a transposed view: 2x slower
        if reset_after:
            # d(pre-activation of r) and d(the matmul's h part) = d(candidate) * these
            r_factors = _stacked_products((inner[:, :, 2 * units:], dract(r)), (r, 1.))
            d_r_inner_steps = d_pre[:, :, 2 * units:].unflatten(2, (2, units)).unbind(0)
        else:
            kernel_zr_t, kernel_h_t = kernel_t.split([2 * units, units], dim=0)
            r_factors = dropped * dract(r)
            d_r_steps = d_pre[:, :, 2 * units:].unbind(0)
            d_reset_h_steps = torch.empty_like(candidates).unbind(0)
        d_candidate_z_steps, d_candidate_steps, d_candidate_columns, d_matmul_steps = (
            x.unbind(0) for x in (d_pre[:, :, :2 * units].unflatten(2, (2, units)),
                                  d_pre[:, :, :units], d_pre[:, :, :units].unsqueeze(2),
                                  d_pre[:, :, units:]))
        factor_steps, z_factor_steps, r_factor_steps, r_steps = (
            x.unbind(0) for x in (candidate_z_factors, z_factor, r_factors, r))
        dh = state.last
        dh_column = dh.unsqueeze(1)
        with _step_threads(d_pre[0]):
            for t in range(steps - 1, -1, -1):
                torch.mul(dh_column, factor_steps[t], out=d_candidate_z_steps[t])
                if reset_after:
                    torch.mul(d_candidate_columns[t], r_factor_steps[t],
                              out=d_r_inner_steps[t])
                    d_dropped = state.matmul(t, d_matmul_steps[t], kernel_t)
                else:
                    d_reset_h = torch.mm(d_candidate_steps[t], kernel_h_t,
                                         out=d_reset_h_steps[t])
                    torch.mul(d_reset_h, r_factor_steps[t], out=d_r_steps[t])
                    d_dropped = state.matmul(t, d_matmul_steps[t], kernel_zr_t)
                    d_dropped.addcmul_(d_reset_h, r_steps[t])
                d_dropped.addcmul_(dh, z_factor_steps[t])
                dh, dh_column = state.previous(t, dh), state.column(t)
        if reset_after:
            d_kernel = _weight_gradient(dropped, d_pre[:, :, units:])
        else:
            d_kernel = torch.cat([_weight_gradient(dropped, d_pre[:, :, units:]),
                                  _weight_gradient(inner, d_pre[:, :, :units])], dim=1)
        d_bias = d_pre[:, :, units:].sum((0, 1)) if ctx.has_bias else None
        return (d_pre[:, :, :3 * units], state.initial(dh), d_kernel, d_bias, None, None, None,
                None, None)


class SimpleRNNRecurrence(torch.autograd.Function):
    """`SimpleRNNCell` over a sequence. Returns `(h after every step, last h)`."""

    @staticmethod
    def forward(ctx, projected, h0, recurrent_kernel, recurrent_mask, keep, activation):
        ctx.set_materialize_grads(False)
        steps = projected.shape[0]
        act = ACTIVATIONS[activation][0]
        h = _States(h0, steps, keep, recurrent_mask)
        # the activation's outputs: the states, unless masked steps hold some
        new = h.all[1:] if keep is None else torch.empty_like(projected)
        x_steps, new_steps = projected.unbind(0), new.unbind(0)
        with _step_threads(projected[0]):
            for t in range(steps):
                torch.addmm(x_steps[t], h.dropped_steps[t], recurrent_kernel, out=new_steps[t])
                h.store(t, act(new_steps[t], new_steps[t]))
        ctx.save_for_backward(recurrent_kernel, recurrent_mask, keep, new, h.dropped)
        ctx.activation = activation
        return h.all[1:], h.steps[steps].clone()

    @staticmethod
    def backward(ctx, d_h_all, d_h_last):
        recurrent_kernel, recurrent_mask, keep, new, dropped = ctx.saved_tensors
        steps = new.shape[0]
        state = _StateGradient(d_h_all, d_h_last, recurrent_mask, keep, new)
        factor = state.fold(ACTIVATIONS[ctx.activation][1](new))
        d_projected = torch.empty_like(new)
        kernel_t = recurrent_kernel.t().contiguous()  # mm of a transposed view: 2x slower
        dh = state.last
        d_steps, factor_steps = (x.unbind(0) for x in (d_projected, factor))
        with _step_threads(d_projected[0]):
            for t in range(steps - 1, -1, -1):
                torch.mul(dh, factor_steps[t], out=d_steps[t])
                state.matmul(t, d_steps[t], kernel_t)
                dh = state.previous(t, dh)
        d_kernel = _weight_gradient(dropped, d_projected)
        return d_projected, state.initial(dh), d_kernel, None, None, None
