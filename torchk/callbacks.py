"""Keras callbacks that need torch: `TensorBoard`, written with `torch.utils.tensorboard`.

Keras 2.3.1's own `TensorBoard` imports TensorFlow and, on any other backend, writes scalars
only (keras/callbacks/tensorboard_v1.py:95-118). Under torchk, `keras.callbacks.TensorBoard`
is the class below (an override, `torchk.overrides`), so unmodified scripts get every feature on torch.
Writing needs the `tensorboard` package: `pip install 'torchk[tensorboard]'`.

Importing this module imports Keras, which must be configured to use torchk.
"""
import json
import os
import warnings

import numpy as np
import torch

from keras import backend as K
from keras.callbacks import Callback
from keras.engine.training_utils import standardize_input_data

__all__ = ['TensorBoard']

_INSTALL_HINT = ("torchk's TensorBoard callback writes event files with "
                 "torch.utils.tensorboard, which needs the `tensorboard` package: "
                 "pip install 'torchk[tensorboard]' (or: pip install tensorboard)")


def _summary_writer_class():
    """`torch.utils.tensorboard.SummaryWriter`, or an ImportError that says what to install."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        raise ImportError('%s. (%s)' % (_INSTALL_HINT, e)) from e
    return SummaryWriter


class TensorBoard(Callback):
    """TensorBoard basic visualizations, written by torch's `SummaryWriter`.

    Keras 2.3.1's signature and behaviour (keras/callbacks/tensorboard_v1.py), on torch.
    Launch TensorBoard with `tensorboard --logdir=/full_path_to_your_logs`.

    What is written, and at which step:
    - Scalars: every entry of the logs Keras passes (`loss`, metrics, `val_*`; not `batch`
      and `size`), tagged with the log name, plus the optimizer's learning rate as `lr`
      when no other callback put `lr` in the logs. With `update_freq='epoch'` the step is
      the epoch (from 0); otherwise it is the number of training samples seen so far, for
      the batch logs and the epoch logs alike, as in Keras.
    - Every `histogram_freq` epochs (epochs 0, `histogram_freq`, ...), at the epoch as step:
      a histogram of every weight (tag: its name with ':' replaced by '_', e.g.
      `dense_1/kernel_0`), of every layer's output on the validation data
      (`<layer>_out`, or `<layer>_out_<i>` for several outputs) and, with `write_grads`,
      of the gradient of the total loss with respect to every trainable weight on the
      validation data (`<weight>_grad`). The validation data is run in batches of
      `batch_size`; where Keras wrote one summary per batch at the same step, torchk writes
      one histogram holding the values of every batch.
    - With `write_images`, at the same epochs: an image of every weight of rank 1, 2 or 3
      after squeezing, laid out and scaled as Keras does (tag: the weight's name); the
      kernels of a convolution are one grid image, where TensorFlow wrote up to three.
    - Every `embeddings_freq` epochs: the outputs of the embedding layers on
      `embeddings_data`, one row per sample, for TensorBoard's projector (`add_embedding`;
      tag: the layer name, step: the epoch), with the metadata file's rows as labels.
    - With `write_graph`: the model's layer graph (the conceptual graph TensorBoard draws
      from the model's JSON config), once per `set_model`. A subclassed `Model` has no
      config: its graph is not written and a warning says so. torchk does not write an
      op-level graph.
    - With `profile_batch=n > 0`: a `torch.profiler` trace of the n-th training batch
      (counted from 1 over the whole training), as `*.pt.trace.json` in `log_dir`
      (read by the `torch-tb-profiler` TensorBoard plugin, or chrome://tracing).

    # Arguments
        log_dir: the path of the directory where to save the log
            files to be parsed by TensorBoard.
        histogram_freq: frequency (in epochs) at which to compute activation
            and weight histograms for the layers of the model. If set to 0,
            histograms won't be computed. Validation data (or split) must be
            specified for histogram visualizations.
        batch_size: size of batch of inputs to feed to the network
            for histograms and embeddings computation.
        write_graph: whether to visualize the graph in TensorBoard.
        write_grads: whether to visualize gradient histograms in TensorBoard.
            `histogram_freq` must be greater than 0.
        write_images: whether to write model weights to visualize as
            image in TensorBoard (at the `histogram_freq` epochs, as in Keras).
        embeddings_freq: frequency (in epochs) at which selected embedding
            layers will be saved. If set to 0, embeddings won't be computed.
            Data to be visualized in TensorBoard's Embedding tab must be passed
            as `embeddings_data`.
        embeddings_layer_names: a list of names of layers to keep eye on. If
            None or empty list all the embedding layer will be watched.
        embeddings_metadata: a dictionary which maps layer name to a file name
            in which metadata for this embedding layer is saved (a relative
            name is relative to `log_dir`, as for TensorFlow's projector).
            In case if the same metadata file is used for all embedding layers,
            string can be passed.
        embeddings_data: data to be embedded at layers specified in
            `embeddings_layer_names`. Numpy array (if the model has a single
            input) or list of Numpy arrays (if the model has multiple inputs).
        update_freq: `'batch'` or `'epoch'` or integer. When using `'batch'`, writes
            the losses and metrics to TensorBoard after each batch. The same
            applies for `'epoch'`. If using an integer, let's say `10000`,
            the callback will write the metrics and losses to TensorBoard every
            10000 samples.
        profile_batch: the training batch to profile with `torch.profiler`
            (1 is the first batch); 0 profiles nothing. (tf.keras' argument;
            Keras 2.3.1 on TF 1 has none, hence the default 0.)

    # Raises
        ImportError: if the `tensorboard` package is not installed.
        ValueError: for an `update_freq` or `profile_batch` Keras would not accept; at the
            end of an epoch, as in Keras, if histograms are asked for without validation
            data (or with a validation generator), or embeddings without `embeddings_data`.
    """

    def __init__(self, log_dir='./logs',
                 histogram_freq=0,
                 batch_size=32,
                 write_graph=True,
                 write_grads=False,
                 write_images=False,
                 embeddings_freq=0,
                 embeddings_layer_names=None,
                 embeddings_metadata=None,
                 embeddings_data=None,
                 update_freq='epoch',
                 profile_batch=0):
        super(TensorBoard, self).__init__()
        self._writer_class = _summary_writer_class()
        if update_freq not in ('batch', 'epoch') and not (
                isinstance(update_freq, int) and update_freq > 0):
            raise ValueError("TensorBoard update_freq must be 'batch', 'epoch' or a positive "
                             "number of samples, got %r" % (update_freq,))
        if not isinstance(profile_batch, int) or profile_batch < 0:
            raise ValueError('TensorBoard profile_batch must be a batch number (from 1) or 0 '
                             'for no profiling, got %r' % (profile_batch,))
        self.log_dir = log_dir
        self.histogram_freq = histogram_freq
        self.batch_size = batch_size
        self.write_graph = write_graph
        self.write_grads = write_grads
        self.write_images = write_images
        self.embeddings_freq = embeddings_freq
        self.embeddings_layer_names = embeddings_layer_names
        self.embeddings_metadata = embeddings_metadata or {}
        self.embeddings_data = embeddings_data
        # 'batch' is the same as writing as often as possible.
        self.update_freq = 1 if update_freq == 'batch' else update_freq
        self.profile_batch = profile_batch
        self.samples_seen = 0
        self.samples_seen_at_last_write = 0
        self.writer = None
        self._batches_seen = 0
        self._profiler = None

    def set_model(self, model):
        self.model = model
        if self.writer is not None:
            self.writer.close()
        self.writer = self._writer_class(self.log_dir)
        self._histogram_function = None
        self._embeddings_function = None
        if self.write_graph:
            self._write_graph()

    # ---------------------------------------------------------------------------------
    # Training hooks: scalars and the profiler.

    def on_batch_begin(self, batch, logs=None):
        self._batches_seen += 1
        if self._batches_seen == self.profile_batch:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self._profiler = torch.profiler.profile(
                activities=activities,
                on_trace_ready=torch.profiler.tensorboard_trace_handler(self.log_dir))
            self._profiler.start()

    def on_batch_end(self, batch, logs=None):
        self._stop_profiler()
        if self.update_freq != 'epoch':
            self.samples_seen += logs['size']
            samples_seen_since = self.samples_seen - self.samples_seen_at_last_write
            if samples_seen_since >= self.update_freq:
                self._write_logs(logs, self.samples_seen)
                self.samples_seen_at_last_write = self.samples_seen

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        if not self.validation_data and self.histogram_freq:
            raise ValueError('If printing histograms, validation_data must be '
                             'provided, and cannot be a generator.')
        if self.embeddings_data is None and self.embeddings_freq:
            raise ValueError('To visualize embeddings, embeddings_data must '
                             'be provided.')
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self._write_embeddings(epoch)
        if 'lr' not in logs and hasattr(self.model.optimizer, 'lr'):
            logs['lr'] = K.get_value(self.model.optimizer.lr)
        index = epoch if self.update_freq == 'epoch' else self.samples_seen
        self._write_logs(logs, index)

    def on_train_end(self, logs=None):
        self._stop_profiler()
        self.writer.close()

    def _write_logs(self, logs, index):
        for name, value in logs.items():
            if name in ('batch', 'size'):
                continue
            if isinstance(value, np.ndarray):
                value = value.item()
            self.writer.add_scalar(name, value, index)
        self.writer.flush()

    def _stop_profiler(self):
        if self._profiler is not None:
            profiler, self._profiler = self._profiler, None
            profiler.stop()

    # ---------------------------------------------------------------------------------
    # Histograms and images.

    def _write_histograms(self, epoch):
        for layer in self.model.layers:
            for weight in layer.weights:
                name = weight.name.replace(':', '_')
                value = K.get_value(weight)
                self.writer.add_histogram(name, value, epoch, bins='tensorflow')
                image = _weight_image(value) if self.write_images else None
                if image is not None:
                    self.writer.add_images(name, image, epoch, dataformats='NHWC')
        tags, function = self._histogram_tags_and_function()
        if tags:
            values = _run_in_batches(function, self.validation_data, self.batch_size,
                                     self.model.uses_learning_phase)
            for tag, value in zip(tags, values):
                self.writer.add_histogram(tag, value, epoch, bins='tensorflow')
        self.writer.flush()

    def _histogram_tags_and_function(self):
        """The tags of the layer output (and gradient) histograms, and a function that
        computes them from the validation data's inputs, targets and sample weights."""
        if self._histogram_function is None:
            model = self.model
            tags, outputs = [], []
            for layer in model.layers:
                if not hasattr(layer, 'output'):
                    continue
                if isinstance(layer.output, list):
                    tags += ['%s_out_%d' % (layer.name, i) for i in range(len(layer.output))]
                    outputs += layer.output
                else:
                    tags.append('%s_out' % layer.name)
                    outputs.append(layer.output)
            if self.write_grads:
                weights = [w for layer in model.layers for w in layer.trainable_weights]
                for weight, grad in zip(weights, K.gradients(model.total_loss, weights)):
                    if grad is not None:  # a weight the loss does not depend on
                        tags.append('%s_grad' % weight.name.replace(':', '_'))
                        outputs.append(grad)
            inputs = model._feed_inputs + model._feed_targets + model._feed_sample_weights
            if model.uses_learning_phase:
                inputs.append(K.learning_phase())
            self._histogram_function = (tags, K.function(inputs, outputs))
        return self._histogram_function

    # ---------------------------------------------------------------------------------
    # Embeddings and graph.

    def _write_embeddings(self, epoch):
        model = self.model
        if self._embeddings_function is None:
            names = self.embeddings_layer_names or [
                layer.name for layer in model.layers if type(layer).__name__ == 'Embedding']
            layers = [layer for layer in model.layers if layer.name in names]
            inputs = list(model.inputs)
            if model.uses_learning_phase:
                inputs.append(K.learning_phase())
            self._embeddings_function = (
                [layer.name for layer in layers],
                K.function(inputs, [layer.output for layer in layers]))
        names, function = self._embeddings_function
        data = standardize_input_data(self.embeddings_data, model.input_names)
        if model.uses_learning_phase:
            data = data + [0]
        outputs = _run_in_batches(function, data, self.batch_size, model.uses_learning_phase)
        metadata = self.embeddings_metadata
        if isinstance(metadata, str):
            metadata = {name: metadata for name in names}
        for name, output in zip(names, outputs):
            labels, header = None, None
            if name in metadata:
                labels, header = _read_metadata(os.path.join(self.log_dir, metadata[name]))
            self.writer.add_embedding(output.reshape(len(output), -1), metadata=labels,
                                      metadata_header=header, global_step=epoch, tag=name)
        self.writer.flush()

    def _write_graph(self):
        from tensorboard.compat.proto import event_pb2
        from tensorboard.plugins.graph import keras_util
        try:
            config = json.loads(self.model.to_json())
        except NotImplementedError as e:  # a subclassed Model has no get_config
            warnings.warn('TensorBoard: the graph of model %r is not written: it has no '
                          'config (%s).' % (self.model.name, e))
            return
        graph = keras_util.keras_model_to_graph_def(config)
        # SummaryWriter's own add_graph traces an nn.Module; a GraphDef goes to its file writer.
        self.writer._get_file_writer().add_event(
            event_pb2.Event(graph_def=graph.SerializeToString()))
        self.writer.flush()


def _run_in_batches(function, data, batch_size, with_learning_phase):
    """Runs `function` on `data` (arrays, then the learning phase value when
    `with_learning_phase`) in batches of `batch_size`; returns each output of every batch
    concatenated along the first axis (a scalar output gives one value per batch)."""
    arrays = data[:-1] if with_learning_phase else data
    extra = data[-1:] if with_learning_phase else []
    size = arrays[0].shape[0]
    results = []
    for start in range(0, size, batch_size):
        results.append(function([x[start:start + batch_size] for x in arrays] + extra))
    return [np.concatenate([np.reshape(batch[i], (-1,) + np.shape(batch[i])[1:])
                            if np.ndim(batch[i]) else np.reshape(batch[i], (1,))
                            for batch in results])
            for i in range(len(results[0]))]


def _weight_image(value):
    """A weight as Keras 2.3.1 draws it (tensorboard_v1.py:149-182): a uint8 NHWC array
    scaled as TensorFlow's image summary scales floats, or None for ranks Keras skips."""
    w = np.squeeze(value)
    if w.ndim == 2:  # a dense kernel, wider than high
        if w.shape[0] > w.shape[1]:
            w = w.T
        w = w.reshape((1,) + w.shape + (1,))
    elif w.ndim == 3:  # a convolution kernel: one image per output channel
        if K.image_data_format() == 'channels_last':
            w = np.transpose(w, (2, 0, 1))
        w = w.reshape(w.shape + (1,))
    elif w.ndim == 1:  # a bias
        w = w.reshape((1, w.shape[0], 1, 1))
    else:
        return None
    # Values all non-negative are scaled so that the largest is 255; otherwise 0 goes to
    # 128 and the largest magnitude to 128 +- 127. In float32 as TF's kernel computes it
    # (`image * scale + offset`), so that values at the ends truncate as they do under TF.
    w = w.astype('float32')
    largest = np.abs(w).max()
    if largest == 0:
        return np.zeros(w.shape, 'uint8')
    if w.min() >= 0:
        return (w * (np.float32(255.) / largest)).astype('uint8')
    return (w * (np.float32(127.) / largest) + np.float32(128.)).astype('uint8')


def _read_metadata(path):
    """The rows of a projector metadata file (tab-separated; a file with several columns
    starts with a header row), as `add_embedding` takes them: (labels, header)."""
    with open(path) as f:
        rows = [line.rstrip('\n').split('\t') for line in f if line.strip()]
    if rows and len(rows[0]) > 1:
        return rows[1:], rows[0]
    return [row[0] for row in rows], None
