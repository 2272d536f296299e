"""The batch-norm fusion pass (torchk/passes/batch_norm_fusion.py): Keras' BatchNormalization
training step run as one torch batch_norm that moves the moving statistics, against the same
graphs without the pass; the moving variance's estimator difference measured against its
stated bound; the programs the pass must leave as they are."""
import numpy as np
import pytest
import torch

import keras
from keras import layers
from torchk import core as K
from torchk import nn_ops
from torchk.passes import batch_norm_fusion, phase

_FUSED = nn_ops.normalize_batch_with_moving_statistics
_UNFUSED = nn_ops.normalize_batch_in_training.__wrapped__
_EPSILON = 1e-3


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    """One torch thread: the runs compared then reduce in one order."""
    monkeypatch.setenv('TORCHK_ADAPTIVE_THREADS', '0')
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _functions(f):
    """The functions of the programs `f` has built."""
    built = [entry[0] for entry in f._programs.values()] + [f._program]
    programs = {id(p): p for p in built if p}
    return [c for program in programs.values() for c in program.__globals__.values()]


def _count(f, fn):
    return sum(1 for c in _functions(f) if c is fn)


def _names(model):
    """The names of `model.get_weights()`' arrays, in their order."""
    return [w.name for layer in model.layers for w in layer.weights]


def _conv_last(inputs):
    return layers.Conv2D(5, 3, padding='same')(inputs), (0, 1, 2), True


def _conv_first(inputs):
    y = layers.Permute((3, 1, 2))(inputs)
    return layers.Conv2D(5, 3, padding='same', data_format='channels_first')(y), (0, 2, 3), \
        False


def _conv1d(inputs):
    return layers.Conv1D(5, 3)(layers.Reshape((42, 3))(inputs)), (0, 1), False


def _dense(inputs):
    return layers.Dense(5)(layers.Flatten()(inputs)), (0,), False


LAYOUTS = {'conv2d_channels_last': (_conv_last, -1), 'conv2d_channels_first': (_conv_first, 1),
           'conv1d': (_conv1d, -1), 'dense': (_dense, -1)}


def _model(layout, momentum=0.9, center=True, scale=True, static_batch=None):
    inputs = layers.Input(batch_shape=(static_batch, 6, 7, 3))
    build, axis = LAYOUTS[layout]
    y, axes, sample_variance = build(inputs)
    normed = layers.BatchNormalization(axis=axis, momentum=momentum, epsilon=_EPSILON,
                                       center=center, scale=scale)(y)
    outputs = layers.Dense(3, activation='softmax')(layers.Flatten()(normed))
    model = keras.models.Model(inputs, outputs)
    model.compile('adam', 'categorical_crossentropy', metrics=['accuracy'])
    return model, y, axes, sample_variance


def _data(batch=8):
    rng = np.random.RandomState(1)
    return (rng.uniform(-2, 2, (batch, 6, 7, 3)).astype('float32'),
            np.eye(3, dtype='float32')[rng.randint(0, 3, batch)])


def _train(layout, fused, initial=None, steps=1, batch=8, **options):
    batch_norm_fusion.set_enabled(fused)
    try:
        np.random.seed(0)
        model, normalized, axes, sample_variance = _model(layout, **options)
        if initial is not None:
            model.set_weights(initial)
        x, y = _data(batch)
        losses = [model.train_on_batch(x, y) for _ in range(steps)]
        return model, losses, (normalized, axes, sample_variance, x)
    finally:
        batch_norm_fusion.set_enabled(None)


def _batch_variance(model, normalized, axes, x):
    """The biased variance of the batch-norm layer's input over `axes`, in float64."""
    values = K.function([model.input], [normalized])([x])[0].astype('float64')
    return values.var(axis=axes)


@pytest.mark.parametrize('center,scale', [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize('layout', sorted(LAYOUTS))
def test_one_training_step_against_the_unfused_program(layout, center, scale):
    momentum, options = 0.9, {'center': center, 'scale': scale, 'momentum': 0.9}
    start_model, _, (normalized, axes, sample_variance, x) = _train(layout, False, steps=0,
                                                                     **options)
    initial = start_model.get_weights()
    variance = _batch_variance(start_model, normalized, axes, x)
    n = int(np.prod([x.shape[0] if a == 0 else K.int_shape(normalized)[a] for a in axes]))
    fused_model, fused_losses, _ = _train(layout, True, initial, **options)
    unfused_model, unfused_losses, _ = _train(layout, False, initial, **options)
    assert _count(fused_model.train_function, _FUSED) == 1
    assert _count(fused_model.train_function, _UNFUSED) == 0
    assert _count(unfused_model.train_function, _UNFUSED) == 1
    np.testing.assert_array_equal(fused_losses, unfused_losses)
    names = _names(fused_model)
    got, expected = fused_model.get_weights(), unfused_model.get_weights()
    for name, a, b in zip(names, got, expected):
        if 'moving_variance' not in name:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=name)
    # The moving variance moves towards the batch variance times torch's n / (n - 1); Keras
    # 2.3.1's term is n / (n - 1 - epsilon) times the variance the op returns, which for
    # channels-last images is already the sample variance (corrected twice).
    index = next(i for i, name in enumerate(names) if 'moving_variance' in name)
    fused_term = (got[index] - momentum * initial[index]) / (1. - momentum)
    unfused_term = (expected[index] - momentum * initial[index]) / (1. - momentum)
    np.testing.assert_allclose(fused_term, variance * n / (n - 1), rtol=1e-4)
    keras_variance = variance * n / (n - 1) if sample_variance else variance
    np.testing.assert_allclose(unfused_term, keras_variance * n / (n - 1 - _EPSILON),
                               rtol=1e-4)
    factor = (n - 1 - _EPSILON) / (n if sample_variance else n - 1)
    np.testing.assert_allclose(fused_term / unfused_term, factor, rtol=1e-4)
    # The bound the pass documents, on the moving variance itself.
    bound = (1 + _EPSILON) / n if sample_variance else _EPSILON / (n - 1)
    assert np.all(np.abs(got[index] - expected[index]) <= 1.001 * bound * expected[index])


def test_steps_of_a_small_batch_and_a_static_batch():
    """A batch of 1 leaves one value per channel in a Dense layer: Keras' corrected variance
    is 0, torch's kernel would divide by 0. A static batch makes the sample-size ratio a
    constant."""
    for batch, static in ((1, False), (8, True)):
        initial = _train('dense', False, steps=0, batch=batch,
                         **({'static_batch': batch} if static else {}))[0].get_weights()
        runs = [_train('dense', fused, initial, steps=3, batch=batch,
                       **({'static_batch': batch} if static else {})) for fused in (True, False)]
        assert _count(runs[0][0].train_function, _FUSED) == 1
        np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-6)
        names = _names(runs[0][0])
        for name, a, b in zip(names, runs[0][0].get_weights(), runs[1][0].get_weights()):
            if batch == 1 or 'moving_variance' not in name:
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_layer_called_twice_updates_its_statistics_once():
    """Keras keeps the first call's updates of a shared layer: the fused first call moves
    the statistics, the second normalizes by its batch and moves nothing."""
    def build():
        np.random.seed(0)
        a, b = layers.Input((4,)), layers.Input((4,))
        shared = layers.BatchNormalization(momentum=0.5)
        outputs = layers.Dense(2)(layers.concatenate([shared(a), shared(b)]))
        model = keras.models.Model([a, b], outputs)
        model.compile('sgd', 'mse')
        return model
    rng = np.random.RandomState(2)
    data = [rng.rand(6, 4).astype('float32'), 3. * rng.rand(6, 4).astype('float32')]
    target = rng.rand(6, 2).astype('float32')
    results = []
    for fused in (True, False):
        batch_norm_fusion.set_enabled(fused)
        try:
            model = build()
            if results:
                model.set_weights(results[0][1])
            initial = model.get_weights()
            model.train_on_batch(data, target)
            results.append((model, initial, model.get_weights()))
        finally:
            batch_norm_fusion.set_enabled(None)
    assert _count(results[0][0].train_function, _FUSED) == 1
    assert _count(results[0][0].train_function, _UNFUSED) == 1
    (_, _, fused), (_, initial, unfused) = results[0], results[1]
    mean, variance = data[0].mean(0), data[0].astype('float64').var(0) * 6 / 5
    np.testing.assert_allclose(fused[2], 0.5 * initial[2] + 0.5 * mean, rtol=1e-6)
    np.testing.assert_allclose(unfused[2], fused[2], rtol=1e-6)
    np.testing.assert_allclose(fused[3], 0.5 * initial[3] + 0.5 * variance, rtol=1e-5)


def _keras_step(x, momentum=0.9, correction=None, sample_of=None):
    """Keras 2.3.1's BatchNormalization training step, written out; returns
    (normed, mean, variance, updates, statistics)."""
    gamma, beta = K.variable(np.linspace(.5, 1.5, 4)), K.variable(np.linspace(-1, 1, 4))
    moving_mean, moving_variance = K.variable(np.zeros(4)), K.variable(np.ones(4))
    normed, mean, variance = K.normalize_batch_in_training(x, gamma, beta, [0, 1],
                                                           epsilon=_EPSILON)
    shape_of = x if sample_of is None else sample_of
    sample_size = K.cast(K.prod([K.shape(shape_of)[a] for a in (0, 1)]), 'float32')
    corrected = variance * (sample_size / (sample_size - (1.0 + _EPSILON))
                            if correction is None else correction)
    updates = [K.moving_average_update(moving_mean, mean, momentum),
               K.moving_average_update(moving_variance, corrected, momentum)]
    return normed, mean, corrected, updates, (moving_mean, moving_variance)


def _x():
    return K.placeholder(shape=(None, 5, 4))


REFUSED = {
    'the batch mean is an output':
        lambda x: (lambda s: ([s[0], s[1]], s[3]))(_keras_step(x)),
    'the corrected variance is an output':
        lambda x: (lambda s: ([s[0], s[2]], s[3]))(_keras_step(x)),
    'the moving mean is an output':
        lambda x: (lambda s: ([s[0], s[4][0]], s[3]))(_keras_step(x)),
    'the moving variance is read':
        lambda x: (lambda s: ([s[0] * K.mean(s[4][1])], s[3]))(_keras_step(x)),
    'another correction': lambda x: (lambda s: ([s[0]], s[3]))(_keras_step(x, correction=2.)),
    'the sample size of another tensor':
        lambda x: (lambda s: ([s[0]], s[3]))(_keras_step(x, sample_of=K.concatenate([x, x]))),
    'one statistic updated': lambda x: (lambda s: ([s[0]], s[3][:1]))(_keras_step(x)),
}


@pytest.mark.parametrize('case', sorted(REFUSED))
def test_programs_left_unfused(case):
    x = _x()
    outputs, updates = REFUSED[case](x)
    f = K.function([x], outputs, updates=updates)
    assert _count(f, _FUSED) == 0 and _count(f, _UNFUSED) == 1


def test_the_written_out_step_fuses_and_updates_in_place():
    x = _x()
    normed, _, _, updates, (moving_mean, moving_variance) = _keras_step(x, momentum=0.75)
    f = K.function([x], [normed], updates=updates)
    assert _count(f, _FUSED) == 1
    value = np.random.RandomState(3).randn(3, 5, 4).astype('float32')
    got = f([value])[0]
    flat = value.reshape(-1, 4).astype('float64')
    np.testing.assert_allclose(got.reshape(-1, 4), (flat - flat.mean(0)) / np.sqrt(
        flat.var(0) + _EPSILON) * np.linspace(.5, 1.5, 4) + np.linspace(-1, 1, 4),
        rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(K.get_value(moving_mean), 0.25 * flat.mean(0), rtol=1e-6)
    np.testing.assert_allclose(K.get_value(moving_variance),
                               0.75 + 0.25 * flat.var(0, ddof=1), rtol=1e-6)


def test_a_metric_output_of_the_normalized_tensor_is_computed_after_the_updates():
    """An `_is_metric` output computed from the normalization would recompute it after the
    updates (it reads gamma, which the updates write): the statistics would move twice."""
    x = _x()
    normed, _, _, updates, (moving_mean, _) = _keras_step(x)
    metric = K.mean(normed)
    metric._is_metric = True
    gamma = next(v for v in normed.node.inputs if isinstance(v, K.Variable))
    f = K.function([x], [metric], updates=updates + [K.update_add(gamma, 1.)])
    assert _count(f, _FUSED) == 0
    f([np.ones((2, 5, 4), 'float32')])
    np.testing.assert_allclose(K.get_value(moving_mean), 0.1 * np.ones(4), rtol=1e-6)


def test_the_learning_phase_unresolved():
    """Without the phase pass the inference branch reads the moving statistics."""
    x = _x()
    normed, _, _, updates, statistics = _keras_step(x)
    output = K.in_train_phase(normed, lambda: K.batch_normalization(
        x, statistics[0], statistics[1], None, None, epsilon=_EPSILON))
    for resolved in (True, False):
        phase.set_enabled(resolved)
        try:
            f = K.function([x, K.learning_phase()], [output], updates=updates)
            f([np.ones((2, 5, 4), 'float32'), 1])
            assert _count(f, _FUSED) == int(resolved)
        finally:
            phase.set_enabled(None)


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv('TORCHK_BN_FUSION', '0')
    x = _x()
    normed, _, _, updates, _ = _keras_step(x)
    f = K.function([x], [normed], updates=updates)
    assert _count(f, _FUSED) == 0 and _count(f, _UNFUSED) == 1


@pytest.mark.parametrize('path', ['fit', 'eager call'])
def test_the_tf_keras_facade_steps_are_fused(path):
    """tf.keras' BatchNormalization (Keras 2.3.1's layer) trained by a recorded `fit` step
    and called eagerly in training: the moving variance moves by torch's estimator."""
    import torchk.keras as tf_keras
    x = np.random.RandomState(5).randn(8, 3).astype('float32')
    np.random.seed(0)
    dense = tf_keras.layers.Dense(4, kernel_initializer='glorot_uniform')
    normalization = tf_keras.layers.BatchNormalization(momentum=0.5)
    model = tf_keras.Sequential([tf_keras.Input((3,)), dense, normalization])
    if path == 'fit':
        model.compile('sgd', 'mse')
        inputs = K.get_value(dense.kernel).copy(), K.get_value(dense.bias).copy()
        model.fit(x, np.zeros((8, 4), 'float32'), batch_size=8, epochs=1, verbose=0,
                  shuffle=False)
    else:
        inputs = K.get_value(dense.kernel), K.get_value(dense.bias)
        model(x, training=True)
    projected = (x @ inputs[0] + inputs[1]).astype('float64')
    np.testing.assert_allclose(K.get_value(normalization.moving_mean),
                               0.5 * projected.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(K.get_value(normalization.moving_variance),
                               0.5 + 0.5 * projected.var(0, ddof=1), rtol=1e-6)


@pytest.mark.parametrize('policy', ['mixed_bfloat16', 'mixed_float16'])
def test_a_mixed_precision_step_is_fused_with_float32_statistics(policy):
    """Under a mixed policy the layer normalizes its low-precision input with its float32
    variables (torch's kernel computes the statistics in float32): fused all the same, the
    moving statistics stay float32 and move as the unfused program moves them."""
    from torchk import mixed_precision
    mixed_precision.set_global_policy(policy)
    try:
        start, _, _ = _train('conv2d_channels_last', False, steps=0)
        initial = start.get_weights()
        fused_model, fused_losses, _ = _train('conv2d_channels_last', True, initial)
        unfused_model, unfused_losses, _ = _train('conv2d_channels_last', False, initial)
    finally:
        mixed_precision.set_global_policy('float32')
    assert _count(fused_model.train_function, _FUSED) == 1
    assert _count(fused_model.train_function, _UNFUSED) == 0
    normalization = fused_model.layers[2]
    assert normalization.output.dtype == mixed_precision.Policy(policy).compute_dtype
    assert all(w.dtype == torch.float32 for w in normalization.weights)
    np.testing.assert_allclose(fused_losses, unfused_losses, rtol=1e-2)
    for name, a, b in zip(_names(fused_model), fused_model.get_weights(),
                          unfused_model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-3, err_msg=name)
