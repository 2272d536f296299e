"""K.rnn (over tensors and over nested structures), map_fn, foldl and foldr against keras'
numpy_backend and numpy."""
import types

import numpy as np
import pytest
import torch

from reference import numpy_backend as npb
from torchk import core as K
from torchk import structure

RNG = np.random.RandomState(0)
INPUTS = RNG.randn(3, 6, 4).astype('float32')
KERNEL = (RNG.randn(4, 5) * 0.5).astype('float32')
RECURRENT = (RNG.randn(5, 5) * 0.5).astype('float32')
CONSTANT = RNG.randn(3, 5).astype('float32')
MASK = np.ones((3, 6), dtype=bool)
MASK[1, 4:] = False
MASK[2, :2] = False


def make_step(ops, kernel, recurrent, two_states, with_constant):
    """A step function written once, for both backends (`ops` is K or npb)."""
    def step(x_t, states):
        h = ops.tanh(ops.dot(x_t, kernel) + ops.dot(states[0], recurrent))
        if with_constant:
            h = h + states[-1]
        new_states = [h, states[1] + h] if two_states else [h]
        return h, new_states
    return step


@pytest.mark.parametrize('masked', [False, True])
@pytest.mark.parametrize('go_backwards', [False, True])
@pytest.mark.parametrize('two_states', [False, True])
@pytest.mark.parametrize('with_constant', [False, True])
@pytest.mark.parametrize('unroll', [False, True])
def test_rnn_matches_numpy_backend(masked, go_backwards, two_states, with_constant, unroll):
    initial = np.zeros((3, 5), 'float32')
    np_states = [initial] * (2 if two_states else 1)
    expected = npb.rnn(make_step(npb, KERNEL, RECURRENT, two_states, with_constant), INPUTS,
                       np_states, go_backwards=go_backwards, mask=MASK if masked else None,
                       constants=[CONSTANT] if with_constant else None)

    x = K.placeholder(shape=(None, 6 if unroll else None, 4))
    mask = K.placeholder(shape=(None, None), dtype='bool')
    constant = K.placeholder(shape=(None, 5))
    h0 = K.placeholder(shape=(None, 5))
    step = make_step(K, K.variable(KERNEL), K.variable(RECURRENT), two_states, with_constant)
    last, outputs, states = K.rnn(step, x, [h0] * (2 if two_states else 1),
                                  go_backwards=go_backwards, mask=mask if masked else None,
                                  constants=[constant] if with_constant else None,
                                  unroll=unroll, input_length=6)
    assert K.int_shape(outputs) == (None, 6 if unroll else None, 5)
    assert K.int_shape(last) == (None, 5)
    f = K.function([x, mask, constant, h0], [last, outputs] + list(states))
    got = f([INPUTS, MASK, CONSTANT, initial])
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)
    for value, reference in zip(got[2:], expected[2]):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


NESTED = {'a': RNG.randn(3, 6, 2).astype('float32'),
          'b': RNG.randn(3, 6, 3, 2).astype('float32')}
NESTED_KERNEL = (RNG.randn(2, 2) * 0.5).astype('float32')
NUMPY_OPS = types.SimpleNamespace(tanh=np.tanh, dot=np.dot, expand_dims=np.expand_dims)


def nested_step(ops, kernel):
    """A step over nested structures, for K and numpy: inputs `{'a', 'b'}`, states
    `[h, (c,)]`, outputs `(h, {'c': c})`."""
    def step(x_t, states):
        h, (c,) = states
        h = ops.tanh(ops.dot(x_t['a'], kernel) + h)
        c = c * 0.5 + x_t['b'] * ops.expand_dims(h, 1)
        return (h, {'c': c}), [h, (c,)]
    return step


def numpy_nested_rnn(step, inputs, states, mask, go_backwards):
    """K.rnn's loop in numpy over nested structures: masked steps repeat the previous output
    (zeros before the first) and keep the states."""
    steps = range(6)[::-1] if go_backwards else range(6)
    outputs, previous = [], None
    for t in steps:
        output, new_states = step({k: x[:, t] for k, x in inputs.items()}, states)
        if mask is not None:
            keep = mask[:, t]

            def held(new, old):
                return np.where(keep.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)
            previous = previous or structure.map_structure(np.zeros_like, output)
            output = structure.map_structure(held, output, previous)
            new_states = structure.map_structure(held, new_states, states)
        states, previous = new_states, output
        outputs.append(output)
    stacked = structure.map_structure(lambda *o: np.stack(o, axis=1), *outputs)
    return outputs[-1], stacked, states


@pytest.mark.parametrize('masked', [False, True])
@pytest.mark.parametrize('go_backwards', [False, True])
@pytest.mark.parametrize('unroll', [False, True])
def test_rnn_over_nested_structures_matches_numpy(masked, go_backwards, unroll):
    h0 = RNG.randn(3, 2).astype('float32')
    c0 = RNG.randn(3, 3, 2).astype('float32')
    expected = numpy_nested_rnn(nested_step(NUMPY_OPS, NESTED_KERNEL), NESTED,
                                [h0, (c0,)], MASK if masked else None, go_backwards)

    inputs = {'a': K.placeholder(shape=(None, 6 if unroll else None, 2)),
              'b': K.placeholder(shape=(None, 6 if unroll else None, 3, 2))}
    states = [K.placeholder(shape=(None, 2)), (K.placeholder(shape=(None, 3, 2)),)]
    mask = K.placeholder(shape=(None, None), dtype='bool')
    last, outputs, new_states = K.rnn(nested_step(K, K.variable(NESTED_KERNEL)), inputs,
                                      states, go_backwards=go_backwards,
                                      mask=mask if masked else None, unroll=unroll)
    assert isinstance(outputs, tuple) and sorted(outputs[1]) == ['c']
    assert isinstance(new_states, list) and isinstance(new_states[1], tuple)
    assert K.int_shape(outputs[1]['c']) == (None, 6 if unroll else None, 3, 2)
    symbols = structure.flatten([last, outputs, new_states])
    f = K.function(structure.flatten([inputs, states, mask]), symbols)
    got = f(structure.flatten([NESTED, [h0, (c0,)], MASK]))
    for value, reference in zip(got, structure.flatten(list(expected))):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


def test_rnn_nested_inputs_must_share_batch_and_time():
    inputs = (torch.zeros(2, 4, 1), torch.zeros(2, 3, 1))
    with pytest.raises(ValueError, match=r'share their batch and time axes.*\(2, 3, 1\)'):
        K.rnn(lambda x_t, s: (x_t[0], [s[0]]), inputs, [torch.zeros(2, 1)])


def test_rnn_gradients_flow_through_the_loop():
    kernel, recurrent = K.variable(KERNEL), K.variable(RECURRENT)
    x = K.placeholder(shape=(None, None, 4))
    h0 = K.placeholder(shape=(None, 5))
    _, outputs, _ = K.rnn(make_step(K, kernel, recurrent, False, False), x, [h0])
    grads = K.function([x, h0], K.gradients(K.sum(outputs), [kernel, recurrent, h0]))(
        [INPUTS, np.zeros((3, 5), 'float32')])

    xt = torch.tensor(INPUTS)
    wt = torch.tensor(KERNEL, requires_grad=True)
    ut = torch.tensor(RECURRENT, requires_grad=True)
    ht = torch.zeros(3, 5, requires_grad=True)
    h, total = ht, 0.
    for t in range(6):
        h = torch.tanh(xt[:, t] @ wt + h @ ut)
        total = total + h.sum()
    total.backward()
    for value, reference in zip(grads, [wt.grad, ut.grad, ht.grad]):
        np.testing.assert_allclose(value, reference.numpy(), rtol=1e-4, atol=1e-5)


def test_step_is_first_called_on_the_real_time_zero_slice():
    seen = []

    def step(x_t, states):
        seen.append(x_t)
        return x_t * 2., [states[0] + x_t]
    x = K.placeholder(shape=(None, None, 2))
    h0 = K.placeholder(shape=(None, 2))
    K.rnn(step, x, [h0])
    assert not K.is_placeholder(seen[0]) and K.is_placeholder(seen[1])


def test_outer_tensors_in_the_step_are_computed_once_per_run():
    x = K.placeholder(shape=(None, None, 3))
    h0 = K.placeholder(shape=(None, 3))
    noise = K.random_uniform((3,))

    def step(x_t, states):
        return x_t * noise, [states[0]]
    _, outputs, _ = K.rnn(step, x, [h0])
    got = K.function([x, h0], [outputs])([np.ones((1, 4, 3)), np.zeros((1, 3))])[0]
    np.testing.assert_array_equal(got[0, 0], got[0, 3])


def test_learning_phase_flag_reaches_last_output():
    x = K.placeholder(shape=(None, None, 3))
    h0 = K.placeholder(shape=(None, 3))

    def step(x_t, states):
        out = K.in_train_phase(x_t * 2., x_t)
        return out, [states[0]]
    last, _, _ = K.rnn(step, x, [h0])
    assert last._uses_learning_phase
    f = K.function([x, h0, K.learning_phase()], [last])
    ones = np.ones((1, 2, 3))
    assert f([ones, np.zeros((1, 3)), 1])[0].max() == 2.
    assert f([ones, np.zeros((1, 3)), 0])[0].max() == 1.


def test_rnn_with_no_states_time_distributed_style():
    x = K.placeholder(shape=(None, None, 3))
    last, outputs, states = K.rnn(lambda x_t, s: (x_t + 1., []), x, [])
    assert states == []
    got = K.function([x], [outputs])([INPUTS[:, :, :3]])[0]
    np.testing.assert_allclose(got, INPUTS[:, :, :3] + 1.)


def test_rnn_eager_inputs():
    last, outputs, _ = K.rnn(lambda x_t, s: (x_t + s[0], [s[0] + 1.]),
                             torch.ones(2, 3, 1), [torch.zeros(2, 1)])
    assert outputs[0, :, 0].tolist() == [1., 2., 3.]


@pytest.mark.parametrize('kwargs, message', [
    (dict(inputs_shape=(None, 4)), 'at least 3 dimensions'),
    (dict(mask=True, states=False), 'mask needs at least one state'),
    (dict(unroll=True), 'unroll=True needs a static number of timesteps'),
])
def test_rnn_argument_errors(kwargs, message):
    x = K.placeholder(shape=kwargs.get('inputs_shape', (None, None, 4)))
    mask = K.placeholder(shape=(None, None), dtype='bool') if kwargs.get('mask') else None
    states = [K.placeholder(shape=(None, 4))] if kwargs.get('states', True) else []
    with pytest.raises(ValueError, match=message):
        K.rnn(lambda x_t, s: (x_t, s), x, states, mask=mask, unroll=kwargs.get('unroll', False))


def test_map_fn_symbolic_and_eager():
    x = K.placeholder(shape=(None, 3))
    value = RNG.randn(4, 3).astype('float32')
    mapped = K.map_fn(lambda row: K.sum(row * row), x)
    np.testing.assert_allclose(K.function([x], [mapped])([value])[0], (value ** 2).sum(1),
                               rtol=1e-6)
    eager = K.map_fn(lambda row: row * 2., torch.as_tensor(value))
    np.testing.assert_allclose(eager.numpy(), value * 2.)


@pytest.mark.parametrize('fold, order', [(K.foldl, 1), (K.foldr, -1)])
@pytest.mark.parametrize('initializer', [None, 'given'])
def test_folds(fold, order, initializer):
    value = RNG.randn(5, 2).astype('float32')
    x = K.placeholder(shape=(None, 2))
    init = np.array([1., -1.], 'float32') if initializer else None

    def fn(accumulator, element):
        return accumulator * 0.5 + element
    items = list(value[::order])
    expected = items.pop(0) if init is None else init
    for item in items:
        expected = fn(expected, item)
    folded = fold(fn, x, initializer=None if init is None else K.constant(init))
    np.testing.assert_allclose(K.function([x], [folded])([value])[0], expected, rtol=1e-6)
    eager = fold(fn, torch.as_tensor(value),
                 initializer=None if init is None else torch.as_tensor(init))
    np.testing.assert_allclose(eager.numpy(), expected, rtol=1e-6)
