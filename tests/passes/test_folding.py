"""The inference folding pass (torchk/passes/folding.py): batch normalization folded into the
convolution before it and ReLUs applied by the convolution, against the same graphs run
unfolded, and refolded when a variable changes."""
import numpy as np
import pytest

from torchk import core as K
from torchk.passes import folding


def _variable(rng, shape, low=-1., high=1., dtype='float32'):
    return K.variable(rng.uniform(low, high, shape).astype(dtype), dtype=dtype)


def _batch_norm(rng, channels, x, axis=-1, center=True, scale=True, dtype='float32'):
    statistics = [_variable(rng, (channels,), dtype=dtype),
                  _variable(rng, (channels,), 0.5, 2., dtype=dtype),
                  _variable(rng, (channels,), dtype=dtype) if center else None,
                  _variable(rng, (channels,), dtype=dtype) if scale else None]
    return K.batch_normalization(x, *statistics, axis=axis, epsilon=1e-3), statistics


def _conv2d(rng, x, channels_first=False, dtype='float32'):
    kernel = _variable(rng, (3, 3, 3, 5), dtype=dtype)
    return K.conv2d(x, kernel, strides=(2, 1), padding='same', dilation_rate=(1, 1),
                    data_format='channels_first' if channels_first else 'channels_last')


def _biased_conv2d(rng, x):
    return K.bias_add(_conv2d(rng, x), _variable(rng, (5,)), data_format='channels_last')


def _depthwise(rng, x):
    kernel = _variable(rng, (3, 3, 3, 2))
    return K.depthwise_conv2d(x, kernel, strides=(2, 2), padding='valid',
                              data_format='channels_last')


def _conv1d(rng, x):
    return K.conv1d(K.reshape(x, (-1, 42, 3)), _variable(rng, (3, 3, 5)), padding='causal',
                    data_format='channels_last')


def _conv3d(rng, x):
    return K.conv3d(K.reshape(x, (-1, 6, 7, 1, 3)), _variable(rng, (2, 2, 1, 3, 5)),
                    padding='same', data_format='channels_last')


CONVOLUTIONS = {'conv2d': _conv2d, 'biased_conv2d': _biased_conv2d, 'depthwise': _depthwise,
                'conv1d': _conv1d, 'conv3d': _conv3d}
ACTIVATIONS = {'none': lambda y: y, 'relu': K.relu,
               'relu6': lambda y: K.relu(y, max_value=6.)}


def _run(build, folded, feeds):
    """Builds a graph with `build(rng, x)` -> (outputs, variables) and runs it on `feeds`."""
    folding.set_enabled(folded)
    try:
        x = K.placeholder(shape=(None, 6, 7, 3))
        outputs, _ = build(np.random.RandomState(0), x)
        f = K.function([x], outputs)
        return [f([value]) for value in feeds], f
    finally:
        folding.set_enabled(None)


def _compare(build, feeds, rtol=1e-5, atol=1e-5):
    folded, f = _run(build, True, feeds)
    expected, g = _run(build, False, feeds)
    for got, want in zip(folded, expected):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return f, g


def _fused_names(f):
    return [c.__name__ for c in _constants(f) if isinstance(c, folding.FusedConvolution)]


def _calls_of(f, function):
    """How many times the program of `f` calls `function`."""
    names = [name for name, value in f._program.__globals__.items() if value is function]
    return sum(f._program.source.count(' %s(' % name) for name in names)


def _constants(f):
    return list(f._program.__globals__.values())


def _feeds():
    rng = np.random.RandomState(1)
    return [rng.uniform(-2, 2, (4, 6, 7, 3)).astype('float32') for _ in range(2)]


@pytest.mark.parametrize('activation', sorted(ACTIVATIONS))
@pytest.mark.parametrize('convolution', sorted(CONVOLUTIONS))
def test_batch_norm_and_activation_fold_into_the_convolution(convolution, activation):
    def build(rng, x):
        y = CONVOLUTIONS[convolution](rng, x)
        normed, statistics = _batch_norm(rng, 6 if convolution == 'depthwise' else 5, y)
        return [ACTIVATIONS[activation](normed)], statistics
    f, g = _compare(build, _feeds())
    assert len(_fused_names(f)) == 1 and _fused_names(g) == []
    assert 'batch_normalization' not in f._program.source


@pytest.mark.parametrize('center,scale', [(False, True), (True, False), (False, False)])
def test_batch_norm_without_beta_or_gamma(center, scale):
    def build(rng, x):
        normed, statistics = _batch_norm(rng, 5, _biased_conv2d(rng, x), center=center,
                                         scale=scale)
        return [normed], statistics
    f, _ = _compare(build, _feeds())
    assert len(_fused_names(f)) == 1


def test_channels_first():
    def build(rng, x):
        x = K.permute_dimensions(x, (0, 3, 1, 2))
        normed, statistics = _batch_norm(rng, 5, _conv2d(rng, x, channels_first=True), axis=1)
        return [K.relu(normed, max_value=6.)], statistics
    f, _ = _compare(build, _feeds())
    assert len(_fused_names(f)) == 1


def test_float64_runs_without_onednn():
    def build(rng, x):
        x = K.cast(x, 'float64')
        normed, statistics = _batch_norm(rng, 5, _conv2d(rng, x, dtype='float64'),
                                         dtype='float64')
        return [K.relu(normed)], statistics
    f, _ = _compare(build, _feeds(), rtol=1e-12, atol=1e-12)
    assert len(_fused_names(f)) == 1


def test_refolded_when_a_variable_changes():
    rng = np.random.RandomState(0)
    x = K.placeholder(shape=(None, 6, 7, 3))
    y = _conv2d(rng, x)
    normed, (mean, var, beta, gamma) = _batch_norm(rng, 5, y)
    f = K.function([x], [K.relu(normed)])
    plain = K.function([x], [y])
    feed = _feeds()[0]
    for step in range(3):
        expected = np.maximum((plain([feed])[0] - K.get_value(mean))
                              / np.sqrt(K.get_value(var) + 1e-3) * K.get_value(gamma)
                              + K.get_value(beta), 0.)
        np.testing.assert_allclose(f([feed])[0], expected, rtol=1e-5, atol=1e-5)
        K.set_value(mean, K.get_value(mean) + 0.5)
        K.set_value(gamma, K.get_value(gamma) * -1.5)
        kernel = y.node.args[1]
        K.set_value(kernel, K.get_value(kernel) * 0.5)


def test_not_folded_when_the_convolution_has_another_reader():
    def build(rng, x):
        y = _conv2d(rng, x)
        normed, statistics = _batch_norm(rng, 5, y)
        return [normed, y], statistics
    f, _ = _compare(build, _feeds())
    assert _fused_names(f) == []


def test_not_folded_when_the_program_computes_gradients():
    rng = np.random.RandomState(0)
    x = K.placeholder(shape=(None, 6, 7, 3))
    y = _conv2d(rng, x)
    normed, statistics = _batch_norm(rng, 5, y)
    loss = K.sum(K.relu(normed))
    grads = K.gradients(loss, [y.node.args[1]] + statistics)
    f = K.function([x], [loss] + grads)
    assert _fused_names(f) == []
    assert all(g is not None for g in f(_feeds()[:1]))


def test_not_folded_over_computed_statistics():
    def build(rng, x):
        y = _conv2d(rng, x)
        mean = _variable(rng, (5,))
        statistics = [mean * 2., _variable(rng, (5,), 0.5, 2.), None, None]
        return [K.batch_normalization(y, *statistics, axis=-1, epsilon=1e-3)], [mean]
    f, _ = _compare(build, _feeds())
    assert _fused_names(f) == []


def test_relu_with_alpha_or_threshold_stays_separate():
    def build(rng, x):
        y = _conv2d(rng, x)
        return [K.relu(y, alpha=0.1), K.relu(_conv2d(rng, x), threshold=0.5)], []
    f, _ = _compare(build, _feeds())
    assert _fused_names(f) == []


def test_switch_turns_the_pass_off(monkeypatch):
    monkeypatch.setenv('TORCHK_FOLD', '0')
    assert not folding.enabled()
    monkeypatch.setenv('TORCHK_FOLD', '1')
    assert folding.enabled()


def _mixed_mobile_block(keras, normalization_dtype):
    """MobileNetV2's layer pattern: convolutions, batch norms and ReLU6s, a residual Add;
    the block's output read by the Add and by the next convolution."""
    layers = keras.layers

    def normalization():
        return layers.BatchNormalization(dtype=normalization_dtype)
    inputs = layers.Input((8, 8, 3))
    x = layers.Conv2D(8, 3, padding='same', use_bias=False)(inputs)
    x = layers.ReLU(6.)(normalization()(x))
    y = layers.DepthwiseConv2D(3, padding='same', use_bias=False)(x)
    y = layers.ReLU(6.)(normalization()(y))
    y = normalization()(layers.Conv2D(8, 1)(y))
    z = layers.Conv2D(8, 1, activation='relu')(y)
    outputs = layers.GlobalAveragePooling2D()(layers.Add()([x, y, z]))
    model = keras.models.Model(inputs, layers.Activation('linear', dtype='float32')(outputs))
    rng = np.random.RandomState(5)
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.set_weights([rng.uniform(0.5, 2., w.shape).astype('float32') if i in (0, 3)
                               else rng.uniform(-1., 1., w.shape).astype('float32')
                               for i, w in enumerate(layer.get_weights())])
    return model


@pytest.mark.parametrize('normalization_dtype, unfolded_casts', [(None, 2), ('float32', 9)])
@pytest.mark.parametrize('policy', ['mixed_bfloat16', 'mixed_float16'])
def test_mixed_precision_chains_fold_and_stay_in_the_compute_dtype(policy, normalization_dtype,
                                                                    unfolded_casts):
    """Under a mixed policy a convolution reading its kernel as a cast folds with the batch
    norm after it, which normalizes in the low precision with float32 statistics, or, given
    `dtype='float32'`, in float32 between casts: `cast(bn(cast(conv(x, cast(kernel)),
    float32)), low)`. Either way one convolution computes in the low precision: no batch
    norm, no cast between the layers, the values of the unfolded program to the low
    precision's rounding."""
    import keras
    from torchk import mixed_precision
    mixed_precision.set_global_policy(policy)
    try:
        model = _mixed_mobile_block(keras, normalization_dtype)
    finally:
        mixed_precision.set_global_policy('float32')
    x = np.random.RandomState(6).uniform(-1, 1, (4, 8, 8, 3)).astype('float32')
    folding.set_enabled(False)
    try:
        expected = model.predict(x)
        unfolded = model.predict_function
    finally:
        folding.set_enabled(None)
    model.predict_function = None
    actual = model.predict(x)
    f = model.predict_function
    assert len(_fused_names(f)) == 4 and _fused_names(unfolded) == []
    fused = [c for c in _constants(f) if isinstance(c, folding.FusedConvolution)]
    assert [_calls_of(f, c) for c in fused] == [1] * 4  # the shared block output once
    assert 'batch_normalization' not in f._program.source
    # the casts of the input and of the output; around each float32 batch norm unfolded
    assert _calls_of(f, K.cast.__wrapped__) == 2
    assert _calls_of(unfolded, K.cast.__wrapped__) == unfolded_casts
    np.testing.assert_allclose(actual, expected, atol=0.05 * np.abs(expected).max())
