"""tf.keras 2's core layers that Keras 2.3.1 lacks: `Identity` and `EinsumDense`."""
import re

from keras import activations
from keras import constraints
from keras import initializers
from keras import regularizers
from keras.engine.base_layer import Layer

__all__ = ['Identity', 'EinsumDense']


class Identity(Layer):
    """Returns its inputs (any structure of tensors) unchanged; passes masks through."""

    def __init__(self, **kwargs):
        super(Identity, self).__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_mask(self, inputs, mask=None):
        return mask


_EQUATION_FORMS = (
    (re.compile(r'([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$'), False),
    (re.compile(r'0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$'), True),
    (re.compile(r'([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$'), False),
)


def einsum_shapes(equation, bias_axes, input_shape, partial_output_shape):
    """The kernel shape, bias shape (None without `bias_axes`) and full output shape of an
    `EinsumDense` layer, as tf.keras derives them.

    The equation is `X,Y->Z`, `...X,Y->...Z` or `X...,Y->Z...`; `partial_output_shape`
    gives the output's sizes without the batch axis and the axes `...` stands for; a kernel
    axis takes its size from the input axis or, failing that, the output axis of its letter.

    # Raises
        ValueError: for another form of equation, a kernel or output letter found nowhere,
            a shared axis whose sizes differ, or a bias letter not in the output.
    """
    dotted = equation.replace('...', '0')
    for pattern, left_elided in _EQUATION_FORMS:
        match = pattern.match(dotted)
        if match:
            break
    else:
        raise ValueError("Invalid einsum equation '%s'. Equations must be in the form "
                         "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]...."
                         % equation)
    input_spec, weight_spec, output_spec = match.groups()
    input_shape = list(input_shape)
    elided = len(input_shape) - len(input_spec)
    output_shape = [input_shape[0]] + list(partial_output_shape)
    if elided > 0 and left_elided:
        output_shape[1:1] = input_shape[1:elided]
    elif elided > 0:
        output_shape += input_shape[len(input_shape) - elided:]
    shift = elided if left_elided else 0
    input_axes = {c: i + shift - (len(input_shape) if left_elided else 0)
                  for i, c in enumerate(input_spec)}
    output_axes = {c: i + shift for i, c in enumerate(output_spec)}
    for c in input_spec:
        if c in output_axes:
            size = output_shape[output_axes[c]]
            if size is not None and size != input_shape[input_axes[c]]:
                raise ValueError("Input shape and output shape do not match at shared "
                                 "dimension '%s'. Input shape is %s, and output shape is %s."
                                 % (c, input_shape[input_axes[c]], size))
    for c in output_spec:
        if c not in input_spec and c not in weight_spec:
            raise ValueError("Dimension '%s' was specified in the output '%s' but has no "
                             "corresponding dim in the input spec '%s' or weight spec '%s'"
                             % (c, output_spec, input_spec, weight_spec))
    kernel_shape = []
    for c in weight_spec:
        if c in input_axes:
            kernel_shape.append(input_shape[input_axes[c]])
        elif c in output_axes:
            kernel_shape.append(output_shape[output_axes[c]])
        else:
            raise ValueError("Weight dimension '%s' did not have a match in either the input "
                             "spec '%s' or the output spec '%s'. For this layer, the weight "
                             "must be fully specified." % (c, input_spec, output_spec))
    bias_shape = None
    if bias_axes is not None:
        for c in bias_axes:
            if c not in output_spec:
                raise ValueError("Bias dimension '%s' was requested, but is not part of the "
                                 "output spec '%s'" % (c, output_spec))
        first = min(output_spec.find(c) for c in bias_axes)
        bias_shape = [output_shape[output_axes[c]] if c in bias_axes else 1
                      for c in output_spec[first:]]
        if not left_elided:
            bias_shape += [1] * max(elided, 0)
    return kernel_shape, bias_shape, output_shape


class EinsumDense(Layer):
    """A dense layer of any rank: `einsum(equation, inputs, kernel)`, plus a bias over
    `bias_axes`, then `activation` (tf.keras' `EinsumDense`).

    # Arguments
        equation: `'ab,bc->ac'`-like, with `...` allowed at the start or end of the input and
            output (see `einsum_shapes`).
        output_shape: int or tuple: the output's sizes without the batch axis (and `...`'s);
            None for sizes taken from the input.
        activation: activation function (default none).
        bias_axes: the output letters the bias varies along, or None (no bias).
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        activity_regularizer, kernel_constraint, bias_constraint: as `Dense`'s.
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer='glorot_uniform', bias_initializer='zeros',
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super(EinsumDense, self).__init__(**kwargs)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.equation = equation
        self.partial_output_shape = ([output_shape] if isinstance(output_shape, int)
                                     else list(output_shape))
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        kernel_shape, bias_shape, self.full_output_shape = einsum_shapes(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        self.kernel = self.add_weight(name='kernel', shape=tuple(kernel_shape),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if bias_shape is not None:
            self.bias = self.add_weight(name='bias', shape=tuple(bias_shape),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        super(EinsumDense, self).build(input_shape)

    def call(self, inputs):
        from .. import op_table

        outputs = op_table.OPS['einsum'](self.equation, inputs, self.kernel)
        if self.bias is not None:
            outputs = outputs + self.bias
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        return tuple(einsum_shapes(self.equation, self.bias_axes, input_shape,
                                   self.partial_output_shape)[2])

    def get_config(self):
        config = {
            'output_shape': self.partial_output_shape,
            'equation': self.equation,
            'activation': activations.serialize(self.activation),
            'bias_axes': self.bias_axes,
            'kernel_initializer': initializers.serialize(self.kernel_initializer),
            'bias_initializer': initializers.serialize(self.bias_initializer),
            'kernel_regularizer': regularizers.serialize(self.kernel_regularizer),
            'bias_regularizer': regularizers.serialize(self.bias_regularizer),
            'activity_regularizer': regularizers.serialize(self.activity_regularizer),
            'kernel_constraint': constraints.serialize(self.kernel_constraint),
            'bias_constraint': constraints.serialize(self.bias_constraint)}
        base_config = super(EinsumDense, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))
