"""`AbstractRNNCell`, tf.keras' base class of recurrent cells."""
from keras.engine.base_layer import Layer

__all__ = ['AbstractRNNCell']


class AbstractRNNCell(Layer):
    """The base of an RNN cell: a layer whose `call(inputs, states)` returns `(output,
    new_states)`, usable with `keras.layers.RNN`.

    Subclasses define `call` and the properties `state_size` (an int, a shape or a list of
    them, one per state) and `output_size`.
    """

    @property
    def state_size(self):
        """The size of each state (an int, a shape, or a list of them)."""
        raise NotImplementedError('%s must define state_size.' % type(self).__name__)

    @property
    def output_size(self):
        """The size of the cell's output."""
        raise NotImplementedError('%s must define output_size.' % type(self).__name__)

    def call(self, inputs, states):
        raise NotImplementedError('%s must define call(inputs, states).' % type(self).__name__)
