"""`tf.keras.callbacks`: Keras 2.3.1's (`EarlyStopping(restore_best_weights=True)`,
`ReduceLROnPlateau`, `CSVLogger`, `LearningRateScheduler`, ...), `ModelCheckpoint` with
tf.keras' `save_freq` and `initial_value_threshold`, and torchk's `TensorBoard` (torch's
`SummaryWriter`)."""
from keras import callbacks as _keras_callbacks

from ..callbacks import TensorBoard  # noqa: F401
from ._facade import reexport

reexport(globals(), _keras_callbacks)



class ModelCheckpoint(_keras_callbacks.ModelCheckpoint):
    """Keras 2.3.1's `ModelCheckpoint` with tf.keras' arguments.

    # Arguments
        save_freq: `'epoch'` (save at the end of every `period` epochs), or an int: save
            after every `save_freq` batches.
        options: TensorFlow's saving options: accepted, unused.
        initial_value_threshold: with `save_best_only`, the value of `monitor` the first
            save must improve on.
        The others as Keras 2.3.1's (`filepath`, `monitor`, `verbose`, `save_best_only`,
        `save_weights_only`, `mode`, `period`).

    # Raises
        ValueError: for a `save_freq` that is neither `'epoch'` nor a positive int.
    """

    def __init__(self, filepath, monitor='val_loss', verbose=0, save_best_only=False,
                 save_weights_only=False, mode='auto', save_freq='epoch', options=None,
                 initial_value_threshold=None, period=1):
        if save_freq != 'epoch' and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError("ModelCheckpoint: save_freq must be 'epoch' or a positive "
                             "number of batches; got %r." % (save_freq,))
        super(ModelCheckpoint, self).__init__(filepath, monitor, verbose, save_best_only,
                                              save_weights_only, mode, period)
        self.save_freq = save_freq
        if initial_value_threshold is not None:
            self.best = initial_value_threshold
        self._batches_seen = 0
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_batch_end(self, batch, logs=None):
        if self.save_freq == 'epoch':
            return
        self._batches_seen += 1
        if self._batches_seen % self.save_freq == 0:
            self.epochs_since_last_save = self.period - 1  # Keras' epoch check then saves
            super(ModelCheckpoint, self).on_epoch_end(self._epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == 'epoch':
            super(ModelCheckpoint, self).on_epoch_end(epoch, logs)
