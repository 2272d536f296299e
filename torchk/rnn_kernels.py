"""Whole-sequence recurrences of Keras' `LSTMCell`, `GRUCell` and `SimpleRNNCell`, with
backpropagation through time written by hand in one `torch.autograd.Function` each.

The caller projects the inputs of all timesteps at once (one matmul); a step here runs the
recurrent matmul and a few in-place element-wise ops into preallocated buffers, and what
does not depend on the recurrence (activation derivatives, weight gradients) is computed for
all timesteps at once, so autograd sees one node instead of a dozen per step.

Tensors are time-major. Arguments shared by the kernels:
    projected: inputs times kernel plus input bias, `(time, batch, gates * units)`.
    h0: `(batch, units)`.
    recurrent_kernel: `(units, gates * units)`, Keras' gate order.
    recurrent_mask: `(batch, units)` recurrent-dropout mask that multiplies `h` at the start
        of every step (Keras' `implementation=2`), or None.
    keep: `(time, batch, 1)` bool, False where a masked step holds the states; or None.
    activation, recurrent_activation: names in `ACTIVATIONS`.
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
    return out.copy_(x)


# name: (f(x, out) writing the activation of `x` into `out`, derivative from the output)
ACTIVATIONS = {
    'tanh': (_tanh, lambda y: 1. - y * y),
    'sigmoid': (_sigmoid, lambda y: y * (1. - y)),
    'hard_sigmoid': (_hard_sigmoid, lambda y: ((y > 0.) & (y < 1.)).to(y.dtype) * 0.2),
    'relu': (_relu, lambda y: (y > 0.).to(y.dtype)),
    'linear': (_linear, torch.ones_like),
}


@contextlib.contextmanager
def _step_threads(gates):
    """One intra-op thread, on the CPU, for the loop over the steps of a small recurrence.

    torch splits element-wise ops of more than 2048 elements (tanh through MKL's VML)
    across threads; on `(batch, units)` tensors waking them costs more than the op, and
    much more on a loaded machine. The input projection and weight gradients, outside the
    loop, keep every thread.
    """
    threads = torch.get_num_threads()
    if threads == 1 or gates.device.type != 'cpu' or gates.numel() > _SMALL_STEP:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _previous(first, states):
    """The state each step starts from: `first`, then every state but the last."""
    return torch.cat([first[None], states[:-1]])


def _dropped(h, recurrent_mask):
    return h if recurrent_mask is None else h * recurrent_mask


def _hold(keep, t, new, old, out):
    """The state after step `t`: `new` (already in `out` when nothing is masked), or `old`
    where the step is masked."""
    if keep is None:
        return new
    return torch.where(keep[t], new, old, out=out)


def _split_held(keep, t, gradient):
    """Splits the gradient on a held state into (new state's part, previous state's part)."""
    if keep is None:
        return gradient, None
    return gradient * keep[t], gradient * ~keep[t]


def _sequence_gradient(d_h_all):
    """The outputs' gradient, or None when only the last step has one (a layer without
    `return_sequences`): the steps then need not add zeros."""
    return d_h_all if bool(d_h_all[:-1].any()) else None


def _to_previous(d_dropped, t, d_outputs, recurrent_mask, held):
    """Gradient on the state before step `t`, from the gradient on its dropped copy, the
    part a masked step held, and the outputs' gradient at step `t - 1` (if any)."""
    if recurrent_mask is not None:
        d_dropped = d_dropped.mul_(recurrent_mask)
    if held is not None:
        d_dropped = d_dropped.add_(held)
    if t > 0 and d_outputs is not None:
        d_dropped = d_dropped.add_(d_outputs[t - 1])
    return d_dropped


class LSTMRecurrence(torch.autograd.Function):
    """`LSTMCell` over a sequence. Returns `(h for every step, last c)`."""

    @staticmethod
    def forward(ctx, projected, h0, c0, recurrent_kernel, recurrent_mask, keep, activation,
                recurrent_activation):
        steps, batch, width = projected.shape
        units = width // 4
        act, ract = ACTIVATIONS[activation][0], ACTIVATIONS[recurrent_activation][0]
        gates_all = torch.empty_like(projected)
        h_all = projected.new_empty(steps, batch, units)
        c_all, tanh_c_all = torch.empty_like(h_all), torch.empty_like(h_all)
        # per-step views, made at once
        x_steps, gate_steps, h_steps, c_steps, tanh_c_steps = (
            x.unbind(0) for x in (projected, gates_all, h_all, c_all, tanh_c_all))
        if_steps = gates_all[:, :, :2 * units].unbind(0)
        i_steps, f_steps, candidate_steps, o_steps = (
            x.unbind(0) for x in gates_all.split(units, dim=2))
        h, c = h0, c0
        with _step_threads(gates_all[0]):
            for t in range(steps):
                torch.addmm(x_steps[t], _dropped(h, recurrent_mask), recurrent_kernel,
                            out=gate_steps[t])
                ract(if_steps[t], if_steps[t])
                act(candidate_steps[t], candidate_steps[t])
                ract(o_steps[t], o_steps[t])
                c_new = torch.mul(f_steps[t], c, out=c_steps[t] if keep is None else None)
                c_new.addcmul_(i_steps[t], candidate_steps[t])
                h_new = torch.mul(o_steps[t], act(c_new, tanh_c_steps[t]),
                                  out=h_steps[t] if keep is None else None)
                h = _hold(keep, t, h_new, h, h_steps[t])
                c = _hold(keep, t, c_new, c, c_steps[t])
        ctx.save_for_backward(h0, c0, recurrent_kernel, recurrent_mask, keep, gates_all,
                              h_all, c_all, tanh_c_all)
        ctx.activations = activation, recurrent_activation
        return h_all, c.clone()

    @staticmethod
    def backward(ctx, d_h_all, d_c):
        (h0, c0, recurrent_kernel, recurrent_mask, keep, gates_all, h_all, c_all,
         tanh_c_all) = ctx.saved_tensors
        dact, dract = (ACTIVATIONS[name][1] for name in ctx.activations)
        steps, batch, width = gates_all.shape
        units = width // 4
        i, f, candidate, o = gates_all.split(units, dim=2)
        # d(pre-activations of i, f, candidate) = dc * these; of o: dh * o_factor
        ifc_factors = torch.stack([candidate * dract(i), _previous(c0, c_all) * dract(f),
                                   i * dact(candidate)], dim=2)
        o_factor = tanh_c_all * dract(o)
        dc_dh = o * dact(tanh_c_all)
        d_gates = torch.empty_like(gates_all)
        d_ifc = d_gates.view(steps, batch, 4, units)[:, :, :3]
        kernel_t = recurrent_kernel.t().contiguous()
        d_outputs = _sequence_gradient(d_h_all)
        dh = d_h_all[steps - 1]
        d_gate_steps, d_ifc_steps, d_o_steps = (
            x.unbind(0) for x in (d_gates, d_ifc, d_gates[:, :, 3 * units:]))
        dc_dh_steps, o_factors, ifc_factor_steps, f_steps = (
            x.unbind(0) for x in (dc_dh, o_factor, ifc_factors, f))
        with _step_threads(d_gates[0]):
            for t in range(steps - 1, -1, -1):
                dh_new, dh_held = _split_held(keep, t, dh)
                dc_new, dc_held = _split_held(keep, t, d_c)
                dc_new = torch.addcmul(dc_new, dh_new, dc_dh_steps[t])
                torch.mul(dh_new, o_factors[t], out=d_o_steps[t])
                torch.mul(dc_new.unsqueeze(1), ifc_factor_steps[t], out=d_ifc_steps[t])
                d_c = dc_new.mul_(f_steps[t])
                if dc_held is not None:
                    d_c = d_c.add_(dc_held)
                dh = _to_previous(torch.mm(d_gate_steps[t], kernel_t), t, d_outputs,
                                  recurrent_mask, dh_held)
        d_kernel = _weight_gradient(_dropped(_previous(h0, h_all), recurrent_mask), d_gates)
        return d_gates, dh, d_c, d_kernel, None, None, None, None


class GRURecurrence(torch.autograd.Function):
    """`GRUCell` over a sequence, with the reset gate applied before (`reset_after=False`)
    or after the recurrent matmul. Gates z, r, h. `recurrent_bias` (reset_after only, or
    None) is added to the recurrent matmul; its r and z parts may as well be in
    `projected`. The state is mixed from its dropped copy, as `implementation=2` does.
    Returns h for every step."""

    @staticmethod
    def forward(ctx, projected, h0, recurrent_kernel, recurrent_bias, recurrent_mask, keep,
                activation, recurrent_activation, reset_after):
        steps, batch, width = projected.shape
        units = width // 3
        act, ract = ACTIVATIONS[activation][0], ACTIVATIONS[recurrent_activation][0]
        zr_all = projected.new_empty(steps, batch, 2 * units)
        candidate_all = projected.new_empty(steps, batch, units)
        h_all = torch.empty_like(candidate_all)
        # reset_after: the recurrent matmul of every step; else r * h of every step
        inner_all = projected.new_empty(steps, batch, 3 * units if reset_after else units)
        kernel_zr = recurrent_kernel[:, :2 * units].contiguous()
        kernel_h = recurrent_kernel[:, 2 * units:].contiguous()
        # per-step views, made at once
        x_zr, x_h = (x.unbind(0) for x in projected.split([2 * units, units], dim=2))
        zr_steps, z_steps, r_steps = (x.unbind(0) for x in (zr_all, *zr_all.split(units, 2)))
        inner_steps, candidate_steps = inner_all.unbind(0), candidate_all.unbind(0)
        h_steps = h_all.unbind(0)
        h = h0
        with _step_threads(projected[0]):
            for t in range(steps):
                hd = _dropped(h, recurrent_mask)
                if reset_after:
                    inner = (torch.mm(hd, recurrent_kernel, out=inner_steps[t])
                             if recurrent_bias is None else
                             torch.addmm(recurrent_bias, hd, recurrent_kernel,
                                         out=inner_steps[t]))
                    ract(torch.add(x_zr[t], inner[:, :2 * units], out=zr_steps[t]),
                         zr_steps[t])
                    candidate = torch.addcmul(x_h[t], r_steps[t], inner[:, 2 * units:],
                                              out=candidate_steps[t])
                else:
                    ract(torch.addmm(x_zr[t], hd, kernel_zr, out=zr_steps[t]), zr_steps[t])
                    reset_h = torch.mul(r_steps[t], hd, out=inner_steps[t])
                    candidate = torch.addmm(x_h[t], reset_h, kernel_h, out=candidate_steps[t])
                act(candidate, candidate)
                h_new = torch.addcmul(candidate, z_steps[t], hd - candidate,
                                      out=h_steps[t] if keep is None else None)
                h = _hold(keep, t, h_new, h, h_steps[t])
        ctx.save_for_backward(h0, recurrent_kernel, recurrent_mask, keep, zr_all,
                              candidate_all, h_all, inner_all)
        ctx.activations = activation, recurrent_activation
        ctx.reset_after = reset_after
        ctx.has_bias = recurrent_bias is not None
        return h_all

    @staticmethod
    def backward(ctx, d_h_all):
        (h0, recurrent_kernel, recurrent_mask, keep, zr_all, candidate_all, h_all,
         inner_all) = ctx.saved_tensors
        dact, dract = (ACTIVATIONS[name][1] for name in ctx.activations)
        reset_after = ctx.reset_after
        steps, batch, units = h_all.shape
        z, r = zr_all.split(units, dim=2)
        hd_previous = _dropped(_previous(h0, h_all), recurrent_mask)
        z_factor = (hd_previous - candidate_all) * dract(z)
        candidate_factor = (1. - z) * dact(candidate_all)
        # d(pre-activation of r) = d(pre-activation of h) * this, after (or before) the matmul
        r_factor = (inner_all[:, :, 2 * units:] if reset_after else hd_previous) * dract(r)
        # reset_after: gradient of the recurrent matmul's result (z, r, h); else of z and r
        d_inner = h_all.new_empty(steps, batch, (3 if reset_after else 2) * units)
        d_candidate_all = torch.empty_like(h_all)
        kernel_t = recurrent_kernel.t().contiguous()
        kernel_zr_t, kernel_h_t = kernel_t[:2 * units], kernel_t[2 * units:]
        d_outputs = _sequence_gradient(d_h_all)
        dh = d_h_all[steps - 1]
        d_steps, d_candidates = d_inner.unbind(0), d_candidate_all.unbind(0)
        d_z_steps, d_r_steps = (x.unbind(0) for x in (d_inner[:, :, :units],
                                                       d_inner[:, :, units:2 * units]))
        d_rh_steps = d_inner[:, :, 2 * units:].unbind(0)
        z_steps, r_steps = z.unbind(0), r.unbind(0)
        z_factors, candidate_factors, r_factors = (
            x.unbind(0) for x in (z_factor, candidate_factor, r_factor))
        with _step_threads(d_inner[0]):
            for t in range(steps - 1, -1, -1):
                dh_new, dh_held = _split_held(keep, t, dh)
                torch.mul(dh_new, z_factors[t], out=d_z_steps[t])
                d_candidate = torch.mul(dh_new, candidate_factors[t], out=d_candidates[t])
                if reset_after:
                    torch.mul(d_candidate, r_factors[t], out=d_r_steps[t])
                    torch.mul(d_candidate, r_steps[t], out=d_rh_steps[t])
                    d_hd = torch.mm(d_steps[t], kernel_t)
                else:
                    d_reset_h = torch.mm(d_candidate, kernel_h_t)
                    torch.mul(d_reset_h, r_factors[t], out=d_r_steps[t])
                    d_hd = torch.mm(d_steps[t], kernel_zr_t)
                    d_hd.addcmul_(d_reset_h, r_steps[t])
                d_hd.addcmul_(dh_new, z_steps[t])
                dh = _to_previous(d_hd, t, d_outputs, recurrent_mask, dh_held)
        d_projected = torch.cat([d_inner[:, :, :2 * units], d_candidate_all], dim=2)
        if reset_after:
            d_kernel = _weight_gradient(hd_previous, d_inner)
        else:
            d_kernel = torch.cat([_weight_gradient(hd_previous, d_inner),
                                  _weight_gradient(inner_all, d_candidate_all)], dim=1)
        d_bias = d_inner.sum((0, 1)) if ctx.has_bias else None
        return d_projected, dh, d_kernel, d_bias, None, None, None, None, None


class SimpleRNNRecurrence(torch.autograd.Function):
    """`SimpleRNNCell` over a sequence. Returns h for every step."""

    @staticmethod
    def forward(ctx, projected, h0, recurrent_kernel, recurrent_mask, keep, activation):
        act = ACTIVATIONS[activation][0]
        new_all = torch.empty_like(projected)
        h_all = new_all if keep is None else torch.empty_like(projected)
        h = h0
        with _step_threads(projected[0]):
            for t in range(projected.shape[0]):
                h_new = torch.addmm(projected[t], _dropped(h, recurrent_mask), recurrent_kernel,
                                    out=new_all[t])
                h = _hold(keep, t, act(h_new, h_new), h, h_all[t])
        ctx.save_for_backward(h0, recurrent_kernel, recurrent_mask, keep, new_all, h_all)
        ctx.activation = activation
        return h_all

    @staticmethod
    def backward(ctx, d_h_all):
        h0, recurrent_kernel, recurrent_mask, keep, new_all, h_all = ctx.saved_tensors
        factor = ACTIVATIONS[ctx.activation][1](new_all)
        d_projected = torch.empty_like(new_all)
        kernel_t = recurrent_kernel.t().contiguous()
        d_outputs = _sequence_gradient(d_h_all)
        dh = d_h_all[new_all.shape[0] - 1]
        with _step_threads(d_projected[0]):
            for t in range(new_all.shape[0] - 1, -1, -1):
                dh_new, dh_held = _split_held(keep, t, dh)
                d_new = torch.mul(dh_new, factor[t], out=d_projected[t])
                dh = _to_previous(torch.mm(d_new, kernel_t), t, d_outputs, recurrent_mask,
                                  dh_held)
        d_kernel = _weight_gradient(_dropped(_previous(h0, h_all), recurrent_mask),
                                    d_projected)
        return d_projected, dh, d_kernel, None, None, None


def _weight_gradient(inputs, d_outputs):
    """Gradient of a matmul's weight, summed over all timesteps: one matmul."""
    return inputs.reshape(-1, inputs.shape[-1]).t() @ d_outputs.reshape(-1, d_outputs.shape[-1])
