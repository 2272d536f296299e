"""tf.keras 2's `Model` over Keras 2.3.1's.

A model whose class overrides none of `train_step`, `test_step`, `predict_step` (and is not
compiled with `run_eagerly=True`) trains with Keras 2.3.1's compiled training function:
`fit`, `evaluate` and `predict` are Keras', taking in addition a `tf.data.Dataset`, a
generator or a `keras.utils.Sequence` as `x`.

A model that overrides one of them runs tf.keras 2's loop: `fit` calls `train_step(data)`
per batch with `data` an `(x, y)` or `(x, y, sample_weight)` tuple (or `x` alone), with
callbacks, `History` and the progress bar. As tf.keras wraps its steps in `tf.function`, each
step is recorded once per input signature as one program (`torchk.tf.tracing`: the forward
pass, `tf.GradientTape`'s gradients and the optimizer's fused update), its Python running at
recording time only; `compile(run_eagerly=True)` (or `tf.config.run_functions_eagerly(True)`)
runs the Python on every batch instead, on torch tensors: layers called on tensors compute
eagerly (`eager.py`), with autograd. The default steps use what `compile` set up, as tf.keras
does:
`self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)`,
`self.compiled_metrics.update_state(y, y_pred, sample_weight)`, `self.metrics` (the loss
tracker first), `self.optimizer.apply_gradients` / `minimize`.
"""
import contextlib
import functools
import inspect
import itertools
import os

import numpy as np
import torch

import keras
from keras import backend as K
from keras import callbacks as keras_callbacks
from keras.utils.generic_utils import Progbar
from keras.utils.io_utils import ask_to_proceed_with_overwrite

from ...callbacks import TensorBoard
from ...keras_compat.fixes import input_shapes
from ...tf import checkpoint as tf_checkpoint
from ...tf import distribute
from ... import structure
from ...tf import tape
from ...tf import tracing
from .. import eager
from .. import optimizers as tf_optimizers
from . import functional
from .saving import make_parent_folder, save_model
from .base_layer import in_symbolic_block, symbolic_losses
from .compile_utils import (LossesContainer, MetricsContainer, OutputLossMean,
                            output_names_of)
from .data_adapter import (_Batches, _class_sample_weights, _count_steps, _first_array,
                           _is_array_data, _numpy, _numpy_batches, _numpy_batches_once, _take,
                           _to_tensor, _validation_tuple, array_data, pack_x_y_sample_weight,
                           unpack_x_y_sample_weight)


def _value(value):
    """A log value as a Python float (or numpy array)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    value = np.asarray(value)
    return float(value) if value.ndim == 0 else value


class _Progress(keras_callbacks.Callback):
    """tf.keras' progress bar over steps, every value shown as it is (running results)."""

    def __init__(self, verbose):
        super(_Progress, self).__init__()
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        if self.verbose:
            print('Epoch %d/%d' % (epoch + 1, self.params['epochs']))
        self.progbar = Progbar(target=self.params['steps'], verbose=self.verbose)

    def on_batch_end(self, batch, logs=None):
        values = [(k, v) for k, v in (logs or {}).items() if k not in ('batch', 'size')]
        self.progbar.stateful_metrics.update(k for k, _ in values)
        if self.verbose == 1 and (self.params['steps'] is None
                                  or batch + 1 < self.params['steps']):
            self.progbar.update(batch + 1, values)
        self.seen = batch + 1

    def on_epoch_end(self, epoch, logs=None):
        values = [(k, v) for k, v in (logs or {}).items() if k not in ('batch', 'size')]
        self.progbar.stateful_metrics.update(k for k, _ in values)
        if self.verbose:
            self.progbar.update(getattr(self, 'seen', 0), values)


def _in_strategy_scope(method):
    """`method` run in the scope of the model's `distribute_strategy`, as tf.keras runs
    `fit`, `evaluate` and `predict`."""
    @functools.wraps(method)
    def in_scope(self, *args, **kwargs):
        with self.distribute_strategy.scope():
            return method(self, *args, **kwargs)
    return in_scope


# Callbacks that write files or print: under a strategy of several replicas, only the chief
# (`strategy.extended.should_checkpoint`) runs them.
_CHIEF_CALLBACKS = (keras_callbacks.ModelCheckpoint, keras_callbacks.CSVLogger,
                    keras_callbacks.ProgbarLogger, keras_callbacks.RemoteMonitor,
                    keras_callbacks.TensorBoard, TensorBoard)


def _mean_over_replicas(strategy, logs):
    """The logs (name -> number) averaged over the replicas: every replica then decides
    alike (`EarlyStopping`, `ReduceLROnPlateau`) and shows the global batch's values, as
    tf.keras' replica-synchronized metrics do."""
    logs = dict(logs)
    names = sorted(name for name, value in logs.items() if np.ndim(value) == 0)
    if strategy.num_replicas_in_sync == 1 or not names:
        return logs
    means = strategy.reduce(distribute.ReduceOp.MEAN,
                            torch.tensor([logs[name] for name in names], dtype=torch.float64))
    logs.update(zip(names, means.tolist()))
    return logs


class Model(keras.Model):
    """tf.keras 2's `Model`: Keras 2.3.1's, with `train_step`/`test_step`/`predict_step`,
    eager calls, `compiled_loss`, `compiled_metrics` and datasets (see the module docstring).
    """

    def __new__(cls, *args, **kwargs):
        model = super(Model, cls).__new__(cls)
        object.__setattr__(model, '_torchk_init_config', _init_config(cls, args, kwargs))
        return model

    def __init__(self, *args, **kwargs):
        # A model made in a strategy's scope is trained by that strategy (tf.keras' rule).
        self._distribution_strategy = (distribute.get_strategy() if distribute.has_strategy()
                                       else None)
        args, kwargs, structures = functional.flat_graph_arguments(args, kwargs)
        super(Model, self).__init__(*args, **kwargs)
        if structures is not None:
            functional.set_structures(self, *structures)

    def get_config(self):
        """Keras 2.3.1's; for a subclassed model without a `get_config` of its own, made with
        arguments of basic types only (strings, numbers, booleans, None, nested in lists and
        dicts), those arguments, as tf.keras generates it."""
        auto = self.__dict__.get('_torchk_init_config')
        if self._is_graph_network or type(self).get_config is not Model.get_config or (
                auto is None):
            return super(Model, self).get_config()
        config = {'name': self.name, 'trainable': self.trainable, 'dtype': self.dtype}
        base_keys = set(config)
        config.update(auto)
        init = inspect.getfullargspec(type(self).__init__)
        if init.varkw is None:
            for key in base_keys - set(init.args[1:]):
                config.pop(key)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Keras 2.3.1's for a functional model's config; a subclassed model's (no `layers`)
        is its class called with it, as tf.keras does."""
        if isinstance(config, dict) and 'layers' not in config:
            return cls(**config)
        return super(Model, cls).from_config(config, custom_objects)

    def _eager_steps(self):
        """Whether `fit`, `evaluate` and `predict` run tf.keras' step loop: for overridden
        steps, `run_eagerly`, and a strategy of several replicas (whose loop splits the
        global batches and sums the gradients in `apply_gradients`)."""
        cls = type(self)
        return (getattr(self, '_torchk_run_eagerly', False)
                or any(getattr(cls, name) is not getattr(Model, name)
                       for name in ('train_step', 'test_step', 'predict_step'))
                or self.distribute_strategy.num_replicas_in_sync > 1)

    def compile(self, optimizer='rmsprop', loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None, **kwargs):
        """Configures the model for training (tf.keras' arguments; `steps_per_execution`
        and `jit_compile` are accepted and have no effect)."""
        self._torchk_run_eagerly = bool(run_eagerly)
        self._torchk_steps = {}
        metrics, weighted_metrics = _listed(metrics), _listed(weighted_metrics)
        optimizer = tf_optimizers.get(optimizer) if optimizer is not None else None
        output_names = functools.partial(getattr, self, 'output_names', None)  # known later
        self.compiled_loss = LossesContainer(loss, loss_weights, output_names)
        self.compiled_metrics = MetricsContainer(metrics, loss, output_names)
        if self._eager_steps():
            self.optimizer = optimizer
            # What Keras' compile records and its save writes as the training configuration.
            self.loss, self.loss_weights, self.sample_weight_mode = loss, loss_weights, None
            self._compile_metrics = metrics
            self._compile_weighted_metrics = weighted_metrics
            return
        self._unbuilt_while_inputs_unknown()
        metrics, weighted_metrics = _unshared_metrics(metrics), _unshared_metrics(weighted_metrics)
        by_names = functools.partial(functional.by_output_names, self)
        with symbolic_losses():
            super(Model, self).compile(optimizer, loss=by_names(loss), metrics=by_names(metrics),
                                       loss_weights=by_names(loss_weights),
                                       weighted_metrics=by_names(weighted_metrics), **kwargs)

    @property
    def losses(self):
        return _losses(self, lambda: super(Model, self).losses)

    @property
    def metrics(self):
        if not self._eager_steps() or not hasattr(self, 'compiled_loss'):
            return super(Model, self).metrics
        return (self.compiled_loss.metrics + self.compiled_metrics.metrics
                + list(self._metrics))

    def __call__(self, *args, **kwargs):
        if self._is_graph_network and args and eager.is_eager(args[0]):
            args = (functional.conform_values(self, args[0]),) + args[1:]
        if not self._is_graph_network and not self.built:
            if getattr(self, '_torchk_deferred_weights', None) is not None:
                self.build(input_shapes(args[0] if args else kwargs['inputs']))
            elif type(self).build is Model.build and not isinstance(self, keras.Sequential):
                self.built = True  # tf.keras builds a subclassed model by calling it
        return super(Model, self).__call__(*args, **kwargs)

    def _unbuilt_while_inputs_unknown(self):
        """Keras 2.3.1's `compile` and data checks read `built` as "the model's inputs are
        known"; a subclassed model built by an eager call, as tf.keras builds it, has its
        weights but not yet its inputs (the first data sets them)."""
        if not self._is_graph_network and not self.inputs:
            self.built = False

    def _standardize_user_data(self, x, *args, **kwargs):
        if self._is_compiled and not self.loss:
            # Compiled without a loss (its losses all from `add_loss`): tf.keras ignores
            # the targets, where Keras 2.3.1 refuses them.
            if args:
                args = (None,) + args[1:]
            kwargs.pop('y', None)
        self._unbuilt_while_inputs_unknown()
        if isinstance(x, dict) and not self._is_graph_network and not self.inputs:
            self._set_inputs(x)
        x = self._conform(functional.data_by_input_names(self, x), '_feed_input_shapes',
                          '_feed_input_names')

        def targets(y):
            return self._conform(functional.data_by_output_names(self, y),
                                 '_feed_output_shapes', '_feed_output_names')
        if args:
            args = (targets(args[0]),) + args[1:]
        elif 'y' in kwargs:
            kwargs['y'] = targets(kwargs['y'])
        if not self.built and not self.inputs and isinstance(x, np.ndarray) and x.ndim == 1:
            self._set_inputs(x)  # as Keras' own check would, first: its rank is checked next
        with _rank_one_checked_as_columns(self):
            standardized = super(Model, self)._standardize_user_data(x, *args, **kwargs)
        if self.optimizer is not None and not self._is_compiled and self.built:
            # Keras 2.3.1 compiles a subclassed model once the first targets set its outputs;
            # tf.keras also trains one whose losses all come from `add_loss` (no targets).
            self.compile(optimizer=self.optimizer, loss=self.loss,
                         metrics=self._compile_metrics,
                         weighted_metrics=self._compile_weighted_metrics,
                         loss_weights=self.loss_weights)
        return _rank_one_fed_as_given(standardized, self._feed_inputs,
                                      getattr(self, '_feed_targets', []))

    def _set_metric_attributes(self):
        """Keras 2.3.1's, with each output's loss metric weighting batches by their size, as
        tf.keras' do (`OutputLossMean`)."""
        super(Model, self)._set_metric_attributes()
        if self._output_loss_metrics:
            self._output_loss_metrics = [OutputLossMean(metric.name, output)
                                         for metric, output in zip(self._output_loss_metrics,
                                                                   self.outputs)]

    def _conform(self, x, shapes_attribute, names_attribute):
        """Arrays of a functional model's data with one axis fewer than their `Input` (or
        output), whose last axis has size 1, get that axis (one more, of size 1: it goes),
        as tf.keras conforms data to its inputs (`(n, 28, 28)` images for an
        `Input((28, 28, 1))`) and its losses squeeze the predictions for their targets
        (`(n, 1)` labels of a `(n, steps, 1)` output)."""
        shapes = getattr(self, shapes_attribute, None)
        if not self._is_graph_network or not shapes:
            return x

        def conform(value, shape):
            if not isinstance(value, np.ndarray) or shape is None:
                return value
            if value.ndim == len(shape) - 1 and shape[-1] == 1:
                return value[..., None]
            if value.ndim == len(shape) + 1 and value.shape[-1] == 1:
                return value[..., 0]
            return value
        if isinstance(x, dict):
            positions = {name: i for i, name in enumerate(getattr(self, names_attribute))}
            return {name: conform(value, shapes[positions[name]]) if name in positions
                    else value for name, value in x.items()}
        if isinstance(x, (list, tuple)) and len(x) == len(shapes):
            return [conform(value, shape) for value, shape in zip(x, shapes)]
        return conform(x, shapes[0]) if len(shapes) == 1 else x

    def _set_inputs(self, inputs, outputs=None, training=None):
        """Keras 2.3.1's, and as in tf.keras: a dict of inputs (name -> array or Keras
        tensor) passed whole to a subclassed model's `call` (data are then fed by those
        names, to placeholders of their dtypes), and outputs nested in dicts, tuples or lists
        kept in their structure (`_nested_outputs`), named as tf.keras names them (the keys
        of a dict)."""
        if isinstance(self, keras.Sequential):
            return super(Model, self)._set_inputs(inputs, outputs, training)
        given = inputs
        if isinstance(inputs, dict):
            given = {name: value if K.is_tensor(value)
                     else K.placeholder(shape=input_shapes(value), name=name,
                                        dtype=eager.dtype_name(value))
                     for name, value in inputs.items()}
            inputs = list(given.values())
            if outputs is None:
                outputs = (self.call(given, training=training) if self._expects_training_arg
                           else self.call(given))
        nested = outputs if functional.is_structured(outputs) else None
        super(Model, self)._set_inputs(
            inputs, None if outputs is None else
            structure.flatten(outputs) if nested is not None else outputs, training)
        if nested is None and len(self.outputs) == 1 and functional.is_structured(
                self.outputs[0]):
            nested = self.outputs[0]  # what `call` returned, from Keras' call
        if nested is not None:
            self.outputs = structure.flatten(nested)
            self.output_names = output_names_of(nested)
            functional.set_structures(self, given, nested)
        if isinstance(given, dict):
            self.input_names = list(given)
            self._feed_input_names = [name for name, value in given.items()
                                      if K.is_placeholder(value)]
        return None

    def build(self, input_shape=None):
        """tf.keras' `Model.build`: a subclassed model is called on placeholders of
        `input_shape` (a shape, or a list of shapes), which makes its weights (and the
        weights a `load_weights` before kept for it are loaded then); Keras 2.3.1's only
        marks it built."""
        if self._is_graph_network or isinstance(self, keras.Sequential) or self.inputs:
            return super(Model, self).build(input_shape)
        if input_shape is None:
            raise ValueError('build(input_shape): a subclassed model needs the shape of its '
                             'inputs, got None.')
        self._set_inputs(_placeholders(input_shape))
        deferred = getattr(self, '_torchk_deferred_weights', None)
        if deferred is not None:
            self._torchk_deferred_weights = None
            filepath, kwargs = deferred
            super(Model, self).load_weights(filepath, **kwargs)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, **kwargs):
        """Loads weights saved by `save_weights`: HDF5, or a TF checkpoint (a prefix, or a
        folder: its latest checkpoint), TF's object-based restore (`tf.train.Checkpoint`),
        which also restores the optimizer's state if the checkpoint has it. A subclassed
        model that has no weights yet (never called nor built) gets them when it is built,
        on its first call, as tf.keras restores them.

        # Returns
            For a TF checkpoint, the restore's status (`assert_consumed()`, ...).

        # Raises
            NotImplementedError: for `by_name=True` with a TF checkpoint (as tf.keras).
            AssertionError: if nothing of the TF checkpoint matches the model.
        """
        if _is_tf_checkpoint(filepath):
            if by_name:
                raise NotImplementedError('Weights may only be loaded based on topology into '
                                          'Models when loading TensorFlow-formatted weights '
                                          '(got by_name=True to load_weights).')
            status = tf_checkpoint.restore_object_graph(self, filepath)
            return status.assert_nontrivial_match()
        kwargs.update(by_name=by_name, skip_mismatch=skip_mismatch)
        if not self._is_graph_network and not self.weights:
            self._torchk_deferred_weights = (filepath, kwargs)
            return None
        return super(Model, self).load_weights(filepath, **kwargs)

    def compute_output_shape(self, input_shape):
        """For a subclassed model, the shapes of `call` on placeholders of `input_shape`
        (Keras 2.3.1 asks for them when a model is called on Keras tensors)."""
        if self._is_graph_network:
            return super(Model, self).compute_output_shape(input_shape)
        outputs = self.call(_placeholders(input_shape))
        if isinstance(outputs, (list, tuple)):
            return [K.int_shape(o) for o in outputs]
        return K.int_shape(outputs)

    @property
    def run_eagerly(self):
        return self._eager_steps()

    def _step(self, name):
        """`train_step`, `test_step` or `predict_step` as `fit`, `evaluate` and `predict`
        call it: recorded as a program once per input signature (tf.keras'
        `make_train_function`, a `tf.function`), or the Python itself under
        `compile(run_eagerly=True)`."""
        if getattr(self, '_torchk_run_eagerly', False):
            return getattr(self, name)
        steps = self.__dict__.setdefault('_torchk_steps', {})
        if name not in steps:
            steps[name] = tracing.Function(getattr(self, name), name=name)
        return steps[name]

    @property
    def distribute_strategy(self):
        """The strategy the model was made in (`scope()`), else the one entered now."""
        return (getattr(self, '_distribution_strategy', None)
                or distribute.get_strategy())

    # The steps, as tf.keras 2 defines them.
    def train_step(self, data):
        """One training step on a batch `data`; returns the logs (name -> value)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with tape.GradientTape() as gradient_tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        self.optimizer.minimize(loss, self.trainable_weights, tape=gradient_tape)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        """One evaluation step on a batch `data`; returns the logs."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with torch.no_grad():
            y_pred = self(x, training=False)
            self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """The model's outputs for a batch `data`."""
        x, _, _ = unpack_x_y_sample_weight(data)
        with torch.no_grad():
            return self(x, training=False)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """`compiled_loss` of a batch, with the model's added losses."""
        return self.compiled_loss(y, y_pred, sample_weight,
                                  regularization_losses=self.losses)

    def compute_metrics(self, x, y, y_pred, sample_weight):
        """Updates `compiled_metrics` and returns every metric's result."""
        if y is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        """`{name: result}` of `self.metrics`."""
        return {m.name: m.result() for m in self.metrics}

    def reset_metrics(self):
        if not self._eager_steps():
            return super(Model, self).reset_metrics()
        for metric in self.metrics:
            metric.reset_states()

    # Loops.
    @_in_strategy_scope
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0., validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None,
            validation_steps=None, validation_batch_size=None, validation_freq=1,
            max_queue_size=10, workers=1, use_multiprocessing=False, **kwargs):
        """Trains the model (tf.keras' `fit`: `x` may also be a dataset or a generator)."""
        verbose = 1 if verbose == 'auto' else verbose
        callbacks = _listed(callbacks)
        x, y, sample_weight, validation_data = array_data((x, y, sample_weight,
                                                           validation_data))
        if not self._eager_steps():
            return self._keras_fit(
                x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
                callbacks=callbacks, validation_split=validation_split,
                validation_data=validation_data, shuffle=shuffle, class_weight=class_weight,
                sample_weight=sample_weight, initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch, validation_steps=validation_steps,
                validation_freq=validation_freq, max_queue_size=max_queue_size,
                workers=workers, use_multiprocessing=use_multiprocessing, **kwargs)
        if validation_split and not _is_array_data(x):
            raise ValueError('validation_split needs array data; for a dataset or generator '
                             'give validation_data.')
        if class_weight is not None:
            if not _is_array_data(x) or y is None:
                raise ValueError('class_weight needs array data x and y; for a dataset give '
                                 'sample weights in its batches, (x, y, sample_weight).')
            sample_weight = _class_sample_weights(y, class_weight, sample_weight)
        if validation_split:
            size = len(_first_array(x))
            split = int(size * (1. - validation_split))
            validation_data = (_take(x, slice(split, None)), _take(y, slice(split, None)))
            x, y = _take(x, slice(0, split)), _take(y, slice(0, split))
            sample_weight = _take(sample_weight, slice(0, split))
        strategy = self.distribute_strategy
        train = _Batches(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, strategy)
        val = None
        if validation_data is not None:
            val = (_Batches(*_validation_tuple(validation_data),
                            batch_size=validation_batch_size or batch_size,
                            steps=validation_steps, strategy=strategy))
        return self._eager_fit(train, val, epochs, verbose, callbacks, initial_epoch,
                               validation_freq)

    def _keras_fit(self, x, y, **kwargs):
        arrays = x is None or _is_array_data(x)
        validation_data = kwargs.get('validation_data')
        if validation_data is not None and not (
                isinstance(validation_data, (list, tuple))
                and all(_is_array_data(v) for v in validation_data if v is not None)):
            val = _Batches(validation_data, steps=kwargs.pop('validation_steps'))
            kwargs['validation_steps'] = _count_steps(val)
            kwargs['validation_data'] = _numpy_batches(val)
        if arrays and not (kwargs.get('steps_per_epoch') and kwargs.get('batch_size')):
            # Keras 2.3.1 takes torch tensors for symbolic data: eager ones are arrays.
            x, y, kwargs['sample_weight'] = _numpy((x, y, kwargs.get('sample_weight')))
            if kwargs.get('validation_data') is not None:
                kwargs['validation_data'] = _numpy(kwargs['validation_data'])
            with symbolic_losses():
                return super(Model, self).fit(x, y, **kwargs)
        if arrays:
            # tf.keras takes `steps_per_epoch` batches of `batch_size` from arrays, where
            # Keras 2.3.1 refuses the pair.
            if kwargs.get('validation_split'):
                raise ValueError('fit: validation_split with both steps_per_epoch and '
                                 'batch_size is not supported; give validation_data.')
            batches = _Batches(x, y, kwargs.get('sample_weight'), kwargs['batch_size'],
                               kwargs.get('shuffle', True), kwargs['steps_per_epoch'])
        else:
            batches = _Batches(x, steps=kwargs['steps_per_epoch'])
        steps = _count_steps(batches)
        generator_kwargs = {k: kwargs[k] for k in (
            'epochs', 'verbose', 'callbacks', 'validation_data', 'validation_steps',
            'validation_freq', 'class_weight', 'initial_epoch')}
        generator = _numpy_batches(batches)
        with symbolic_losses():
            if not self._is_graph_network and not self.inputs:
                # Keras 2.3.1's fit_generator makes the training function before it reads
                # data: the first batch sets a subclassed model's inputs (and compiles it).
                first = next(generator)
                self._standardize_user_data(*unpack_x_y_sample_weight(first)[:2])
                generator = itertools.chain([first], generator)
            # workers=0: the batches are made in this thread (Keras' default queues them
            # from another, whose switches cost more than making an in-memory batch).
            return self.fit_generator(generator, steps_per_epoch=steps,
                                      shuffle=False, workers=0, **generator_kwargs)

    def _eager_fit(self, train, val, epochs, verbose, callbacks, initial_epoch,
                   validation_freq):
        strategy = self.distribute_strategy
        if not strategy.extended.should_checkpoint:
            verbose, callbacks = 0, [c for c in callbacks or []
                                     if not isinstance(c, _CHIEF_CALLBACKS)]
        self.history = keras_callbacks.History()
        callback_list = keras_callbacks.CallbackList(
            ([_Progress(verbose)] if verbose else []) + list(callbacks or [])
            + [self.history])
        callback_list.set_model(self)
        callback_list.set_params({'epochs': epochs, 'steps': train.steps, 'verbose': verbose,
                                  'do_validation': val is not None, 'batch_size': None,
                                  'samples': None, 'metrics': []})
        self.stop_training = False
        train_step = self._step('train_step')
        callback_list.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            logs = {}
            for step, batch in enumerate(train.epoch()):
                callback_list.on_batch_begin(step, {'batch': step, 'size': 1})
                logs = {k: _value(v) for k, v in strategy.run(
                    train_step, (batch if len(batch) > 1 else batch[0],)).items()}
                callback_list.on_batch_end(step, dict(logs, batch=step, size=1))
                if self.stop_training:
                    break
            epoch_logs = _mean_over_replicas(strategy, logs)
            if val is not None and _runs_validation(validation_freq, epoch):
                val_logs = self._eager_evaluate(val)
                epoch_logs.update(('val_' + k, v) for k, v in val_logs.items())
            callback_list.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        callback_list.on_train_end()
        return self.history

    def _eager_evaluate(self, batches):
        self.reset_metrics()
        strategy = self.distribute_strategy
        logs = {}
        test_step = self._step('test_step')
        for batch in batches.epoch():
            logs = strategy.run(test_step, (batch if len(batch) > 1 else batch[0],))
        return _mean_over_replicas(strategy, {k: _value(v) for k, v in logs.items()})

    @_in_strategy_scope
    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        """Loss and metrics on data (tf.keras' `evaluate`: `x` may be a dataset;
        `return_dict=True` returns `{name: value}`)."""
        callbacks = _listed(callbacks)
        x, y, sample_weight = array_data((x, y, sample_weight))
        if self._eager_steps():
            logs = self._eager_evaluate(_Batches(x, y, sample_weight, batch_size, False, steps,
                                                 self.distribute_strategy))
            if return_dict:
                return logs
            values = list(logs.values())
            return values[0] if len(values) == 1 else values
        with symbolic_losses():
            if x is None or _is_array_data(x):
                x, y, sample_weight = _numpy((x, y, sample_weight))
                result = super(Model, self).evaluate(
                    x, y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight,
                    steps=steps, callbacks=callbacks, **kwargs)
            else:
                result = self._evaluate_batches(_Batches(x, steps=steps))
        if return_dict:
            values = result if isinstance(result, list) else [result]
            return dict(zip(self.metrics_names, [float(v) for v in values]))
        return result

    def _evaluate_batches(self, batches):
        """Keras' `evaluate` over batches: the loss averaged over samples, the (stateful)
        metrics as they stand after the last batch. (Keras 2.3.1's `evaluate_generator`
        returns the last batch's loss.)"""
        self.reset_metrics()
        total, count, outputs = 0., 0, None
        for batch in _numpy_batches_once(batches):
            x, y, sample_weight = unpack_x_y_sample_weight(batch)
            outputs = super(Model, self).test_on_batch(
                x, y, sample_weight=sample_weight, reset_metrics=False)
            outputs = outputs if isinstance(outputs, list) else [outputs]
            size = len(_first_array(x))
            total, count = total + float(outputs[0]) * size, count + size
        if outputs is None:
            raise ValueError('evaluate got no batch.')
        result = [total / count] + [float(v) for v in outputs[1:]]
        return result if len(result) > 1 else result[0]

    @_in_strategy_scope
    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None, **kwargs):
        """The model's outputs on data, as numpy arrays (`x` may be a dataset), nested as
        the model's outputs are."""
        callbacks = _listed(callbacks)
        x = array_data(x)
        if self._eager_steps() or not self._is_graph_network and not self.built:
            predict_step = self._step('predict_step')
            outputs = [predict_step(batch if len(batch) > 1 else batch[0])
                       for batch in _Batches(x, batch_size=batch_size, steps=steps).epoch()]
            return _concatenate(outputs)
        with symbolic_losses():
            if _is_array_data(x):
                outputs = super(Model, self).predict(_numpy(x), batch_size=batch_size,
                                                     verbose=verbose, steps=steps,
                                                     callbacks=callbacks, **kwargs)
            else:
                batches = _Batches(x, steps=steps)
                outputs = self.predict_generator(_numpy_batches(batches),
                                                 steps=_count_steps(batches),
                                                 callbacks=callbacks, verbose=verbose,
                                                 workers=0)
        return functional.nested_like_outputs(self, outputs)

    @_in_strategy_scope
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        """One training step (tf.keras' `train_on_batch`)."""
        x, y, sample_weight = array_data((x, y, sample_weight))
        if not self._eager_steps():
            with symbolic_losses():
                return super(Model, self).train_on_batch(
                    x, y, sample_weight=sample_weight, class_weight=class_weight,
                    reset_metrics=reset_metrics)
        if reset_metrics:
            self.reset_metrics()
        strategy = self.distribute_strategy
        batch = strategy.split_batch(pack_x_y_sample_weight(x, y, sample_weight))
        logs = {k: _value(v) for k, v in strategy.run(
            self._step('train_step'), (_to_tensor(batch),)).items()}
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        """Saves the weights as tf.keras 2 does: HDF5 (Keras 2.3.1's `save_weights`) for a
        path ending in `.h5`, `.hdf5` or `.keras` or `save_format='h5'`, else a TF
        checkpoint (`<filepath>.index` and its data, named the latest in the folder's
        `checkpoint` file) of the model's object graph, its optimizer included, which TF
        reads too. Makes the folder of `filepath` if it does not exist yet. `options` (TF's
        checkpoint options) is unused."""
        if save_format not in (None, 'h5', 'tf'):
            raise ValueError("save_format must be 'h5', 'tf' or None; got %r." % (save_format,))
        make_parent_folder(filepath)
        if save_format == 'tf' or (save_format is None and not str(filepath).lower().endswith(
                _HDF5_SUFFIXES)):
            prefix = os.fspath(filepath)
            if (not overwrite and os.path.isfile(prefix + '.index')
                    and not ask_to_proceed_with_overwrite(prefix)):
                return None
            tf_checkpoint.record_latest(tf_checkpoint.write_object_graph(self, prefix))
            return None
        return super(Model, self).save_weights(filepath, overwrite=overwrite)

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None,
             **kwargs):
        """Saves the model as HDF5 (`.h5`, or a path without extension: see
        `torchk.keras.models.save_model`)."""
        save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=include_optimizer, save_format=save_format)


_HDF5_SUFFIXES = ('.h5', '.hdf5', '.keras')


def _is_tf_checkpoint(filepath):
    """Whether `load_weights` reads `filepath` as a TF checkpoint: not an HDF5 file, and a
    checkpoint prefix or a folder of checkpoints."""
    if not isinstance(filepath, (str, os.PathLike)):
        return False
    path = os.fspath(filepath)
    if os.path.isfile(path):
        return False
    return os.path.isfile(path + '.index') or os.path.isdir(path) or not path.lower().endswith(
        _HDF5_SUFFIXES)


def _listed(items):
    """`compile`'s metrics or `fit`'s callbacks as a list (or dict) where one is given alone,
    as tf.keras takes it (`metrics=tf.metrics.BinaryAccuracy()`, TF's text classification
    tutorial; `callbacks=EarlyStopping(...)`, its audio tutorial)."""
    if items is None or isinstance(items, (list, tuple, dict)):
        return items
    return [items]


_CONFIG_TYPES = (str, int, float, bool, type(None))


def _init_config(cls, args, kwargs):
    """The arguments of `cls(*args, **kwargs)` by name, if all are of basic types (nested in
    lists, tuples and dicts), else None: tf.keras' generated config of a subclassed model."""
    names = inspect.getfullargspec(cls.__init__).args[1:]
    if len(args) > len(names):
        return None
    config = dict(zip(names, args), **kwargs)
    if not all(isinstance(leaf, _CONFIG_TYPES) for leaf in structure.flatten(config)):
        return None
    return config


def _unshared_metrics(metrics):
    """`compile`'s metrics, each `Metric` already compiled into a model (it holds that model's
    result) replaced by a new one of its config: tf.keras lets one list of metric objects
    serve several models (TF's imbalanced data tutorial), where Keras 2.3.1's metric keeps the
    updates of every model it was compiled into, and a model's step would need the others'
    placeholders. Each model then has its own; the objects given are unchanged."""
    def unshared(metric):
        if isinstance(metric, keras.metrics.Metric) and hasattr(metric, '_call_result'):
            return type(metric).from_config(metric.get_config())
        return metric
    return structure.map_structure(unshared, metrics) if metrics is not None else None


@contextlib.contextmanager
def _rank_one_checked_as_columns(model):
    """Within, Keras 2.3.1's data checks take a functional model's inputs and outputs of rank 1
    (a `Sequential` built from 1-D data) as the `(n, 1)` columns those checks make of 1-D
    arrays; `_rank_one_fed_as_given` gives the arrays their shape back."""
    saved = {}
    for attribute in ('_feed_input_shapes', '_feed_output_shapes'):
        shapes = getattr(model, attribute, None)
        if shapes:
            saved[attribute] = shapes
            setattr(model, attribute, [shape + (1,) if shape is not None and len(shape) == 1
                                       else shape for shape in shapes])
    try:
        yield
    finally:
        for attribute, shapes in saved.items():
            setattr(model, attribute, shapes)


def _rank_one_fed_as_given(standardized, inputs, targets):
    """tf.keras feeds a 1-D array as it is, where Keras 2.3.1's data checks make it a column
    `(n, 1)`: each array so expanded for a placeholder of rank 1 (a subclassed model's input
    made from 1-D data, its targets) gets its shape back.

    # Arguments
        standardized: `(x, y, sample_weights)`, as Keras' `_standardize_user_data` returns.
        inputs, targets: the placeholders fed `x` and `y`, in order.
    """
    x, y, sample_weights = standardized

    def as_given(arrays, placeholders):
        if not arrays:
            return arrays
        ranks = [K.ndim(p) for p in placeholders] + [None] * len(arrays)
        return [a[:, 0] if rank == 1 and isinstance(a, np.ndarray) and a.shape[1:] == (1,)
                else a for a, rank in zip(arrays, ranks)]
    return as_given(x, inputs), as_given(y, targets), sample_weights


def _losses(layer, keras_losses):
    """tf.keras' `Layer.losses`: after an eager call, the losses of that call (tensors);
    Keras' own (`keras_losses()`, symbols) in Keras' graph building and before any eager
    call."""
    if in_symbolic_block() or ('_torchk_eager_programs' not in layer.__dict__
                                and tracing.current() is None):
        return keras_losses()
    return eager.layer_losses(layer)


def eager_layer_losses(keras_losses):
    """Override of Keras 2.3.1's `Layer.losses` (the property's function): tf.keras'
    (`_losses`), as `Model` has it."""
    def losses(self):
        return _losses(self, lambda: keras_losses(self))
    return losses


def _placeholders(shape):
    if isinstance(shape, list):
        return [_placeholders(s) for s in shape]
    if isinstance(shape, dict):
        return {k: _placeholders(s) for k, s in shape.items()}
    return K.placeholder(shape=tuple(shape))


def _runs_validation(freq, epoch):
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return epoch + 1 in freq


def _concatenate(outputs):
    if not outputs:
        raise ValueError('predict got no batch.')
    first = outputs[0]
    if isinstance(first, (list, tuple)):
        return type(first)(_concatenate([o[i] for o in outputs]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _concatenate([o[k] for o in outputs]) for k in first}
    return np.concatenate([o.detach().cpu().numpy() if isinstance(o, torch.Tensor)
                           else np.asarray(o) for o in outputs])
