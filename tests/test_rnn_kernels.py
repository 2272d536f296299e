"""The hand-written backward passes of rnn_kernels against numerical gradients (float64)."""
import pytest
import torch

from torchk.rnn_kernels import GRURecurrence, LSTMRecurrence, SimpleRNNRecurrence

STEPS, BATCH, UNITS = 4, 2, 3


def tensors(*shapes):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_()
            for shape in shapes]


def masks(recurrent_dropout, time_mask):
    generator = torch.Generator().manual_seed(1)
    recurrent = None
    if recurrent_dropout:
        recurrent = (torch.rand(BATCH, UNITS, generator=generator) > 0.3).double() / 0.7
    keep = None
    if time_mask:
        keep = torch.rand(STEPS, BATCH, 1, generator=generator) > 0.3
        keep[0, 0] = False
    return recurrent, keep


def combined(outputs):
    """One output depending on the sequence and on every last state, so that the backward
    pass gets all their gradients at once (gradcheck differentiates each output alone)."""
    h_all, *last = outputs
    return h_all * 1.5 + sum(state * (i + 2.) for i, state in enumerate(last))


@pytest.mark.parametrize('activations', [('tanh', 'sigmoid'), ('relu', 'hard_sigmoid'),
                                         ('linear', 'sigmoid')])
@pytest.mark.parametrize('recurrent_dropout', [False, True])
@pytest.mark.parametrize('time_mask', [False, True])
@pytest.mark.parametrize('together', [False, True], ids=['each_output', 'all_outputs'])
def test_kernel_gradients(activations, recurrent_dropout, time_mask, together):
    recurrent_mask, keep = masks(recurrent_dropout, time_mask)
    activation, recurrent_activation = activations
    outputs = combined if together else (lambda outputs: outputs)

    def lstm(projected, h0, c0, kernel):
        return outputs(LSTMRecurrence.apply(projected, h0, c0, kernel, recurrent_mask, keep,
                                            activation, recurrent_activation))
    assert torch.autograd.gradcheck(lstm, tensors((STEPS, BATCH, 4 * UNITS), (BATCH, UNITS),
                                                  (BATCH, UNITS), (UNITS, 4 * UNITS)))
    for reset_after in (False, True):
        def gru(projected, h0, kernel, bias):
            return outputs(GRURecurrence.apply(
                projected, h0, kernel, bias if reset_after else None, recurrent_mask, keep,
                activation, recurrent_activation, reset_after))
        assert torch.autograd.gradcheck(gru, tensors(
            (STEPS, BATCH, 3 * UNITS), (BATCH, UNITS), (UNITS, 3 * UNITS), (3 * UNITS,)))

    def simple(projected, h0, kernel):
        return outputs(SimpleRNNRecurrence.apply(projected, h0, kernel, recurrent_mask, keep,
                                                 activation))
    assert torch.autograd.gradcheck(simple, tensors((STEPS, BATCH, UNITS), (BATCH, UNITS),
                                                    (UNITS, UNITS)))


def meta(*shape):
    return torch.empty(*shape, device='meta').requires_grad_()


@pytest.mark.parametrize('recurrent_dropout', [False, True])
@pytest.mark.parametrize('time_mask', [False, True])
@pytest.mark.parametrize('gradient_on', ['sequence', 'last_state', 'both'])
def test_kernels_read_no_value_from_a_tensor(recurrent_dropout, time_mask, gradient_on):
    """Forward and backward run on the meta device, where reading a value (`item`, `bool`,
    `tolist`: a host sync on CUDA, which would also stop a CUDA graph's capture) raises."""
    recurrent_mask = torch.empty(BATCH, UNITS, device='meta') if recurrent_dropout else None
    keep = torch.empty(STEPS, BATCH, 1, dtype=torch.bool, device='meta') if time_mask else None

    def backward(outputs):
        h_all, h_last = outputs[:2]
        loss = {'sequence': h_all.sum(), 'last_state': h_last.sum(),
                'both': h_all.sum() + h_last.sum()}[gradient_on]
        loss.backward()

    backward(LSTMRecurrence.apply(meta(STEPS, BATCH, 4 * UNITS), meta(BATCH, UNITS),
                                  meta(BATCH, UNITS), meta(UNITS, 4 * UNITS), recurrent_mask,
                                  keep, 'tanh', 'hard_sigmoid'))
    for reset_after in (False, True):
        backward(GRURecurrence.apply(
            meta(STEPS, BATCH, 3 * UNITS), meta(BATCH, UNITS), meta(UNITS, 3 * UNITS),
            meta(3 * UNITS) if reset_after else None, recurrent_mask, keep, 'tanh', 'sigmoid',
            reset_after))
    backward(SimpleRNNRecurrence.apply(meta(STEPS, BATCH, UNITS), meta(BATCH, UNITS),
                                       meta(UNITS, UNITS), recurrent_mask, keep, 'relu'))
