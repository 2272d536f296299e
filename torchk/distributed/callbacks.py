"""Keras callbacks for data-parallel training, as in `horovod.keras.callbacks`."""
import math

import numpy as np
from keras import backend as K
from keras.callbacks import Callback

from . import runtime


class BroadcastGlobalVariablesCallback(Callback):
    """Makes the model's weights and the optimizer's state those of `root_rank` before the
    first training step.

    Broadcasts at the start of training (Keras builds the optimizer's variables before
    that), so a model restored with `load_model` on one rank, or initialized differently
    on each, starts the same everywhere.

    # Arguments
        root_rank: the process whose values win, usually 0.
    """

    def __init__(self, root_rank):
        super().__init__()
        self.root_rank = root_rank
        self.broadcast_done = False

    def on_train_begin(self, logs=None):
        if self.broadcast_done:
            return
        optimizer = getattr(self.model, 'optimizer', None)
        runtime.broadcast_variables(
            self.model.weights + (optimizer.weights if optimizer is not None else []),
            self.root_rank)
        self.broadcast_done = True


class MetricAverageCallback(Callback):
    """Averages the epoch's logs (metrics, validation metrics) over all processes, in one
    collective, so callbacks after it (`EarlyStopping`, `ReduceLROnPlateau`, checkpoints)
    decide the same on every rank. Put it before them in the callback list."""

    def on_epoch_end(self, epoch, logs=None):
        if logs is None or runtime.size() == 1:
            return
        keys = sorted(k for k, v in logs.items()
                      if np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.number))
        averaged = runtime.allreduce(np.array([logs[k] for k in keys], dtype=np.float64))
        for k, value in zip(keys, averaged):
            logs[k] = float(value)


class LearningRateScheduleCallback(Callback):
    """Sets the learning rate to `initial_lr * multiplier(epoch)` from `start_epoch` to
    `end_epoch` (excluded), as `horovod.keras.callbacks.LearningRateScheduleCallback`.

    # Arguments
        initial_lr: the learning rate the multiplier scales.
        multiplier: a constant, or a function of the epoch (fractional, advancing each
            batch, unless `staircase`).
        start_epoch, end_epoch: the epochs the schedule applies to (`end_epoch=None`: to
            the end).
        staircase: change the rate once per epoch only.
        momentum_correction: while the rate changes, scale the optimizer's `momentum` by
            new/old rate for that batch (Goyal et al., 2017).
        steps_per_epoch: batches per epoch (default: from the training parameters).
    """

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        self.initial_lr = initial_lr
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier)
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = 0
        self._restore_momentum = None

    def _steps(self):
        if self.steps_per_epoch:
            return self.steps_per_epoch
        if self.params.get('steps'):
            return self.params['steps']
        if self.params.get('samples') and self.params.get('batch_size'):
            return math.ceil(self.params['samples'] / self.params['batch_size'])
        raise ValueError('%s needs steps_per_epoch: the training parameters give neither '
                         'steps nor samples and batch_size.' % type(self).__name__)

    def _adjust(self, epoch):
        old_lr = K.get_value(self.model.optimizer.lr)
        new_lr = self.initial_lr * self.multiplier(epoch)
        K.set_value(self.model.optimizer.lr, new_lr)
        if self.momentum_correction and hasattr(self.model.optimizer, 'momentum') and old_lr:
            self._restore_momentum = K.get_value(self.model.optimizer.momentum)
            K.set_value(self.model.optimizer.momentum,
                        self._restore_momentum * new_lr / old_lr)

    def _in_range(self, epoch):
        return epoch >= self.start_epoch and (self.end_epoch is None or epoch < self.end_epoch)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch
        if self.staircase and self._in_range(epoch):
            self._adjust(epoch)

    def on_batch_begin(self, batch, logs=None):
        if self.staircase or not self._in_range(self.current_epoch):
            return
        self._adjust(self.current_epoch + batch / self._steps())

    def on_batch_end(self, batch, logs=None):
        if self._restore_momentum is not None:
            K.set_value(self.model.optimizer.momentum, self._restore_momentum)
            self._restore_momentum = None

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs['lr'] = float(K.get_value(self.model.optimizer.lr))


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Raises the learning rate from `initial_lr / size()` to `initial_lr` over the first
    `warmup_epochs`, batch by batch (Goyal et al., 2017), as Horovod's callback: at
    fractional epoch `e` (counting the current batch as done) the rate is
    `initial_lr / size() * (e * (size() - 1) / warmup_epochs + 1)`.

    # Arguments
        initial_lr: the (already scaled) rate reached at the end of the warm-up.
        warmup_epochs: length of the warm-up.
        momentum_correction, steps_per_epoch: as for `LearningRateScheduleCallback`.
        verbose: print the rate at the end of the warm-up.
    """

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        super().__init__(initial_lr, self._warmup, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.warmup_epochs = warmup_epochs
        self.verbose = verbose

    def _warmup(self, epoch):
        world = runtime.size()
        epoch += 1. / self._steps()
        return 1. / world * (epoch * (world - 1) / self.warmup_epochs + 1)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.warmup_epochs - 1 and self.verbose > 0 and runtime.rank() == 0:
            print('\nEpoch %d: finished gradual learning rate warmup to %g.'
                  % (epoch + 1, K.get_value(self.model.optimizer.lr)))
