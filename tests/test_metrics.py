"""torchk.metrics: MeanIoU, Precision and Recall (top_k, thresholds, class_id) give
TensorFlow's values (tests/fixtures/tf_keras/ops/metrics.json, made by tf_keras), as
metric objects and through `compile(metrics=...)`."""
import json
import os

import numpy as np
import pytest

import keras
from keras import backend as K

from tf_keras_fixtures import OPS_DIR

with open(os.path.join(OPS_DIR, 'metrics.json')) as _f:
    CASES = json.load(_f)


def _case_id(case):
    return '%s-%s-%s' % (case['class_name'], '-'.join('%s=%s' % item
                                                      for item in sorted(case['config'].items())),
                         'weighted' if case['sample_weight'] is not None else 'unweighted')


def _batches(case):
    weights = case['sample_weight']
    for batch in range(2):
        yield (np.asarray(case['y_true'][batch], 'float32'),
               np.asarray(case['y_pred'][batch], 'float32'),
               None if weights is None else np.asarray(weights[batch], 'float32'))


@pytest.mark.parametrize('case', CASES, ids=_case_id)
def test_metric_accumulates_tf_value(case):
    metric = getattr(keras.metrics, case['class_name'])(**case['config'])
    # Static shapes: Keras 2.3.1 broadcasts sample weights over classes only when it knows
    # both shapes (utils/losses_utils.py broadcast_weights).
    y_true = K.placeholder(shape=np.shape(case['y_true'])[1:])
    y_pred = K.placeholder(shape=np.shape(case['y_pred'])[1:])
    weighted = case['sample_weight'] is not None
    weight = K.placeholder(shape=np.shape(case['sample_weight'])[1:]) if weighted else None
    result = metric(y_true, y_pred, sample_weight=weight)
    update = K.function([y_true, y_pred] + ([weight] if weighted else []), [result],
                        updates=metric.updates)
    for labels, predictions, weights in _batches(case):
        result = update([labels, predictions] + ([weights] if weighted else []))[0]
    np.testing.assert_allclose(result, case['result'], rtol=1e-6, atol=1e-7)
    metric.reset_states()
    assert all(not np.any(K.get_value(w)) for w in metric.weights)


def _single_output_model(shape):
    inputs = keras.Input(shape)
    return keras.Model(inputs, keras.layers.Lambda(lambda x: x * 1.)(inputs))


@pytest.mark.parametrize('case', [c for c in CASES if c['sample_weight'] is None
                                  and np.ndim(c['y_true']) == np.ndim(c['y_pred'])],
                         ids=_case_id)
def test_compiled_metric_evaluates_to_tf_value(case):
    y_true = np.concatenate([np.asarray(b, 'float32') for b in case['y_true']])
    y_pred = np.concatenate([np.asarray(b, 'float32') for b in case['y_pred']])
    model = _single_output_model(y_pred.shape[1:])
    metric = getattr(keras.metrics, case['class_name'])(**case['config'])
    model.compile('sgd', 'mse', metrics=[metric])
    loss, value = model.evaluate(y_pred, y_true, batch_size=len(y_pred) // 2, verbose=0)
    np.testing.assert_allclose(value, case['result'], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize('metric', [keras.metrics.MeanIoU(3, ignore_class=1, name='iou'),
                                    keras.metrics.Precision(top_k=2, class_id=1),
                                    keras.metrics.Recall(thresholds=[0.2, 0.6])],
                         ids=lambda m: type(m).__name__)
def test_config_round_trip(metric):
    config = metric.get_config()
    rebuilt = keras.metrics.deserialize({'class_name': type(metric).__name__,
                                         'config': config})
    assert type(rebuilt) is type(metric) and rebuilt.get_config() == config


def test_metrics_are_keras_names():
    from torchk import metrics
    assert keras.metrics.MeanIoU is metrics.MeanIoU
    assert keras.metrics.get('Precision') is metrics.Precision
