"""torchk.mixed_precision: the policy API, layers computing in the policy, float32 losses,
and LossScaleOptimizer (forced overflow, growth, saving)."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import keras
from keras import backend as K
from keras import layers as L
from torchk import config
from torchk import mixed_precision

# Largest absolute error of one layer's outputs against float32, relative to the outputs'
# scale: bfloat16 keeps 8 significant bits, float16 11.
TOLERANCE = {'mixed_bfloat16': 3e-2, 'mixed_float16': 4e-3}
MIXED = sorted(TOLERANCE)


@pytest.fixture(autouse=True)
def float32_policy_after():
    yield
    mixed_precision.set_global_policy('float32')


# ------------------------------------------------------------------------------------------
# The policy API.

@pytest.mark.parametrize('name, compute', [('float32', 'float32'),
                                           ('mixed_float16', 'float16'),
                                           ('mixed_bfloat16', 'bfloat16')])
def test_policy_names_their_dtypes(name, compute):
    policy = mixed_precision.Policy(name)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (name, compute,
                                                                          'float32')
    mixed_precision.set_global_policy(name)
    assert mixed_precision.global_policy() == policy
    mixed_precision.set_global_policy(policy)
    assert mixed_precision.global_policy().name == name


@pytest.mark.parametrize('name', ['float16', 'mixed_float64', 'bfloat16', ''])
def test_unknown_policy_names_the_accepted_ones(name):
    with pytest.raises(ValueError, match="'float32', 'mixed_float16', 'mixed_bfloat16'"):
        mixed_precision.Policy(name)
    with pytest.raises(ValueError, match=repr(name)):
        mixed_precision.set_global_policy(name)


def test_float16_on_the_cpu_warns_once(monkeypatch):
    monkeypatch.setattr(mixed_precision, '_warned_slow', set())
    monkeypatch.setattr(mixed_precision.config, 'device', lambda: torch.device('cpu'))
    with pytest.warns(RuntimeWarning, match='mixed_float16: float16 training on the CPU'):
        mixed_precision.set_global_policy('mixed_float16')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        mixed_precision.set_global_policy('mixed_float16')


def test_emulated_bfloat16_warns_once(monkeypatch):
    monkeypatch.setattr(mixed_precision, '_warned_slow', set())
    monkeypatch.setattr(mixed_precision, 'native_bfloat16', lambda: False)
    with pytest.warns(RuntimeWarning, match='no native bfloat16 kernels'):
        mixed_precision.set_global_policy('mixed_bfloat16')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        mixed_precision.set_global_policy('mixed_bfloat16')


def test_none_resets_to_float32():
    mixed_precision.set_global_policy('mixed_bfloat16')
    mixed_precision.set_global_policy(None)
    assert mixed_precision.global_policy().name == 'float32'


def test_environment_variable_wins_over_keras_json(monkeypatch):
    monkeypatch.setattr(mixed_precision, '_global_policy', None)
    monkeypatch.setitem(config._CONFIG, 'torchk_mixed_precision', 'mixed_float16')
    assert mixed_precision.global_policy().name == 'mixed_float16'
    monkeypatch.setattr(mixed_precision, '_global_policy', None)
    monkeypatch.setenv('TORCHK_MIXED_PRECISION', 'mixed_bfloat16')
    assert mixed_precision.global_policy().name == 'mixed_bfloat16'
    monkeypatch.setattr(mixed_precision, '_global_policy', None)
    monkeypatch.setenv('TORCHK_MIXED_PRECISION', 'half')
    with pytest.raises(ValueError, match="'half'.*TORCHK_MIXED_PRECISION"):
        mixed_precision.global_policy()


def test_an_unmodified_script_trains_under_the_keras_json_policy(tmp_path):
    (tmp_path / 'keras.json').write_text(json.dumps(
        {'backend': 'torchk.core', 'torchk_mixed_precision': 'mixed_bfloat16'}))
    script = ('import numpy as np, keras\n'
              'm = keras.models.Sequential([keras.layers.Dense(4, input_shape=(3,))])\n'
              'm.compile("sgd", "mse")\n'
              'm.train_on_batch(np.ones((2, 3)), np.ones((2, 4)))\n'
              'print(m.output.dtype, m.weights[0].dtype)\n')
    environment = dict(os.environ, KERAS_HOME=str(tmp_path))
    environment.pop('TORCHK_MIXED_PRECISION', None)
    done = subprocess.run([sys.executable, '-c', script], env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ['bfloat16', 'torch.float32']


# ------------------------------------------------------------------------------------------
# Layers: outputs within the compute dtype's tolerance of float32, float32 variables.

def _layer_cases():
    rng = np.random.RandomState(0)
    images = rng.rand(4, 7, 7, 3).astype('float32')
    sequences = rng.rand(4, 5, 6).astype('float32')
    tokens = rng.randint(0, 20, size=(4, 5))
    return {
        'Dense': (lambda: L.Dense(6, activation='tanh'), rng.rand(4, 9).astype('float32')),
        'Conv2D': (lambda: L.Conv2D(5, 3, padding='same'), images),
        'DepthwiseConv2D': (lambda: L.DepthwiseConv2D(3), images),
        'BatchNormalization': (lambda: L.BatchNormalization(), images * 4. + 1.),
        'LSTM': (lambda: L.LSTM(7, return_sequences=True), sequences),
        'GRU': (lambda: L.GRU(7), sequences),
        'Embedding': (lambda: L.Embedding(20, 6), tokens),
        'Activation softmax': (lambda: L.Activation('softmax'), rng.randn(4, 10).astype('float32')),
    }


LAYERS = _layer_cases()


def _outputs(layer, x, training):
    inputs = L.Input(x.shape[1:], dtype='int32' if x.dtype.kind == 'i' else 'float32')
    output = layer(inputs)
    return output, K.function([inputs, K.learning_phase()], [output])([x, training])[0]


@pytest.mark.parametrize('training', [0, 1])
@pytest.mark.parametrize('policy', MIXED)
@pytest.mark.parametrize('case', sorted(LAYERS))
def test_layer_computes_within_tolerance_of_float32(case, policy, training):
    make, x = LAYERS[case]
    reference_layer = make()
    _, expected = _outputs(reference_layer, x, training)
    mixed_precision.set_global_policy(policy)
    layer = make()
    symbol, _ = _outputs(layer, x, training)
    layer.set_weights(reference_layer.get_weights())
    _, actual = _outputs(layer, x, training)
    float32 = case in ('LSTM', 'GRU', 'Embedding')
    if case == 'LSTM' and policy == 'mixed_bfloat16' and mixed_precision.native_bfloat16():
        float32 = False  # oneDNN's bfloat16 torch.lstm (test_lstm_computes_in_native_...)
    assert symbol.dtype == ('float32' if float32 else mixed_precision.Policy(policy).compute_dtype)
    assert all(w.dtype == torch.float32 for w in layer.weights)
    scale = max(1., float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, atol=TOLERANCE[policy] * scale, rtol=0)


RECURRENT = {
    'LSTM': (lambda: L.LSTM(5), True),
    'LSTM backwards, returning states': (
        lambda: L.LSTM(5, go_backwards=True, return_sequences=True, return_state=True), True),
    'LSTM hard_sigmoid': (lambda: L.LSTM(5, recurrent_activation='hard_sigmoid'), False),
    'LSTM dropout': (lambda: L.LSTM(5, dropout=0.2), False),
    'LSTM recurrent dropout': (lambda: L.LSTM(5, recurrent_dropout=0.2), False),
    'LSTM unrolled': (lambda: L.LSTM(5, unroll=True), False),
    'GRU': (lambda: L.GRU(5), False),
    'SimpleRNN': (lambda: L.SimpleRNN(5), False),
    'RNN of LSTMCells': (lambda: L.RNN([L.LSTMCell(5), L.LSTMCell(5)]), False),
}


@pytest.mark.parametrize('case', sorted(RECURRENT))
@pytest.mark.parametrize('native', [True, False])
def test_only_torch_lstm_recurrences_compute_in_a_native_bfloat16(monkeypatch, case, native):
    """A recurrent layer computes in bfloat16 only where torch's fused LSTM runs it and the
    CPU has oneDNN's bfloat16 kernels; the others stay float32 (rnn_kernels' loops)."""
    monkeypatch.setattr(mixed_precision, 'native_bfloat16', lambda: native)
    make, fused = RECURRENT[case]
    mixed_precision.set_global_policy('mixed_bfloat16')
    outputs = make()(L.Input((6, 3)))
    outputs = outputs if isinstance(outputs, list) else [outputs]
    expected = 'bfloat16' if fused and native else 'float32'
    assert [o.dtype for o in outputs] == [expected] * len(outputs)


needs_native_bfloat16 = pytest.mark.skipif(
    not mixed_precision.native_bfloat16(),
    reason='needs a CPU with AVX512-BF16 or AMX (oneDNN bfloat16 LSTM kernels)')


@needs_native_bfloat16
@pytest.mark.parametrize('mask_zero', [False, True])
def test_lstm_computes_in_native_bfloat16(mask_zero):
    """A plain LSTM under mixed_bfloat16 runs oneDNN's bfloat16 LSTM: its outputs match
    torch's LSTM given the same bfloat16 inputs and weights, trains (float32 gradients at
    float32 variables). With a mask the layer still computes its bfloat16 inputs, in
    rnn_kernels' float32 loop: the float32 LSTM given the bfloat16-rounded values."""
    rng = np.random.RandomState(4)
    tokens = rng.randint(1, 20, size=(4, 9))
    tokens[:, :3] = 0
    mixed_precision.set_global_policy('mixed_bfloat16')
    model = keras.models.Sequential([L.Embedding(20, 6, input_length=9, mask_zero=mask_zero),
                                     L.LSTM(5, return_sequences=True)])
    assert model.output.dtype == 'bfloat16'
    embedding, lstm = model.layers
    actual = model.predict(tokens).astype('float32')
    kernel, recurrent_kernel, bias = (torch.tensor(w).bfloat16() for w in lstm.get_weights())
    x = torch.tensor(embedding.get_weights()[0][tokens]).bfloat16()
    reference = torch.nn.LSTM(6, 5, batch_first=True)
    with torch.no_grad():
        reference.weight_ih_l0.copy_(kernel.t())
        reference.weight_hh_l0.copy_(recurrent_kernel.t())
        reference.bias_ih_l0.copy_(bias)
        reference.bias_hh_l0.zero_()
        if mask_zero:
            # the masked steps are the first three: they hold zero states and output zeros
            out, _ = reference.float()(x[:, 3:].float())
            expected = torch.cat([torch.zeros(4, 3, 5), out], dim=1)
            tolerance = 1e-2  # the float32 loop's output, rounded to bfloat16
        else:
            expected, _ = reference.bfloat16()(x)
            tolerance = 2e-2  # oneDNN's and torch's bfloat16 LSTM round differently
    np.testing.assert_allclose(actual, expected.float().numpy(), atol=tolerance, rtol=0)
    model.compile('adam', 'mse')
    before = lstm.get_weights()[0]
    model.train_on_batch(tokens, np.ones((4, 9, 5), 'float32'))
    assert all(w.dtype == torch.float32 for w in lstm.weights)
    assert not np.allclose(lstm.get_weights()[0], before)


@pytest.mark.parametrize('policy', MIXED)
def test_a_mixed_layer_computes_in_low_precision(policy):
    """Not float32 in disguise: the Dense result differs from float32 by low-precision
    rounding, and matches the same product computed in the compute dtype."""
    x = np.random.RandomState(1).rand(8, 32).astype('float32')
    mixed_precision.set_global_policy(policy)
    layer = L.Dense(16, use_bias=False)
    _, actual = _outputs(layer, x, 0)
    kernel = layer.get_weights()[0]
    dtype = getattr(torch, mixed_precision.Policy(policy).compute_dtype)
    low = (torch.tensor(x).to(dtype) @ torch.tensor(kernel).to(dtype)).float().numpy()
    np.testing.assert_array_equal(actual, low)
    assert not np.allclose(actual, x @ kernel, atol=1e-6, rtol=0)


@pytest.mark.parametrize('dtype', ['float32', mixed_precision.Policy('float32')])
def test_a_float32_layer_computes_in_float32_under_a_mixed_policy(dtype):
    mixed_precision.set_global_policy('mixed_bfloat16')
    inputs = L.Input((10,))
    logits = L.Dense(10)(inputs)
    probabilities = L.Activation('softmax', dtype=dtype)(logits)
    assert (logits.dtype, probabilities.dtype) == ('bfloat16', 'float32')
    x = np.random.RandomState(2).randn(3, 10).astype('float32')
    f = K.function([inputs], [logits, probabilities])
    low, result = f([x])
    np.testing.assert_allclose(result, np.exp(low) / np.exp(low).sum(-1, keepdims=True),
                               rtol=1e-6, atol=1e-7)


def test_layers_created_before_the_policy_keep_theirs():
    before = L.Dense(3)
    mixed_precision.set_global_policy('mixed_bfloat16')
    after = L.Dense(3)
    inputs = L.Input((4,))
    assert (before(inputs).dtype, after(inputs).dtype) == ('float32', 'bfloat16')


def test_layer_config_keeps_its_policy():
    mixed_precision.set_global_policy('mixed_float16')
    config = L.Dense(3).get_config()
    assert config['dtype'] == 'mixed_float16'
    mixed_precision.set_global_policy('float32')
    restored = L.Dense.from_config(config)
    assert mixed_precision.layer_policy(restored).name == 'mixed_float16'
    assert restored(L.Input((2,))).dtype == 'float16'
    assert L.Dense(3, dtype='mixed_bfloat16')(L.Input((2,))).dtype == 'bfloat16'
    tf_keras_policy = {'class_name': 'Policy', 'config': {'name': 'mixed_bfloat16'}}
    assert L.Dense(3, dtype=tf_keras_policy)(L.Input((2,))).dtype == 'bfloat16'


@pytest.mark.parametrize('policy', MIXED)
def test_batch_norm_moving_statistics_update_in_float32(policy):
    """The layer normalizes its input cast to the compute dtype (its output has that
    dtype), with statistics computed and kept in float32: those of the float32 layer given
    the same rounded values."""
    x = (np.random.RandomState(3).rand(16, 4) * 3. + 2.).astype('float32')
    dtype = getattr(torch, mixed_precision.Policy(policy).compute_dtype)
    rounded = torch.tensor(x).to(dtype).float().numpy()
    reference = L.BatchNormalization(momentum=0.5)
    mixed_precision.set_global_policy(policy)
    mixed = L.BatchNormalization(momentum=0.5)
    for layer, inputs in ((reference, rounded), (mixed, x)):
        model = keras.models.Sequential([layer])
        model.build((None, 4))
        model.compile('sgd', 'mse')
        model.train_on_batch(inputs, np.zeros_like(x))
    assert mixed.output.dtype == mixed_precision.Policy(policy).compute_dtype
    assert all(w.dtype == torch.float32 for w in mixed.weights)
    np.testing.assert_allclose(mixed.get_weights()[2], rounded.mean(0) * 0.5, rtol=1e-6)
    np.testing.assert_allclose(mixed.get_weights()[3], reference.get_weights()[3], rtol=1e-5)


@pytest.mark.parametrize('policy', MIXED)
def test_the_loss_is_computed_in_float32(policy):
    """A model ending in a low-precision softmax: the loss gets float32 `y_pred`."""
    mixed_precision.set_global_policy(policy)
    model = keras.models.Sequential([L.Dense(3, activation='softmax', input_shape=(4,))])
    model.compile('sgd', 'categorical_crossentropy')
    assert model.output.dtype == mixed_precision.Policy(policy).compute_dtype
    assert model.total_loss.dtype == 'float32'
    x = np.random.RandomState(4).rand(5, 4).astype('float32')
    y = np.eye(3, dtype='float32')[[0, 1, 2, 0, 1]]
    p = model.predict(x).astype('float64')
    expected = -np.mean(np.sum(y * np.log(p / p.sum(-1, keepdims=True)), -1))
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)


def test_losses_of_float64_models_stay_float64(floatx64):
    model = keras.models.Sequential([L.Dense(3, activation='softmax', input_shape=(4,))])
    model.compile('sgd', 'categorical_crossentropy')
    assert (model.output.dtype, model.total_loss.dtype) == ('float64', 'float64')


# ------------------------------------------------------------------------------------------
# LossScaleOptimizer.

def _regression(optimizer, policy='float32'):
    mixed_precision.set_global_policy(policy)
    model = keras.models.Sequential([L.Dense(2, input_shape=(3,))])
    model.compile(optimizer, 'mse')
    rng = np.random.RandomState(5)
    return model, rng.rand(8, 3).astype('float32'), (rng.rand(8, 2) * 40.).astype('float32')


def test_compile_wraps_the_optimizer_under_mixed_float16_only():
    wrapped, _, _ = _regression('adam', 'mixed_float16')
    optimizer = wrapped.optimizer
    assert isinstance(optimizer, mixed_precision.LossScaleOptimizer)
    assert isinstance(optimizer.inner_optimizer, keras.optimizers.Adam)
    assert (optimizer.dynamic, optimizer.initial_scale, optimizer.dynamic_growth_steps) == (
        True, 2. ** 15, 2000)
    assert K.get_value(optimizer.loss_scale) == 2. ** 15
    plain, _, _ = _regression('adam', 'mixed_bfloat16')
    assert isinstance(plain.optimizer, keras.optimizers.Adam)
    explicit = mixed_precision.LossScaleOptimizer('sgd', initial_scale=8.)
    model, _, _ = _regression(explicit, 'mixed_float16')
    assert model.optimizer is explicit


def test_a_forced_overflow_halves_the_scale_and_changes_nothing_else():
    optimizer = mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(0.01))
    model, x, y = _regression(optimizer)
    model.train_on_batch(x, y)
    assert int(K.get_value(optimizer.dynamic_counter)) == 1
    weights, state = model.get_weights(), optimizer.get_weights()
    K.set_value(optimizer.loss_scale, 2. ** 126)  # the scaled loss overflows float32
    model.train_on_batch(x, y)
    assert K.get_value(optimizer.loss_scale) == 2. ** 125
    assert int(K.get_value(optimizer.dynamic_counter)) == 0
    for before, after in zip(weights + state[:-2], model.get_weights() + optimizer.get_weights()[:-2]):
        np.testing.assert_array_equal(before, after)
    K.set_value(optimizer.loss_scale, 4.)
    model.train_on_batch(x, y)
    assert not np.array_equal(weights[0], model.get_weights()[0])
    assert int(K.get_value(optimizer.iterations)) == 2


def test_scaled_steps_match_unscaled_ones_and_the_scale_grows():
    optimizer = mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.01), initial_scale=4.,
                                                   dynamic_growth_steps=2)
    model, x, y = _regression(optimizer)
    reference, _, _ = _regression(keras.optimizers.SGD(0.01))
    reference.set_weights(model.get_weights())
    scales = []
    for _ in range(5):
        model.train_on_batch(x, y)
        reference.train_on_batch(x, y)
        scales.append(float(K.get_value(optimizer.loss_scale)))
    assert scales == [4., 8., 8., 16., 16.]
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_an_inner_optimizer_computing_its_own_gradients_gets_the_scaled_loss():
    """As torchk.distributed's DistributedOptimizer, which averages gradients over processes."""
    losses = []

    class Recording(keras.optimizers.SGD):
        def get_gradients(self, loss, params):
            losses.append(loss)
            return super(Recording, self).get_gradients(loss, params)

    optimizer = mixed_precision.LossScaleOptimizer(Recording(0.01), initial_scale=16.)
    model, x, y = _regression(optimizer)
    reference, _, _ = _regression(keras.optimizers.SGD(0.01))
    reference.set_weights(model.get_weights())
    model.train_on_batch(x, y)
    reference.train_on_batch(x, y)
    assert len(losses) == 1 and losses[0] is not model.total_loss
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_fixed_scale_never_changes():
    optimizer = mixed_precision.LossScaleOptimizer('sgd', dynamic=False, initial_scale=64.)
    model, x, y = _regression(optimizer)
    for _ in range(3):
        model.train_on_batch(x, y)
    assert K.get_value(optimizer.loss_scale) == 64.


@pytest.mark.parametrize('arguments, message', [
    (dict(initial_scale=0.5), 'initial_scale'),
    (dict(dynamic_growth_steps=0), 'dynamic_growth_steps'),
])
def test_loss_scale_optimizer_checks_its_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        mixed_precision.LossScaleOptimizer('sgd', **arguments)
    with pytest.raises(ValueError, match='another LossScaleOptimizer'):
        mixed_precision.LossScaleOptimizer(mixed_precision.LossScaleOptimizer('sgd'))


def test_the_loss_scale_state_saves_and_loads_with_the_model(tmp_path):
    model, x, y = _regression(keras.optimizers.Adam(0.01), 'mixed_float16')
    optimizer = model.optimizer
    model.train_on_batch(x, y)
    K.set_value(optimizer.loss_scale, 2. ** 20)  # overflows float16 gradients: halves
    model.train_on_batch(x, y)
    scale, count = K.get_value(optimizer.loss_scale), int(K.get_value(optimizer.dynamic_counter))
    assert (scale, count) == (2. ** 19, 0)
    K.set_value(optimizer.loss_scale, 2.)
    model.train_on_batch(x, y)
    path = str(tmp_path / 'model.h5')
    model.save(path)
    mixed_precision.set_global_policy('float32')
    loaded = keras.models.load_model(path)
    restored = loaded.optimizer
    assert isinstance(restored, mixed_precision.LossScaleOptimizer)
    assert isinstance(restored.inner_optimizer, keras.optimizers.Adam)
    assert K.get_value(restored.loss_scale) == 2.
    assert int(K.get_value(restored.dynamic_counter)) == 1
    for a, b in zip(optimizer.get_weights(), restored.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert loaded.output.dtype == 'float16'
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
