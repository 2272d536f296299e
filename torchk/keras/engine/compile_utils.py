"""`model.compiled_loss` and `model.compiled_metrics`: the losses and metrics given to
`compile`, called as tf.keras 2 calls them in its train and test steps.
"""
import numpy as np
import torch

import keras
from keras import backend as K

from ... import graph
from ...tf import distribute
from ... import structure
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

    def _output_metrics(self, losses, y_pred):
        """With several outputs, a `<output name>_loss` mean per output that has a loss
        (each output's own loss, before its weight, as tf.keras tracks it)."""
        if self._per_output_metrics is None:
            names = _names_of_outputs(self._output_names, y_pred)
            several = len(names) > 1
            self._per_output_metrics = [
                keras.metrics.Mean(name=name + '_loss') if several and loss is not None
                else None for name, loss in zip(names, losses)]
        return self._per_output_metrics

    @staticmethod
    def _loss_object(identifier):
        loss = keras.losses.get(identifier)
        if isinstance(loss, keras.losses.Loss):
            return loss
        return keras.losses.LossFunctionWrapper(loss, name=getattr(loss, '__name__', None))

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
            names = self._output_names
            outputs = structure.flatten(y_pred)
            targets = per_output(y_pred, names, y_true, 'targets')
            losses = per_output(y_pred, names, self._loss, 'loss')
            weights = per_output(y_pred, names, self._loss_weights or 1., 'loss_weights')
            trackers = self._output_metrics(losses, y_pred)
            for target, output, loss, weight, tracker in zip(targets, outputs, losses,
                                                             weights, trackers):
                if loss is None:
                    continue
                value = self._loss_object(loss)(target, output, sample_weight=sample_weight)
                if tracker is not None:
                    tracker.update_state(_detach(value), sample_weight=batch)
                value = value * weight if weight not in (None, 1.) else value
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


class OutputLossMean(keras.metrics.Mean):
    """The mean of one output's loss over an epoch for Keras 2.3.1's compiled steps, each
    batch's loss weighted by its number of samples, as tf.keras' `<output>_loss` metrics
    are (Keras 2.3.1 averages the batches' losses alike, a short last batch counting as a
    full one).

    # Arguments
        name: the metric's name.
        output: the model's output tensor (a symbol): its first dimension is the batch's size.
    """

    def __init__(self, name, output, **kwargs):
        super(OutputLossMean, self).__init__(name=name, **kwargs)
        self._output = output

    def update_state(self, values, sample_weight=None):
        if sample_weight is None:
            sample_weight = K.cast(K.shape(self._output)[0], K.floatx())
        return super(OutputLossMean, self).update_state(values, sample_weight=sample_weight)


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

    @staticmethod
    def _as_list(value):
        if value is None:
            return []
        return list(value) if isinstance(value, (list, tuple)) else [value]

    def _build(self, targets, y_pred):
        names = _names_of_outputs(self._output_names(), y_pred)
        outputs = structure.flatten(y_pred)
        given = [self._as_list(metrics) for metrics in
                 per_output(y_pred, self._output_names(), self._given, 'metrics')]
        losses = per_output(y_pred, self._output_names(), self._loss, 'loss')
        prefix = len(names) > 1
        self._per_output = [
            [self._metric(m, target, output, output_loss, name + '_' if prefix else '')
             for m in identifiers]
            for identifiers, target, output, output_loss, name
            in zip(given, targets, outputs, losses, names)]

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
        outputs = structure.flatten(y_pred)
        targets = per_output(y_pred, self._output_names(), y_true, 'targets')
        if self._per_output is None:
            self._build(targets, y_pred)
        for metrics, target, output in zip(self._per_output, targets, outputs):
            for metric in metrics:
                metric.update_state(target, _detach(output), sample_weight=sample_weight)

    @property
    def metrics(self):
        return [metric for metrics in self._per_output or [] for metric in metrics]


def _names_of_outputs(names, y_pred):
    """The names of the outputs `y_pred` (flattened in `tf.nest`'s order): the model's
    output names where it has one per output, else `output_names_of(y_pred)`."""
    count = len(structure.flatten(y_pred))
    if names and len(names) == count:
        return list(names)
    return output_names_of(y_pred)


def output_names_of(outputs):
    """tf.keras' names of a subclassed model's `outputs` (a structure), in `tf.nest`'s
    order: `output_1`, ... for a list, the keys of a dict, joined by `_` where nested."""
    return ['_'.join(str(step) for step in path) if path and not isinstance(path[0], int)
            else 'output_' + '_'.join(str(step) for step in path or (1,))
            for path in _paths(outputs)]


def _paths(nest, prefix=()):
    """The path of each leaf of `nest` in `tf.nest`'s order (list positions from 1)."""
    if isinstance(nest, dict):
        return [path for key in sorted(nest) for path in _paths(nest[key], prefix + (key,))]
    if isinstance(nest, (list, tuple)):
        return [path for i, item in enumerate(nest) for path in _paths(item, prefix + (i + 1,))]
    return [prefix]


def _is_nested(value):
    return isinstance(value, (list, tuple, dict))


def _broadcasts(value, argument):
    """Whether one `compile` argument (or target) applies to every output, as tf.keras
    decides: a value that is not nested, and for metrics a flat list of them."""
    if not _is_nested(value):
        return True
    return argument == 'metrics' and isinstance(value, (list, tuple)) and not any(
        _is_nested(item) for item in value)


def per_output(y_pred, output_names, value, argument):
    """`value` (targets, or a `compile` argument given per output: `loss`, `loss_weights`,
    `metrics`) as one item per output of `y_pred` (flattened in `tf.nest`'s order), mapped as
    tf.keras maps it: a dict by output name for a model of one output or a flat list of them
    (keys missing: None), by key for outputs in a dict; a structure like `y_pred`'s item by
    item; anything else (`_broadcasts`) to every output.

    # Raises
        ValueError: naming `argument`, for keys that name no output or a structure that is
            not the outputs'.
    """
    outputs = structure.flatten(y_pred)
    if _broadcasts(value, argument):
        return [value] * len(outputs)
    flat_outputs = not _is_nested(y_pred) or (isinstance(y_pred, (list, tuple)) and not any(
        _is_nested(item) for item in y_pred))
    if isinstance(value, dict) and (flat_outputs or isinstance(y_pred, dict)):
        names = (_names_of_outputs(output_names, y_pred) if flat_outputs
                 else list(y_pred))
        unknown = sorted(set(value) - set(names), key=str)
        if unknown:
            raise ValueError('%s names outputs %s; the model\'s outputs are %s.'
                             % (_given_as(argument), unknown, names))
        if flat_outputs:
            return [value.get(name) for name in names]
        value = {key: value.get(key) for key in y_pred}
    try:
        return _flat_up_to(y_pred, value)
    except (KeyError, IndexError, TypeError) as error:
        raise ValueError('%s is not given one per output: the outputs are nested as %s, it '
                         'as %s (%s).' % (_given_as(argument), _shape_of(y_pred),
                                          _shape_of(value), error)) from None


def _given_as(argument):
    return 'The targets' if argument == 'targets' else 'compile(%s=...)' % argument


def _flat_up_to(nest, value):
    """The items of `value` at the leaves of `nest` (its structure down to `nest`'s)."""
    if isinstance(nest, dict):
        return [item for key in sorted(nest) for item in _flat_up_to(nest[key], value[key])]
    if isinstance(nest, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(nest):
            raise TypeError('%d items for %d' % (len(value) if _is_nested(value) else 1,
                                                 len(nest)))
        return [item for n, v in zip(nest, value) for item in _flat_up_to(n, v)]
    return [value]


def _shape_of(nest):
    if isinstance(nest, dict):
        return {key: _shape_of(value) for key, value in nest.items()}
    if isinstance(nest, (list, tuple)):
        return type(nest)(_shape_of(value) for value in nest)
    return '.'



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
