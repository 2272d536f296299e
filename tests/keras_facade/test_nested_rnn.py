"""`keras.layers.RNN` over cells of nested inputs, states and outputs (tf.keras' nested
structures, keras-io's RNN guide), against TensorFlow's numbers
(tests/fixtures/make_tf_keras_nested_rnn.py, the cells of nested_rnn_cells.py)."""
import json
import os

import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf
from fixtures.nested_rnn_cells import CASES, Pen, cell_classes

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'fixtures', 'tf_keras', 'nested_rnn')
CELLS = cell_classes(tf, keras)
MAKE_CELL = {'nested_cell': lambda: CELLS['NestedCell'](2, 3, 4),
             'pen_cell': lambda: CELLS['PenCell'](3)}
PARAMETERS = [(cell, case) for cell in CASES for case in CASES[cell]]


def _fixture(cell):
    with np.load(os.path.join(FIXTURES, cell + '.npz')) as data:
        return dict(data)


def _indexed(arrays, prefix):
    return [arrays['%s%d' % (prefix, i)] for i in range(len(arrays))
            if '%s%d' % (prefix, i) in arrays]


def _inputs(cell, arrays):
    """The fixture's inputs in their structure (`tf.nest.flatten`'s order is the npz's)."""
    x = _indexed(arrays, 'x')
    if cell == 'nested_cell':
        return tuple(x)
    return {'location': x[0], 'pressure': x[1]}


def _call_arguments(cell, arrays, given, convert):
    """The inputs and the call's keyword arguments of a case, each array `convert`ed."""
    inputs = tf.nest.map_structure(convert, _inputs(cell, arrays))
    if 'pen' in given:
        inputs = Pen(**inputs)
    kwargs = {}
    if 'mask' in given:
        kwargs['mask'] = convert(arrays['mask'])
    if 'states' in given:
        c, h = _indexed(arrays, 's')
        kwargs['initial_state'] = [{'h': convert(h), 'c': convert(c)}]
        kwargs['constants'] = [convert(arrays['k'])]
    return inputs, kwargs


def _expected(arrays, case):
    return [arrays['%s/%d' % (case, i)] for i in range(len(arrays))
            if '%s/%d' % (case, i) in arrays]


def _assert_matches(results, expected):
    flat = tf.nest.flatten(results)
    assert len(flat) == len(expected)
    for value, reference in zip(flat, expected):
        np.testing.assert_allclose(np.asarray(value), reference, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('cell,case', PARAMETERS)
def test_eager_call_matches_tf(cell, case):
    arrays = _fixture(cell)
    kwargs, given = CASES[cell][case]
    layer = keras.layers.RNN(MAKE_CELL[cell](), **kwargs)
    inputs, call_kwargs = _call_arguments(cell, arrays, given, torch.from_numpy)
    layer(inputs, **call_kwargs)
    layer.set_weights(_indexed(arrays, 'w'))
    _assert_matches(layer(inputs, **call_kwargs), _expected(arrays, case))


def _input_like(value):
    return keras.Input(batch_shape=(None,) + value.shape[1:], dtype=str(value.dtype))


@pytest.mark.parametrize('cell,case', PARAMETERS)
def test_functional_model_matches_tf(cell, case):
    """Keras Inputs in the case's structure, the model's outputs in the layer's."""
    arrays = _fixture(cell)
    kwargs, given = CASES[cell][case]
    layer = keras.layers.RNN(MAKE_CELL[cell](), **kwargs)
    symbols, call_kwargs = _call_arguments(cell, arrays, given, _input_like)
    outputs = layer(symbols, **call_kwargs)
    values, value_kwargs = _call_arguments(cell, arrays, given, lambda value: value)
    if isinstance(outputs, dict):  # a functional model of dict outputs is issue 37's item 2
        outputs = [outputs]
    model = keras.Model(tf.nest.flatten([symbols, call_kwargs]), outputs)
    layer.set_weights(_indexed(arrays, 'w'))
    predicted = model.predict(tf.nest.flatten([values, value_kwargs]))
    if not isinstance(outputs, tuple):  # a model's tuple outputs predict as a list
        assert (tf.nest.map_structure(lambda _: None, predicted)
                == tf.nest.map_structure(lambda _: None, outputs))
    _assert_matches(predicted, _expected(arrays, case))


def test_symbolic_outputs_have_the_cell_structure_and_shapes():
    layer = keras.layers.RNN(MAKE_CELL['pen_cell'](), return_sequences=True, return_state=True)
    strokes = {'location': keras.Input((None, 2)), 'pressure': keras.Input((None, 1))}
    outputs, state = layer(strokes)
    assert sorted(outputs) == ['ink', 'trace'] and sorted(state) == ['c', 'h']
    assert keras.backend.int_shape(outputs['trace']) == (None, None, 2, 3)
    assert keras.backend.int_shape(state['c']) == (None, 2, 3)
    assert layer.compute_output_shape({'location': (None, 7, 2), 'pressure': (None, 7, 1)}) == [
        (None, 7, 3), (None, 7, 2, 3), (None, 2, 3), (None, 3)]


def test_unrolled_loop_matches_the_traced_loop():
    """tf.keras cannot unroll a cell of nested outputs (it stacks them as one tensor);
    torchk unrolls it to the numbers of its loop."""
    arrays = _fixture('nested_cell')
    inputs = _inputs('nested_cell', arrays)
    shaped = tuple(keras.Input(batch_shape=(None,) + x.shape[1:]) for x in inputs)
    results = []
    for unroll in (False, True):
        layer = keras.layers.RNN(MAKE_CELL['nested_cell'](), unroll=unroll,
                                 return_sequences=True, return_state=True)
        model = keras.Model(list(shaped), layer(shaped))
        layer.set_weights(_indexed(arrays, 'w'))
        results.append(tf.nest.flatten(model.predict(list(inputs))))
    _assert_matches(results[1], results[0])
    _assert_matches(results[0][:2], _expected(arrays, 'sequences_and_states')[:2])


def test_stateful_layer_carries_nested_states_across_calls():
    """Two calls on halves of a sequence end where one call on the whole does."""
    arrays = _fixture('nested_cell')
    inputs = tuple(torch.from_numpy(x) for x in _inputs('nested_cell', arrays))
    stateful = keras.layers.RNN(MAKE_CELL['nested_cell'](), stateful=True, return_state=True)
    stateful(tuple(x[:, :2] for x in inputs))
    stateful.set_weights(_indexed(arrays, 'w'))
    stateful.reset_states()
    assert [keras.backend.int_shape(s) for s in stateful.states] == [(3, 2), (3, 3, 4)]
    stateful(tuple(x[:, :2] for x in inputs))
    sequences_1, sequences_2, *states = _expected(arrays, 'sequences_and_states')
    _assert_matches(stateful(tuple(x[:, 2:] for x in inputs)),
                    [sequences_1[:, -1], sequences_2[:, -1]] + states)
    stateful.reset_states()
    assert all(not np.asarray(keras.backend.get_value(s)).any() for s in stateful.states)


def test_flat_recurrent_layers_keep_keras_form():
    """An LSTM called on a list `[inputs, h, c]` still takes it as its initial states."""
    rng = np.random.RandomState(0)
    x, h, c = rng.randn(2, 4, 3), rng.randn(2, 5), rng.randn(2, 5)
    lstm = keras.layers.LSTM(5)
    sequences, h0, c0 = keras.Input((None, 3)), keras.Input((5,)), keras.Input((5,))
    model = keras.Model([sequences, h0, c0], lstm([sequences, h0, c0]))
    eager = lstm(torch.tensor(x, dtype=torch.float32),
                 initial_state=[torch.tensor(h, dtype=torch.float32),
                                torch.tensor(c, dtype=torch.float32)])
    np.testing.assert_allclose(model.predict([x, h, c]), np.asarray(eager), rtol=1e-5)


@pytest.mark.parametrize('call,message', [
    (lambda layer, x: layer(x, initial_state=[x[0][:, 0]]), 'initial state tensors'),
    (lambda layer, x: layer(x, initial_state=[x[0][:, 0, :2], x[0][:, 0, :3]]),
     r'does not match cell.state_size'),
    (lambda layer, x: layer(x, constants=[x[0][:, 0]]), 'does not take'),
])
def test_nested_call_errors_name_the_problem(call, message):
    layer = keras.layers.RNN(MAKE_CELL['nested_cell']())
    inputs = (keras.Input((None, 4)), keras.Input((None, 2, 3)))
    with pytest.raises(ValueError, match=message):
        call(layer, inputs)


def test_a_dict_state_size_is_refused_as_tf_keras_refuses_it():
    class DictState(keras.layers.Layer):
        state_size = {'h': 2}
        output_size = 2

        def call(self, inputs, states):
            return inputs, states
    with pytest.raises(ValueError, match=r"a dict state goes in a list: \[\{'h': 2\}\]"):
        keras.layers.RNN(DictState())(keras.Input((None, 2)))


@pytest.mark.parametrize('cell', ['nested_cell', 'pen_cell'])
def test_model_configuration_round_trip_keeps_the_nested_call(cell):
    """tf.keras writes a tuple of inputs as a list, which it reads back as `[inputs,
    *initial_states]`; torchk writes the call's structure and calls the cell on it again.
    The loaded model's outputs keep the model's structure (`output_layers` nested; a tuple
    read back as a list, as JSON and tf.keras write it)."""
    arrays = _fixture(cell)
    kwargs, given = CASES[cell]['masked_backwards']
    layer = keras.layers.RNN(MAKE_CELL[cell](), **kwargs)
    symbols, call_kwargs = _call_arguments(cell, arrays, given, _input_like)
    model = keras.Model(tf.nest.flatten([symbols, call_kwargs]), layer(symbols, **call_kwargs))
    model.set_weights(_indexed(arrays, 'w'))
    loaded = keras.models.model_from_json(model.to_json(), custom_objects=CELLS)
    loaded.set_weights(_indexed(arrays, 'w'))
    values, value_kwargs = _call_arguments(cell, arrays, given, lambda value: value)
    x = tf.nest.flatten([values, value_kwargs])
    predicted = model.predict(x)
    assert (json.dumps(tf.nest.map_structure(lambda _: None, loaded.predict(x)))
            == json.dumps(tf.nest.map_structure(lambda _: None, predicted)))
    _assert_matches(loaded.predict(x), tf.nest.flatten(predicted))
    _assert_matches(model.predict(x), _expected(arrays, 'masked_backwards'))


@pytest.mark.parametrize('form', ['dict', 'pen'])
def test_nested_inputs_of_a_mixed_policy_are_cast_for_the_float32_rnn(form):
    """Under `mixed_bfloat16` torchk's `RNN` computes in float32 (`FLOAT32_LAYERS`): its
    bfloat16 inputs, in a dict or a namedtuple, are cast to float32 as they are."""
    arrays = _fixture('pen_cell')
    keras.mixed_precision.set_global_policy('mixed_bfloat16')
    try:
        layer = keras.layers.RNN(MAKE_CELL['pen_cell'](), return_sequences=True)
        inputs = tf.nest.map_structure(lambda x: torch.from_numpy(x).to(torch.bfloat16),
                                       _inputs('pen_cell', arrays))
        inputs = Pen(**inputs) if form == 'pen' else inputs
        layer(inputs)
        layer.set_weights(_indexed(arrays, 'w'))
        outputs = tf.nest.flatten(layer(inputs))
    finally:
        keras.mixed_precision.set_global_policy('float32')
    assert [x.dtype for x in outputs] == [torch.float32, torch.float32]
    for value, reference in zip(outputs, _expected(arrays, 'namedtuple')):
        np.testing.assert_allclose(value.detach().numpy(), reference, atol=3e-2, rtol=0)
