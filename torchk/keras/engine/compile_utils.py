"""`model.compiled_loss` and `model.compiled_metrics`: the losses and metrics given to
`compile`, called as tf.keras 2 calls them in its train and test steps.
"""
import numpy as np
import torch

import keras
from keras import backend as K

from ... import graph
from ...tf import distribute
from .data_adapter import _first_array


class LossesContainer(object):
    """`model.compiled_loss`: the losses given to `compile`, called as tf.keras calls them.

    # Arguments
        loss: a loss (name, function or `Loss`), or a list or dict of them, one per output.
        loss_weights: a list or dict of output weights.
    """

    def __init__(self, loss, loss_weights=None, output_names=None):
        self._loss = loss
        self._loss_weights = loss_weights
        self._given_output_names = output_names or (lambda: None)
        self.metric = keras.metrics.Mean(name='loss')
        self._per_output_metrics = None

    @property
    def _output_names(self):
        return self._given_output_names()

    def _output_metrics(self, losses, count):
        """With several outputs, a `<output name>_loss` mean per output that has a loss
        (each output's own loss, before its weight, as tf.keras tracks it)."""
        if self._per_output_metrics is None:
            names = _names_of_outputs(self._output_names, count)
            self._per_output_metrics = [
                None if count < 2 or loss is None else keras.metrics.Mean(name=name + '_loss')
                for name, loss in zip(names, losses)]
        return self._per_output_metrics

    @staticmethod
    def _loss_object(identifier):
        loss = keras.losses.get(identifier)
        if isinstance(loss, keras.losses.Loss):
            return loss
        return keras.losses.LossFunctionWrapper(loss, name=getattr(loss, '__name__', None))

    def _per_output(self, value, count):
        if isinstance(value, dict):
            return [value.get(name) for name in self._output_names]
        if isinstance(value, (list, tuple)):
            return list(value)
        return [value] * count

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        """The total loss (a scalar tensor); updates the `loss` tracker.

        Under a strategy of several replicas the loss returned is divided by their number
        (the tracker takes it whole), as tf.keras does: `apply_gradients` sums the replicas'
        gradients.

        # Arguments
            y_true, y_pred: targets and predictions (matching lists or dicts for several
                outputs).
            sample_weight: per-sample weights.
            regularization_losses: scalar tensors added to the total (`self.losses`).
        """
        total = None
        batch = _batch_size(y_pred)
        if self._loss is not None and y_true is not None:
            if isinstance(y_pred, dict):
                y_pred = [y_pred[name] for name in self._output_names]
            if isinstance(y_true, dict):
                y_true = [y_true[name] for name in self._output_names]
            outputs = list(y_pred) if isinstance(y_pred, (list, tuple)) else [y_pred]
            targets = list(y_true) if isinstance(y_true, (list, tuple)) else [y_true]
            losses = self._per_output(self._loss, len(outputs))
            weights = self._per_output(self._loss_weights or 1., len(outputs))
            trackers = self._output_metrics(losses, len(outputs))
            for target, output, loss, weight, tracker in zip(targets, outputs, losses,
                                                             weights, trackers):
                if loss is None:
                    continue
                value = self._loss_object(loss)(target, output, sample_weight=sample_weight)
                if tracker is not None:
                    tracker.update_state(_detach(value), sample_weight=batch)
                value = value * weight if weight != 1. else value
                total = value if total is None else total + value
        for value in regularization_losses or []:
            total = value if total is None else total + value
        if total is None:
            raise ValueError('The model has no loss: give compile a loss, or add losses in '
                             'the layers (add_loss).')
        self.metric.update_state(total, sample_weight=batch)
        replicas = distribute.get_strategy().num_replicas_in_sync
        return total / replicas if replicas > 1 else total

    @property
    def metrics(self):
        return [self.metric] + [m for m in self._per_output_metrics or [] if m is not None]


class MetricsContainer(object):
    """`model.compiled_metrics`: the metrics given to `compile`, as stateful metric objects.

    As in tf.keras: a flat list of metrics applies to every output, a list of lists or a dict
    by output name to the outputs they name; with several outputs each metric is named
    `<output name>_<metric name>`. `'accuracy'`/`'acc'` becomes binary, categorical or sparse
    categorical accuracy from the output's loss and the shapes seen first.

    # Arguments
        metrics: as `compile` took them.
        loss: as `compile` took it (one loss, or a list or dict of them).
        output_names: a function returning the model's output names (or None), asked when
            the first batch arrives.
    """

    def __init__(self, metrics, loss=None, output_names=None):
        self._given = metrics or []
        self._loss = loss
        self._output_names = output_names or (lambda: None)
        self._per_output = None

    def _names(self, y_pred, count):
        if isinstance(y_pred, dict):
            return list(y_pred)
        return _names_of_outputs(self._output_names(), count)

    @staticmethod
    def _as_list(value):
        if value is None:
            return []
        return list(value) if isinstance(value, (list, tuple)) else [value]

    def _build(self, targets, outputs, names):
        given, loss = self._given, self._loss
        if isinstance(given, dict):
            unknown = sorted(set(given) - set(names))
            if unknown:
                raise ValueError('compile(metrics=...) names outputs %s; the model\'s outputs '
                                 'are %s.' % (unknown, names))
            per_output = [self._as_list(given.get(name)) for name in names]
        elif len(names) > 1 and given and all(isinstance(g, (list, tuple)) for g in given):
            if len(given) != len(names):
                raise ValueError('compile(metrics=...) has %d lists of metrics for %d outputs.'
                                 % (len(given), len(names)))
            per_output = [list(g) for g in given]
        else:
            per_output = [self._as_list(given)] * len(names)
        losses = ([loss.get(name) for name in names] if isinstance(loss, dict) else
                  list(loss) if isinstance(loss, (list, tuple)) else [loss] * len(names))
        prefix = len(names) > 1
        self._per_output = [
            [self._metric(m, target, output, output_loss, name + '_' if prefix else '')
             for m in identifiers]
            for identifiers, target, output, output_loss, name
            in zip(per_output, targets, outputs, losses, names)]

    def _metric(self, identifier, y_true, y_pred, loss, prefix):
        if isinstance(identifier, keras.metrics.Metric):
            if not prefix:
                return identifier
            config = identifier.get_config()
            config['name'] = prefix + identifier.name
            return type(identifier).from_config(config)
        if identifier in ('accuracy', 'acc'):
            return self._accuracy(prefix + identifier, y_true, y_pred, loss)
        if isinstance(identifier, str):
            function = keras.metrics.get(identifier)
            return keras.metrics.MeanMetricWrapper(function, name=prefix + identifier)
        return keras.metrics.MeanMetricWrapper(identifier,
                                               name=prefix + identifier.__name__)

    @staticmethod
    def _accuracy(name, y_true, y_pred, loss):
        loss = loss if isinstance(loss, str) else getattr(
            loss, '__name__', getattr(loss, 'name', '')) or ''
        true_shape, pred_shape = tuple(np.shape(y_true)), tuple(np.shape(y_pred))
        if 'binary' in loss or (pred_shape and pred_shape[-1] == 1):
            return keras.metrics.BinaryAccuracy(name=name)
        if 'sparse' in loss or len(true_shape) < len(pred_shape) or (
                true_shape and true_shape[-1] == 1 and pred_shape[-1] != 1):
            return keras.metrics.SparseCategoricalAccuracy(name=name)
        return keras.metrics.CategoricalAccuracy(name=name)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Updates every metric with a batch (each output's metrics with that output).

        # Raises
            ValueError: if the targets are not one per output.
        """
        several = isinstance(y_pred, (list, tuple, dict))
        outputs = (list(y_pred.values()) if isinstance(y_pred, dict) else
                   list(y_pred) if several else [y_pred])
        names = self._names(y_pred, len(outputs))
        if isinstance(y_true, dict):
            missing = [name for name in names if name not in y_true]
            if missing:
                raise ValueError('The targets have no value for the outputs %s (they have %s).'
                                 % (missing, sorted(y_true)))
            targets = [y_true[name] for name in names]
        else:
            targets = list(y_true) if several else [y_true]
        if len(targets) != len(outputs):
            raise ValueError('The model has %d outputs but the targets are %d.'
                             % (len(outputs), len(targets)))
        if self._per_output is None:
            self._build(targets, outputs, names)
        for metrics, target, output in zip(self._per_output, targets, outputs):
            for metric in metrics:
                metric.update_state(target, _detach(output), sample_weight=sample_weight)

    @property
    def metrics(self):
        return [metric for metrics in self._per_output or [] for metric in metrics]


def _names_of_outputs(names, count):
    """The model's output names where it has `count` of them, else `output_1`, ..."""
    if names and len(names) == count:
        return list(names)
    return ['output_%d' % (i + 1) for i in range(count)]


def _detach(value):
    """`value` without gradients (a tensor detached, a symbol of a recorded step through
    `K.stop_gradient`)."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    return K.stop_gradient(value) if graph.is_symbol(value) else value


def _batch_size(y_pred):
    """The number of samples of a batch's predictions, as a float tensor (a symbol in a
    recorded step); 1 without predictions."""
    if y_pred is None:
        return torch.tensor(1.)
    first = _first_array(y_pred)
    if graph.is_symbol(first):
        return K.cast(K.shape(first)[0], K.floatx())
    return torch.tensor(float(len(first)))
