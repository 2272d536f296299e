"""tf.function: Python steps recorded once per input signature, run as one program
(torchk/tf/tracing.py), against the same Python run eagerly."""
import numpy as np
import pytest
import torch

import torchk.tf as tf
from torchk import keras
from torchk.tf import tracing

RNG = np.random.default_rng(3)
X = RNG.standard_normal((96, 12)).astype('float32')
Y = np.eye(4, dtype='float32')[RNG.integers(0, 4, 96)]


@pytest.fixture(autouse=True)
def recorded():
    tracing.run_functions_eagerly(False)
    yield
    tracing.run_functions_eagerly(False)


def _model(batch_norm=False, dropout=False):
    tf.random.set_seed(0)
    np.random.seed(0)
    inputs = keras.Input(shape=(12,))
    h = keras.layers.Dense(16, activation='relu')(inputs)
    if batch_norm:
        h = keras.layers.BatchNormalization()(h)
    if dropout:
        h = keras.layers.Dropout(0.5)(h)
    outputs = keras.layers.Dense(4, activation='softmax')(h)
    return keras.Model(inputs, outputs)


def _training(decorate, optimizer, batch_norm=False):
    """A 'training loop from scratch' step and what it trains."""
    model = _model(batch_norm)
    loss_fn = keras.losses.CategoricalCrossentropy()
    accuracy = keras.metrics.CategoricalAccuracy()
    opt = keras.optimizers.get(optimizer)

    def train_step(x, y):
        with tf.GradientTape() as tape:
            probs = model(x, training=True)
            loss = loss_fn(y, probs)
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
        accuracy.update_state(y, probs)
        return {'loss': loss, 'accuracy': accuracy.result()}
    return model, (tf.function(train_step) if decorate else train_step)


@pytest.mark.parametrize('optimizer, batch_norm', [
    ('adam', False), ('sgd', True), ('rmsprop', False), ('adam', True)])
def test_a_recorded_training_step_trains_as_the_eager_one(optimizer, batch_norm):
    results = {}
    for decorate in (False, True):
        model, step = _training(decorate, optimizer, batch_norm)
        logs = [step(X[i:i + 32], Y[i:i + 32]) for _ in range(3) for i in range(0, 96, 32)]
        results[decorate] = ([{k: float(v) for k, v in log.items()} for log in logs],
                             [w.detach().numpy().copy() for w in model.weights])
    (eager_logs, eager_weights), (recorded_logs, recorded_weights) = (results[False],
                                                                        results[True])
    for eager, recorded in zip(eager_logs, recorded_logs):
        assert recorded == pytest.approx(eager, rel=1e-6)
    for eager, recorded in zip(eager_weights, recorded_weights):
        np.testing.assert_allclose(recorded, eager, rtol=1e-6, atol=1e-7)


def test_recorded_once_per_signature_and_again_for_a_new_one():
    calls = []

    @tf.function
    def scaled(x, factor):
        calls.append(factor)
        return x * factor
    np.testing.assert_allclose(scaled(X[:8], 2.).numpy(), X[:8] * 2)
    np.testing.assert_allclose(scaled(X[:5], 2.).numpy(), X[:5] * 2)  # same program
    assert calls == [2.]
    np.testing.assert_allclose(scaled(X[:5], 3.).numpy(), X[:5] * 3)  # a Python value
    np.testing.assert_allclose(scaled(X[:5, :3], 3.).numpy(), X[:5, :3] * 3)  # a shape
    np.testing.assert_allclose(scaled(X[:5].astype('int32'), 3).numpy(),
                               X[:5].astype('int32') * 3)  # a dtype
    assert calls == [2., 3., 3., 3]


def test_writes_are_read_in_program_order():
    counter = tf.Variable(1.)

    @tf.function
    def step(x):
        before = counter.read_value() * 1.
        counter.assign_add(tf.reduce_sum(x))
        after = counter * 1.
        counter.assign(after * 2.)
        return before, after, counter
    before, after, last = step(np.array([1., 2.], 'float32'))
    assert (float(before), float(after), float(last)) == (1., 4., 8.)
    assert float(counter) == 8.
    before, after, last = step(np.array([1., 1.], 'float32'))
    assert (float(before), float(after), float(last)) == (8., 10., 20.)


def test_gradient_tape_differentiates_through_the_program():
    w = tf.Variable([1., -2., 3.])

    @tf.function
    def grads(x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.reduce_sum(w * x * x)
        return (tape.gradient(y, x), tape.gradient(y, [w, tf.Variable(1.)]),
                tape.gradient(y, tf.Variable(1.), unconnected_gradients='zero'),
                tape.gradient(y * 1., w, output_gradients=tf.constant(3.)))
    x = np.array([2., 1., 0.5], 'float32')
    dx, (dw, unconnected), zero, seeded = grads(x)
    np.testing.assert_allclose(dx.numpy(), 2 * w.numpy() * x)
    np.testing.assert_allclose(dw.numpy(), x * x)
    assert unconnected is None and float(zero) == 0.
    np.testing.assert_allclose(seeded.numpy(), 3 * x * x)


def test_python_that_needs_values_runs_eagerly_said_once(capsys):
    calls = []

    @tf.function
    def relu_sum(x):
        calls.append(1)
        total = tf.reduce_sum(x)
        if total > 0:
            return total
        return total * 0.
    assert float(relu_sum(np.array([1., 2.], 'float32'))) == 3.
    assert float(relu_sum(np.array([-1., -2.], 'float32'))) == 0.
    assert capsys.readouterr().err.count('tf.function relu_sum runs eagerly') == 1
    assert len(calls) == 3  # the failed recording, then each call


def test_run_functions_eagerly_and_executing_eagerly():
    seen = []

    @tf.function
    def step(x):
        seen.append(tf.executing_eagerly())
        return x + 1.
    step(np.ones(2, 'float32'))
    step(np.ones(2, 'float32'))
    tf.config.run_functions_eagerly(True)
    assert tf.config.functions_run_eagerly()
    step(np.ones(2, 'float32'))
    step(np.ones(2, 'float32'))
    assert seen == [False, True, True]


def test_nested_functions_join_the_outer_recording_and_return_structures():
    inner_calls = []

    @tf.function
    def inner(x):
        inner_calls.append(1)
        return {'double': x * 2., 'constant': 7}

    @tf.function
    def outer(x):
        result = inner(x)
        return [result['double'] + 1., result['constant']]
    doubled, constant = outer(X[:3])
    np.testing.assert_allclose(doubled.numpy(), X[:3] * 2 + 1)
    assert constant == 7 and inner_calls == [1]


def test_input_signature_gives_the_placeholders():
    @tf.function(input_signature=[tf.TensorSpec([None, 12], tf.float32)])
    def mean(x):
        return tf.reduce_mean(x, axis=0)
    np.testing.assert_allclose(mean(X).numpy(), X.mean(0), rtol=1e-6, atol=1e-7)


def test_dropout_draws_a_new_mask_per_call():
    model = _model(dropout=True)

    @tf.function
    def forward(x):
        return model(x, training=True)
    first, second = forward(X[:16]).numpy(), forward(X[:16]).numpy()
    assert not np.allclose(first, second)
    np.testing.assert_allclose(first.sum(-1), 1., rtol=1e-5)


@pytest.mark.parametrize('training', [True, False])
def test_batch_norm_statistics_move_in_training_only(training):
    results = []
    for decorate in (False, True):
        model = _model(batch_norm=True)

        def forward(x):
            return model(x, training=training)
        forward = tf.function(forward) if decorate else forward
        outputs = [forward(X[i:i + 32]).detach().numpy() for i in range(0, 96, 32)]
        results.append((outputs, [w.detach().numpy().copy() for w in model.weights]))
        moving_mean = [w for w in model.weights if 'moving_mean' in w.name][0]
        assert bool(moving_mean.detach().abs().sum() > 0) == training  # starts at zeros
    (eager_out, eager_weights), (recorded_out, recorded_weights) = results
    for a, b in zip(recorded_out + recorded_weights, eager_out + eager_weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_numpy_scalars_are_fed_not_recorded_anew():
    calls = []

    @tf.function
    def scaled(x, factor):
        calls.append(1)
        return x * factor
    for factor in (2., 3., 0.5):
        np.testing.assert_allclose(scaled(X[:4], np.float32(factor)).numpy(), X[:4] * factor)
    assert calls == [1]


def test_python_values_returned_become_tensors_as_in_tf():
    # TF 2.21: `return 1, 'a', None, 2.5, x` gives int32, string and float32 tensors, None
    # and x; a branch returning `0` (run eagerly here: `if` on a tensor) an int32 tensor.
    @tf.function
    def values(x):
        return 1, 'a', None, 2.5, x

    one, text, nothing, number, x = values(tf.constant(3))
    assert one.dtype == torch.int32 and int(one) == 1
    assert text.numpy() == b'a' and nothing is None
    assert number.dtype == torch.float32 and float(number) == 2.5 and int(x) == 3

    @tf.function
    def relu(x):
        if tf.greater(x, 0):
            return x
        return 0

    assert relu(tf.constant(-1)).dtype == torch.int32 and int(relu(tf.constant(-1))) == 0
    assert int(relu(tf.constant(4))) == 4


def test_pretty_printed_concrete_signatures_as_tf_prints_them():
    # TF 2.21's text for these calls (its function guide).
    @tf.function
    def double(a):
        return a + a

    double(tf.constant(1))
    double(tf.constant('a'))
    assert double.pretty_printed_concrete_signatures() == '\n'.join([
        'Input Parameters:',
        '  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.int32, name=None)',
        'Output Type:', '  TensorSpec(shape=(), dtype=tf.int32, name=None)',
        'Captures:', '  None', '',
        'Input Parameters:',
        '  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=tf.string, name=None)',
        'Output Type:', '  TensorSpec(shape=(), dtype=tf.string, name=None)',
        'Captures:', '  None'])

    @tf.function
    def power(a, b):
        return a ** b

    power(tf.constant(3.), 2)
    assert power.pretty_printed_concrete_signatures(verbose=False) == (
        '(a: TensorSpec(shape=(), dtype=tf.float32, name=None), b: Literal[2]) -> '
        'TensorSpec(shape=(), dtype=tf.float32, name=None)')


def test_equality_with_numbers_is_elementwise_in_a_function_and_signature_checked():
    # TF's function guide: next_collatz([1, 2]) is [4, 1]; arguments off the
    # input_signature (rank or dtype) raise TypeError.
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def next_collatz(x):
        return tf.where(x % 2 == 0, x // 2, 3 * x + 1)

    assert next_collatz(tf.constant([1, 2, 5, 8])).tolist() == [4, 1, 16, 4]
    for wrong in (tf.constant([[1, 2], [3, 4]]), tf.constant([1., 2.])):
        with pytest.raises(TypeError, match='input_signature'):
            next_collatz(wrong)

    @tf.function
    def odd(x):
        return x % 2 != 0

    assert odd(tf.constant([1, 2, 3])).tolist() == [True, False, True]


def test_tracing_types_share_a_signature():
    traces = []

    class FruitType(tf.types.experimental.TraceType):
        def __init__(self, fruit):
            self.kind = type(fruit)

        def __eq__(self, other):
            return type(other) is FruitType and self.kind is other.kind

        def __hash__(self):
            return hash(self.kind)

    class Fruit:
        def __tf_tracing_type__(self, context):
            return FruitType(self)

    class Apple(Fruit):
        flavor = tf.constant([1, 2])

    class Mango(Fruit):
        flavor = tf.constant([3, 4])

    @tf.function
    def mixed(a, b):
        traces.append(1)
        return a.flavor + b.flavor

    assert mixed(Apple(), Mango()).tolist() == [4, 6]
    assert mixed(Apple(), Mango()).tolist() == [4, 6]
    assert mixed(Mango(), Mango()).tolist() == [6, 8]
    assert len(traces) == 2


def test_concrete_function_binds_and_prints_as_tf():
    # TF 2.21 (its function guide): a concrete function of strings refuses an int32
    # tensor (InvalidArgumentError), one made with b=2 fills b and refuses b=3 (TypeError).
    @tf.function
    def double(a):
        return a + a

    strings = double.get_concrete_function(tf.constant('a'))
    assert strings(a=tf.constant('b')).numpy() == b'bb'
    with pytest.raises(tf.errors.InvalidArgumentError):
        strings(tf.constant(1))

    @tf.function
    def power(a, b):
        return a ** b

    square = power.get_concrete_function(a=tf.TensorSpec(None, tf.float32), b=2)
    assert float(square(tf.constant(10.))) == 100.
    with pytest.raises(TypeError):
        square(tf.constant(10.), b=3)
    assert str(square) == '\n'.join([
        'ConcreteFunction Input Parameters:',
        '  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=<unknown>, dtype=tf.float32, '
        'name=None)',
        '  b (POSITIONAL_OR_KEYWORD): Literal[2]',
        'Output Type:', '  TensorSpec(shape=<unknown>, dtype=tf.float32, name=None)',
        'Captures:', '  None'])
    double(tf.constant('a'))
    assert str(strings.function_type) == (
        '(a: TensorSpec(shape=(), dtype=tf.string, name=None)) -> '
        'TensorSpec(shape=(), dtype=tf.string, name=None)')
