"""tf.keras 2's losses, metrics, layers and utilities that Keras 2.3.1 lacks, against
TensorFlow 2.15's values and configurations (tests/fixtures/make_tf_keras_names.py)."""
import json
import os

import numpy as np
import pytest

import torchk.keras as keras

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures',
                    'tf_keras', 'names')
VALUES = np.load(os.path.join(HERE, 'values.npz'))
with open(os.path.join(HERE, 'configs.json')) as _f:
    CONFIGS = json.load(_f)

LOSSES = {
    'binary_focal': (lambda: keras.losses.BinaryFocalCrossentropy(), 'binary'),
    'binary_focal_balanced': (lambda: keras.losses.BinaryFocalCrossentropy(
        apply_class_balancing=True, alpha=0.4, gamma=1.5, label_smoothing=0.1), 'binary'),
    'binary_focal_logits': (lambda: keras.losses.BinaryFocalCrossentropy(
        from_logits=True, gamma=3.0), 'logits'),
    'categorical_focal': (lambda: keras.losses.CategoricalFocalCrossentropy(), 'onehot'),
    'categorical_focal_logits': (lambda: keras.losses.CategoricalFocalCrossentropy(
        alpha=0.5, gamma=1.0, from_logits=True, label_smoothing=0.2), 'onehot_logits'),
    'cosine_similarity': (lambda: keras.losses.CosineSimilarity(), 'regression'),
    'huber': (lambda: keras.losses.huber, 'regression'),
    'kl_divergence': (lambda: keras.losses.kl_divergence, 'onehot'),
    'log_cosh': (lambda: keras.losses.log_cosh, 'regression'),
}
METRICS = {
    'f1_none': (lambda: keras.metrics.F1Score(), 'multilabel', False),
    'f1_micro': (lambda: keras.metrics.F1Score(average='micro', threshold=0.5), 'multilabel',
                 True),
    'fbeta_macro': (lambda: keras.metrics.FBetaScore(average='macro', beta=2.0,
                                                     threshold=0.4), 'multilabel', False),
    'fbeta_weighted': (lambda: keras.metrics.FBetaScore(average='weighted', beta=0.5),
                       'onehot', True),
    'r2': (lambda: keras.metrics.R2Score(), 'regression', False),
    'r2_variance_weighted': (lambda: keras.metrics.R2Score(
        class_aggregation='variance_weighted_average', num_regressors=2), 'regression', True),
    'r2_raw': (lambda: keras.metrics.R2Score(class_aggregation=None), 'regression', False),
    'iou': (lambda: keras.metrics.IoU(4, [0, 2, 3]), 'sparse', True),
    'iou_ignore': (lambda: keras.metrics.IoU(4, [1, 2], ignore_class=0), 'sparse', False),
    'mean_iou': (lambda: keras.metrics.MeanIoU(4), 'sparse', False),
    'binary_iou': (lambda: keras.metrics.BinaryIoU(threshold=0.3), 'binary', False),
    'binary_iou_one': (lambda: keras.metrics.BinaryIoU([1]), 'binary', True),
    'one_hot_iou': (lambda: keras.metrics.OneHotIoU(4, [1, 3]), 'onehot', False),
    'one_hot_mean_iou': (lambda: keras.metrics.OneHotMeanIoU(4), 'onehot', True),
    'precision_at_recall': (lambda: keras.metrics.PrecisionAtRecall(0.5), 'binary', False),
    'precision_at_recall_class': (lambda: keras.metrics.PrecisionAtRecall(
        0.8, num_thresholds=50, class_id=1), 'multilabel', True),
    'recall_at_precision': (lambda: keras.metrics.RecallAtPrecision(0.6), 'binary', True),
    'recall_at_precision_none': (lambda: keras.metrics.RecallAtPrecision(0.99), 'binary',
                                 False),
    'mean_relative_error': (lambda: keras.metrics.MeanRelativeError(
        normalizer=[1.0, 2.0, 0.0, 4.0]), 'regression', True),
}
LAYERS = {
    'einsum_dense': lambda: keras.layers.EinsumDense('ab,bc->ac', 5, bias_axes='c'),
    'einsum_dense_3d': lambda: keras.layers.EinsumDense(
        'abc,cde->abde', (None, 2, 3), bias_axes='de', activation='relu'),
    'einsum_dense_left_ellipsis': lambda: keras.layers.EinsumDense(
        '...b,bc->...c', 6, bias_axes='c'),
    'einsum_dense_right_ellipsis': lambda: keras.layers.EinsumDense(
        'ab...,bc->ac...', (3, 5), bias_axes='c'),
    'random_fourier_features': lambda: keras.layers.experimental.RandomFourierFeatures(
        8, scale=2.0),
    'random_fourier_features_laplacian':
        lambda: keras.layers.experimental.RandomFourierFeatures(6, 'laplacian'),
    'unit_normalization': lambda: keras.layers.UnitNormalization(axis=[1, 2]),
    'depthwise_conv1d': lambda: keras.layers.DepthwiseConv1D(
        3, strides=2, padding='same', depth_multiplier=2),
    'depthwise_conv1d_dilated': lambda: keras.layers.DepthwiseConv1D(
        2, dilation_rate=2, activation='tanh'),
    'identity': lambda: keras.layers.Identity(),
}


def _pair(data):
    return VALUES['y_true/' + data], VALUES['y_pred/' + data]


def _same_config(ours, theirs):
    """Our configuration has TF's keys and values (JSON-normalized), but for the base keys
    TF 2.15 writes its own way (`dtype` as a policy dict, ...) and a loss' `fn` (the name
    of its function, which saving/training_config.py reads) and `reduction` (tf.keras'
    `auto` is Keras 2.3.1's `sum_over_batch_size` on one replica)."""
    ours = json.loads(json.dumps(ours, default=str))
    for key, value in theirs.items():
        if key in ('dtype', 'trainable', 'name', 'fn', 'reduction'):
            continue
        assert key in ours, key
        if not isinstance(value, dict):
            assert ours[key] == (list(value) if isinstance(value, tuple) else value), key


@pytest.mark.parametrize('case', sorted(LOSSES))
def test_loss_matches_tf(case):
    make, data = LOSSES[case]
    loss = make()
    y_true, y_pred = _pair(data)
    value = loss(keras.backend.constant(y_true), keras.backend.constant(y_pred))
    np.testing.assert_allclose(np.asarray(value), VALUES['loss/' + case], rtol=1e-5,
                               atol=1e-6)
    if 'loss/' + case in CONFIGS:
        _same_config(loss.get_config(), CONFIGS['loss/' + case])


@pytest.mark.parametrize('case', sorted(METRICS))
def test_metric_matches_tf_over_two_updates(case):
    make, data, weighted = METRICS[case]
    metric = make()
    y_true, y_pred = _pair(data)
    weights = VALUES['weights'] if weighted else None
    for part in (slice(0, 7), slice(7, None)):
        extra = {} if weights is None else {'sample_weight': weights[part]}
        metric.update_state(y_true[part], y_pred[part], **extra)
    np.testing.assert_allclose(np.asarray(metric.result()), VALUES['metric/' + case],
                               rtol=1e-5, atol=1e-6)
    _same_config(metric.get_config(), CONFIGS['metric/' + case])
    metric.reset_states()
    for part in (slice(0, 7), slice(7, None)):
        extra = {} if weights is None else {'sample_weight': weights[part]}
        metric.update_state(y_true[part], y_pred[part], **extra)
    np.testing.assert_allclose(np.asarray(metric.result()), VALUES['metric/' + case],
                               rtol=1e-5, atol=1e-6)


def test_metrics_in_compile_train_and_evaluate():
    rng = np.random.RandomState(0)
    x = rng.normal(0, 1, (64, 3)).astype('float32')
    y = (x @ np.array([[1.], [-2.], [0.5]], dtype='float32'))
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile('adam', loss=keras.losses.CosineSimilarity(axis=0),
                  metrics=[keras.metrics.R2Score(), keras.metrics.MeanRelativeError([2.])])
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    loss, r2, relative = model.evaluate(x, y, verbose=0)
    prediction = model.predict(x, verbose=0)
    expected_r2 = 1 - ((y - prediction) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    assert r2 == pytest.approx(expected_r2, rel=1e-4, abs=1e-5)
    assert relative == pytest.approx(np.abs(y - prediction).mean() / 2, rel=1e-4)


@pytest.mark.parametrize('case', sorted(LAYERS))
def test_layer_matches_tf_with_tf_weights(case):
    layer = LAYERS[case]()
    x = VALUES['layer/%s/x' % case]
    inputs = keras.Input(x.shape[1:])
    model = keras.Model(inputs, layer(inputs))
    weights = [VALUES['layer/%s/w%d' % (case, i)] for i in range(len(layer.weights))]
    assert [w.shape for w in weights] == [tuple(w.shape) for w in layer.weights]
    layer.set_weights(weights)
    np.testing.assert_allclose(model.predict(x, verbose=0), VALUES['layer/%s/y' % case],
                               rtol=1e-5, atol=1e-5)
    _same_config(layer.get_config(), CONFIGS['layer/' + case])
    assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


@pytest.mark.parametrize('case, options', [
    ('timeseries', dict(sequence_length=5, sequence_stride=2, sampling_rate=2, batch_size=3,
                        start_index=1, end_index=18)),
    ('timeseries_shuffled', dict(sequence_length=4, batch_size=4, shuffle=True, seed=3)),
    ('timeseries_unbatched', dict(sequence_length=6, batch_size=None, sequence_stride=3))])
def test_timeseries_dataset_matches_tf(case, options):
    series = np.arange(40, dtype='float32').reshape(20, 2)
    windows = list(keras.utils.timeseries_dataset_from_array(series, np.arange(20),
                                                             **options))
    if options['batch_size'] is None:
        windows = [tuple(np.asarray(part)[None] for part in w) for w in windows]
    x = np.concatenate([np.asarray(w[0]) for w in windows])
    y = np.concatenate([np.asarray(w[1]) for w in windows])
    if options.get('shuffle'):
        # The windows' starts are shuffled with TF's numpy generator, then batches are drawn
        # from a buffer with each side's own random stream: the same windows, each with its
        # target, in another order.
        order, expected = np.argsort(y), np.argsort(VALUES['utils/%s/y' % case])
        x, y = x[order], y[order]
        np.testing.assert_array_equal(x, VALUES['utils/%s/x' % case][expected])
        np.testing.assert_array_equal(y, VALUES['utils/%s/y' % case][expected])
        return
    np.testing.assert_array_equal(x, VALUES['utils/%s/x' % case])
    np.testing.assert_array_equal(y, VALUES['utils/%s/y' % case])


def test_split_dataset_to_ordinal_pad_sequences_match_tf():
    left, right = keras.utils.split_dataset((np.arange(10), np.arange(10) * 2), left_size=0.6,
                                            shuffle=True, seed=5)
    np.testing.assert_array_equal([[int(a) for a in e] for e in left],
                                  VALUES['utils/split_left'])
    np.testing.assert_array_equal([[int(a) for a in e] for e in right],
                                  VALUES['utils/split_right'])
    np.testing.assert_array_equal(keras.utils.to_ordinal([[0], [2], [3], [1]], 5),
                                  VALUES['utils/to_ordinal'])
    np.testing.assert_array_equal(
        keras.utils.pad_sequences([[1, 2, 3], [4], [5, 6]], maxlen=2, padding='post',
                                  truncating='pre'), VALUES['utils/pad_sequences'])


OPTIMIZERS = {
    'lion': lambda: keras.optimizers.Lion(learning_rate=0.01),
    'lion_betas': lambda: keras.optimizers.Lion(learning_rate=0.05, beta_1=0.5, beta_2=0.8),
    'ftrl': lambda: keras.optimizers.Ftrl(learning_rate=0.1),
    'ftrl_regularized': lambda: keras.optimizers.Ftrl(
        learning_rate=0.2, learning_rate_power=-0.3, initial_accumulator_value=0.5,
        l1_regularization_strength=0.05, l2_regularization_strength=0.1,
        l2_shrinkage_regularization_strength=0.02, beta=0.3),
    'adafactor': lambda: keras.optimizers.Adafactor(learning_rate=0.1),
    'adafactor_absolute': lambda: keras.optimizers.Adafactor(
        learning_rate=0.02, relative_step=False, clip_threshold=0.5, beta_2_decay=-0.5),
}


@pytest.mark.parametrize('case', sorted(OPTIMIZERS))
def test_optimizer_steps_match_tf(case):
    optimizer = OPTIMIZERS[case]()
    variables = [keras.backend.variable(VALUES['optimizer/start%d' % i]) for i in range(2)]
    for step in range(3):
        grads = [VALUES['optimizer/grad%d_%d' % (step, i)] for i in range(2)]
        optimizer.apply_gradients(zip(grads, variables))
    for i, variable in enumerate(variables):
        np.testing.assert_allclose(keras.backend.get_value(variable),
                                   VALUES['optimizer/%s/%d' % (case, i)], rtol=1e-5,
                                   atol=1e-6)
    config = optimizer.get_config()
    assert type(optimizer).from_config(config).get_config() == config
