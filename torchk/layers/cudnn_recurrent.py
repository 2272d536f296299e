"""`CuDNNLSTM` and `CuDNNGRU` on any device, with the weights, configuration and maths of
Keras' and tf.keras' CuDNN layers.

The layers keep cuDNN's weight layout (Keras 2.3.1 keras/layers/cudnn_recurrent.py): `kernel`
`(input_dim, gates * units)` and `recurrent_kernel` `(units, gates * units)` whose gate blocks
cuDNN reads as row-major `(units, input_dim)` and `(units, units)` matrices, and `bias` of
`2 * gates * units` (an input and a recurrent bias vector), so that
`keras.engine.saving._convert_rnn_weights` converts them to and from `LSTM` and
`GRU(reset_after=True)` as it always did. The computation is a Keras `LSTMCell` (tanh, sigmoid,
the two biases summed) or `GRUCell` (`reset_after=True`: cuDNN's GRU) whose weights are those
of the layer seen in Keras' layout, so `K.rnn` runs the fused kernels `rnn._fast_cell` picks for
Keras' own cells: torch's `lstm` (cuDNN on CUDA), and for the GRU `rnn_kernels` on the CPU and
torch's `gru` (cuDNN) on CUDA.
"""
from keras import backend as K
from keras import constraints
from keras import initializers
from keras import regularizers
from keras.layers.recurrent import GRUCell, LSTMCell, RNN

__all__ = ['CuDNNLSTM', 'CuDNNGRU']


def _keras_kernel(kernel, units, gates):
    """An input kernel in cuDNN's layout as the kernel of Keras' cells (the reshape that
    `_convert_rnn_weights` applies to a stored CuDNN kernel): each gate's `(input_dim, units)`
    block, read row-major as cuDNN's `(units, input_dim)` matrix, transposed."""
    input_dim = K.int_shape(kernel)[0]
    blocks = K.permute_dimensions(K.reshape(kernel, (input_dim, gates, units)), (1, 0, 2))
    matrices = K.reshape(blocks, (gates, units, input_dim))
    return K.reshape(K.permute_dimensions(matrices, (2, 0, 1)), (input_dim, gates * units))


def _keras_recurrent_kernel(recurrent_kernel, units, gates):
    """A recurrent kernel in cuDNN's layout as the recurrent kernel of Keras' cells: each
    gate's block transposed."""
    blocks = K.reshape(recurrent_kernel, (units, gates, units))
    return K.reshape(K.permute_dimensions(blocks, (2, 1, 0)), (units, gates * units))


class _LayerWeights(object):
    """Mixin for a Keras cell whose weights are tensors computed from its layer's weights:
    `add_weight` hands out `self.layer_weights[name]` instead of creating a variable."""

    layer_weights = None

    def add_weight(self, name=None, shape=None, **kwargs):
        weight = self.layer_weights[name]
        if K.int_shape(weight) != tuple(shape):
            raise ValueError('%s: the layer\'s %s has shape %s; the cell expects %s.'
                             % (type(self).__name__, name, K.int_shape(weight), shape))
        return weight


class _CuDNNLSTMCell(_LayerWeights, LSTMCell):
    """Keras' LSTMCell computing cuDNN's LSTM from a CuDNNLSTM's weights."""


class _CuDNNGRUCell(_LayerWeights, GRUCell):
    """Keras' GRUCell (reset_after) computing cuDNN's GRU from a CuDNNGRU's weights."""


class _CuDNNRNN(RNN):
    """Base of the CuDNN layers: a Keras `RNN` over a cell reading the layer's weights.

    # Arguments
        cell: the Keras cell computing the recurrence.
        units: positive integer, dimensionality of the output space.
        return_sequences: whether to return the whole output sequence or the last output.
        return_state: whether to return the last state in addition to the output.
        go_backwards: process the input sequence backwards and return the reversed sequence.
        stateful: whether the last state for each sample of a batch is the initial state for
            the same sample in the next batch.
        time_major: only False, as in Keras 2 (tf.keras stores the key).
        kernel_initializer, recurrent_initializer, bias_initializer,
        kernel_regularizer, recurrent_regularizer, bias_regularizer, activity_regularizer,
        kernel_constraint, recurrent_constraint, bias_constraint: as in `LSTM`.

    # Raises
        ValueError: for `time_major=True`, or a mask in `call` (cuDNN layers take none).
    """

    gates = None

    def __init__(self, cell, units,
                 kernel_initializer='glorot_uniform',
                 recurrent_initializer='orthogonal',
                 bias_initializer='zeros',
                 kernel_regularizer=None,
                 recurrent_regularizer=None,
                 bias_regularizer=None,
                 activity_regularizer=None,
                 kernel_constraint=None,
                 recurrent_constraint=None,
                 bias_constraint=None,
                 return_sequences=False,
                 return_state=False,
                 go_backwards=False,
                 stateful=False,
                 time_major=False,
                 **kwargs):
        if time_major:
            raise ValueError('%s: time_major=True is not supported; inputs must be '
                             '(batch, timesteps, features) (time_major=False).'
                             % type(self).__name__)
        super(_CuDNNRNN, self).__init__(cell, return_sequences=return_sequences,
                                        return_state=return_state,
                                        go_backwards=go_backwards, stateful=stateful,
                                        **kwargs)
        self.units = units
        self.time_major = time_major
        self.supports_masking = False
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def _bias_initializer(self):
        return self.bias_initializer

    def _cell_bias(self):
        """The layer's bias as the cell's bias."""
        raise NotImplementedError

    def build(self, input_shape):
        step_shape = input_shape[0] if isinstance(input_shape, list) else input_shape
        input_dim = step_shape[-1]
        size = self.gates * self.units
        self.kernel = self.add_weight(shape=(input_dim, size), name='kernel',
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(shape=(self.units, size),
                                                name='recurrent_kernel',
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        self.bias = self.add_weight(shape=(2 * size,), name='bias',
                                    initializer=self._bias_initializer(),
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint)
        self.cell.layer_weights = {
            'kernel': _keras_kernel(self.kernel, self.units, self.gates),
            'recurrent_kernel': _keras_recurrent_kernel(self.recurrent_kernel, self.units,
                                                        self.gates),
            'bias': self._cell_bias()}
        super(_CuDNNRNN, self).build(input_shape)

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if isinstance(mask, list):
            mask = mask[0]
        if mask is not None:
            raise ValueError('%s (%s): masking is not supported by CuDNN layers.'
                             % (type(self).__name__, self.name))
        return super(_CuDNNRNN, self).call(inputs, training=training,
                                           initial_state=initial_state)

    @property
    def trainable_weights(self):
        if self.trainable and self.built:
            return [self.kernel, self.recurrent_kernel, self.bias]
        return []

    @property
    def non_trainable_weights(self):
        if not self.trainable and self.built:
            return [self.kernel, self.recurrent_kernel, self.bias]
        return []

    def get_config(self):
        config = {
            'units': self.units,
            'kernel_initializer': initializers.serialize(self.kernel_initializer),
            'recurrent_initializer': initializers.serialize(self.recurrent_initializer),
            'bias_initializer': initializers.serialize(self.bias_initializer),
            'kernel_regularizer': regularizers.serialize(self.kernel_regularizer),
            'recurrent_regularizer': regularizers.serialize(self.recurrent_regularizer),
            'bias_regularizer': regularizers.serialize(self.bias_regularizer),
            'activity_regularizer': regularizers.serialize(self.activity_regularizer),
            'kernel_constraint': constraints.serialize(self.kernel_constraint),
            'recurrent_constraint': constraints.serialize(self.recurrent_constraint),
            'bias_constraint': constraints.serialize(self.bias_constraint),
            'return_sequences': self.return_sequences,
            'return_state': self.return_state,
            'go_backwards': self.go_backwards,
            'stateful': self.stateful,
            'time_major': self.time_major}
        base_config = super(RNN, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class CuDNNLSTM(_CuDNNRNN):
    """LSTM with cuDNN's equations and weights, on any device.

    Sigmoid gates, tanh activations, and the input and recurrent biases summed; weights in
    cuDNN's layout, as Keras' and tf.keras' `CuDNNLSTM` store them.

    # Arguments
        units: positive integer, dimensionality of the output space.
        unit_forget_bias: add 1 to the recurrent bias of the forget gate at initialization.
        Others: as `_CuDNNRNN`.
    """

    gates = 4

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        cell = _CuDNNLSTMCell(units, activation='tanh', recurrent_activation='sigmoid',
                              implementation=2)
        self.unit_forget_bias = unit_forget_bias
        super(CuDNNLSTM, self).__init__(cell, units, **kwargs)

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer

        def bias_initializer(shape, *args, **kwargs):
            units = self.units
            return K.concatenate([
                self.bias_initializer((units * 5,), *args, **kwargs),
                initializers.Ones()((units,), *args, **kwargs),
                self.bias_initializer((units * 2,), *args, **kwargs)])
        return bias_initializer

    def _cell_bias(self):
        size = self.gates * self.units
        return self.bias[:size] + self.bias[size:]

    def get_config(self):
        config = super(CuDNNLSTM, self).get_config()
        config['unit_forget_bias'] = self.unit_forget_bias
        return config


class CuDNNGRU(_CuDNNRNN):
    """GRU with cuDNN's equations and weights, on any device.

    The GRU of `GRU(reset_after=True, recurrent_activation='sigmoid')`: the reset gate
    multiplies the recurrent projection after its bias. Weights in cuDNN's layout, gates in
    Keras' order (update, reset, candidate), `bias` the input bias then the recurrent bias,
    as Keras' and tf.keras' `CuDNNGRU` store them.

    # Arguments
        units: positive integer, dimensionality of the output space.
        Others: as `_CuDNNRNN`.
    """

    gates = 3

    def __init__(self, units, **kwargs):
        cell = _CuDNNGRUCell(units, activation='tanh', recurrent_activation='sigmoid',
                             implementation=2, reset_after=True)
        super(CuDNNGRU, self).__init__(cell, units, **kwargs)

    def _cell_bias(self):
        return K.reshape(self.bias, (2, self.gates * self.units))
