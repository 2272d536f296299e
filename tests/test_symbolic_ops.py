"""Every public op, run symbolically: on placeholders fed through `K.function` and on Keras
variables evaluated with `K.eval`, against the same op run eagerly on torch tensors.

The eager results are checked against Keras' numpy backend in the per-module tests
(test_math_ops.py, test_array_ops.py, test_nn_ops.py, test_conv_ops.py, test_ctc.py); here the
eager result is the reference, and each case must give, in each symbolic mode,
- the same values (`assert_allclose`, rtol 1e-5 / atol 1e-6; exact for bool and int results),
- the same dtype (`K.dtype` of the symbol and of the fetched array),
- a static shape (`K.int_shape`) that agrees with the real one.

The table
---------
A case is `(op name, call, inputs)`. `inputs(b, rng)` builds the numpy values of the op's
tensor arguments for a batch of `b`; `call(op, *tensors)` calls `op` (looked up by name on
`K`) with those tensors in their places and every other argument as a Python value. An input
whose shape differs between `inputs(2, ...)` and `inputs(3, ...)` is batch-like: its
placeholder has `None` in the dimensions that differ.

Modes
-----
- `placeholder`: batch-like inputs become placeholders with `None` dims; the compiled
  function is fed batches of 2 and of 3. `K.int_shape` must be exactly the shape the two
  eager runs agree on: a known dim where they agree, `None` where they differ.
- `static`: every input is a placeholder of its full shape; `K.int_shape` must equal the
  real shape.
- `variable`: every input is a `K.variable`, the result is fetched with `K.eval`;
  `K.int_shape` must equal the real shape.
Dimensions whose size depends on input *values* (`arange` of a tensor, decoded CTC
sequences) may be `None` in every mode; each such case lists them in `dynamic`.

Arguments that stay Python values
---------------------------------
Axes, `keepdims`, integer hyperparameters (`rep`, `n`, `num_classes`, `k`, strides, pool and
kernel sizes, padding amounts, resize factors), float hyperparameters (`alpha`,
`max_value`, `epsilon`, dropout `level`), strings (padding, data formats) and dtypes are
never tensors: torchk (like Keras' TF backend) reads them while building the graph. Shape
arguments whose *values* set the static output shape (`reshape`'s `shape`, `tile`'s `n`,
`slice`'s `start`/`size`, `permute_dimensions`' `pattern`, `conv*_transpose`'s
`output_shape`) are Python tuples here; `reshape` and `conv2d_transpose` also get a case
with `K.shape(x)[0]` inside them, which is how Keras layers pass a dynamic batch size.
`in_top_k`'s `k` must be a Python int (it raises TypeError otherwise, by design).
"""
import collections
import zlib

import numpy as np
import pytest
import scipy.sparse
import torch
from numpy.testing import assert_allclose, assert_array_equal

from torchk import array_ops, conv_ops, ctc, math_ops, nn_ops
from torchk import core as K

RTOL, ATOL = 1e-5, 1e-6
FIRST, LAST = 'channels_first', 'channels_last'

# Ops of torchk.core outside the op modules that this file covers too.
CORE_OPS = ['shape', 'size', 'to_dense', 'switch', 'dropout', 'l2_normalize']

# Ops whose result is a constant when their inputs' shapes are static.
CONSTANT_OF_STATIC_SHAPES = ('shape',)

Case = collections.namedtuple('Case', 'id name call inputs dynamic check')


class Sparse:
    """Marks an input fed as a sparse matrix (eager: a torch sparse COO tensor)."""

    def __init__(self, value):
        self.value = value


# ---------------------------------------------------------------------------------------------
# Input builders

def f32(r, *shape):
    return r.randn(*shape).astype('float32')


def pos(r, *shape):
    """Positive floats, away from 0 (for log, sqrt, pow)."""
    return r.uniform(0.5, 2., shape).astype('float32')


def ints(r, high, *shape, dtype='int64'):
    return r.randint(0, high, shape).astype(dtype)


def probs(r, *shape, axis=-1):
    p = r.uniform(0.05, 1., shape)
    return (p / p.sum(axis=axis, keepdims=True)).astype('float32')


def one_hot(r, classes, *shape):
    return np.eye(classes, dtype='float32')[r.randint(0, classes, shape)]


def halves(r, *shape):
    """Floats on a grid of 0.5, so that comparisons and rounding have ties."""
    return (r.randint(-4, 5, shape) / 2.).astype('float32')


def ctc_inputs(r, b, steps=6, classes=5, max_labels=3):
    """y_true (b, max_labels) padded with -1, y_pred (b, steps, classes) softmax, lengths."""
    label_length = r.randint(1, max_labels + 1, (b, 1))
    y_true = -np.ones((b, max_labels), 'int32')
    for i, n in enumerate(label_length[:, 0]):
        y_true[i, :n] = r.randint(0, classes - 1, n)
    y_pred = probs(r, b, steps, classes)
    input_length = r.randint(steps - 1, steps + 1, (b, 1)).astype('int32')
    return y_true, y_pred, input_length, label_length.astype('int32')


# ---------------------------------------------------------------------------------------------
# The table

CASES = []


def case(name, call, inputs, id=None, dynamic=(), check=None):
    CASES.append(Case(id or name, name, call, inputs, frozenset(dynamic), check))


def unary(name, make=f32, shape=(3, 4), tag='', **kwargs):
    """A case for an op taking one tensor and keyword hyperparameters."""
    label = name + tag + ''.join('-%s=%s' % item for item in sorted(kwargs.items()))
    case(name, lambda op, x: op(x, **kwargs), lambda b, r: [make(r, b, *shape)], id=label)


# math_ops: casting and linear algebra.
case('cast', lambda op, x: op(x, 'float64'), lambda b, r: [f32(r, b, 3)], id='cast-f32-f64')
case('cast', lambda op, x: op(x, 'int32'), lambda b, r: [halves(r, b, 3)], id='cast-f32-i32')
case('cast', lambda op, x: op(x, 'float32'), lambda b, r: [ints(r, 9, b, 3)], id='cast-i64-f32')
case('cast', lambda op, x: op(x, 'bool'), lambda b, r: [ints(r, 2, b, 3)], id='cast-i64-bool')
case('dot', lambda op, x, y: op(x, y), lambda b, r: [f32(r, b, 3), f32(r, 3, 4)], id='dot-2d')
case('dot', lambda op, x, y: op(x, y), lambda b, r: [f32(r, b, 2, 3), f32(r, 4, 3, 5)],
     id='dot-nd')
case('dot', lambda op, x, y: op(x, y), lambda b, r: [f32(r, 3, b), f32(r, b, 4)],
     id='dot-contract-batch')
case('batch_dot', lambda op, x, y: op(x, y), lambda b, r: [f32(r, b, 3, 4), f32(r, b, 4, 5)],
     id='batch_dot-3d')
case('batch_dot', lambda op, x, y: op(x, y, axes=(1, 2)),
     lambda b, r: [f32(r, b, 4), f32(r, b, 3, 4)], id='batch_dot-2d-3d')
case('batch_dot', lambda op, x, y: op(x, y, axes=1), lambda b, r: [f32(r, b, 3), f32(r, b, 3)],
     id='batch_dot-2d-2d')
unary('transpose', shape=(3, 4))

# math_ops: reductions.
for _name in ('max', 'min', 'sum', 'prod', 'mean', 'var', 'std', 'logsumexp'):
    unary(_name)
    unary(_name, axis=1)
    unary(_name, axis=[0, 2], keepdims=True)
unary('sum', make=lambda r, *s: ints(r, 5, *s), tag='-int64', axis=-1)
unary('prod', make=lambda r, *s: ints(r, 3, *s, dtype='int32'), tag='-int32', axis=1)
unary('mean', make=lambda r, *s: ints(r, 5, *s), tag='-int64', axis=0)
unary('max', make=lambda r, *s: ints(r, 9, *s, dtype='int32'), tag='-int32', axis=-1)
for _name in ('cumsum', 'cumprod'):
    unary(_name)
    unary(_name, axis=-1)
    unary(_name, make=lambda r, *s: ints(r, 3, *s), tag='-int64', axis=1)
for _name in ('any', 'all'):
    unary(_name, make=lambda r, *s: r.rand(*s) > 0.3, tag='-bool')
    unary(_name, make=lambda r, *s: r.rand(*s) > 0.3, tag='-bool', axis=1, keepdims=True)
    unary(_name, make=lambda r, *s: ints(r, 2, *s).astype('float32'), tag='-float', axis=-1)
for _name in ('argmax', 'argmin'):
    unary(_name)
    unary(_name, axis=0)

# math_ops: element-wise.
for _name in ('square', 'abs', 'exp', 'sign', 'sin', 'cos'):
    unary(_name)
unary('abs', make=lambda r, *s: ints(r, 9, *s) - 4, tag='-int64')
unary('square', make=lambda r, *s: ints(r, 9, *s, dtype='int32'), tag='-int32')
unary('sqrt', make=pos, tag='-positive')
unary('sqrt', tag='-negative')  # negative values are clipped to 0
unary('log', make=pos)
unary('round', make=halves)
unary('pow', make=pos, a=2.5)
unary('pow', a=2)
case('pow', lambda op, x, a: op(x, a), lambda b, r: [pos(r, b, 3), f32(r, b, 3)],
     id='pow-tensor-exponent')
unary('clip', min_value=-0.5, max_value=0.5)
unary('clip', min_value=None, max_value=0.5)
case('clip', lambda op, x, lo, hi: op(x, lo, hi),
     lambda b, r: [f32(r, b, 3), np.float32(-0.5) * np.ones((b, 3), 'float32'),
                   r.uniform(0, 1, (b, 3)).astype('float32')], id='clip-tensor-bounds')
case('clip', lambda op, x, hi: op(x, 0., hi), lambda b, r: [f32(r, b, 3), np.float32(0.5)],
     id='clip-scalar-tensor-bound')
for _name in ('equal', 'not_equal', 'greater', 'greater_equal', 'less', 'less_equal',
              'maximum', 'minimum'):
    case(_name, lambda op, x, y: op(x, y), lambda b, r: [halves(r, b, 3), halves(r, b, 3)],
         id=_name + '-tensors')
    case(_name, lambda op, x, y: op(x, y), lambda b, r: [halves(r, b, 3), halves(r, 3)],
         id=_name + '-broadcast')
    case(_name, lambda op, x: op(x, 0.5), lambda b, r: [halves(r, b, 3)], id=_name + '-number')
case('equal', lambda op, x, y: op(x, y), lambda b, r: [ints(r, 3, b, 3), ints(r, 3, b, 3)],
     id='equal-ints')
case('divide_no_nan', lambda op, x, y: op(x, y),
     lambda b, r: [f32(r, b, 3), ints(r, 2, b, 3).astype('float32')], id='divide_no_nan')
case('maximum', lambda op, x, y: op(x, y),
     lambda b, r: [ints(r, 5, b, 3, dtype='int32'), ints(r, 5, b, 3, dtype='int32')],
     id='maximum-ints')

# array_ops.
case('concatenate', lambda op, x, y: op([x, y], axis=-1),
     lambda b, r: [f32(r, b, 2), f32(r, b, 3)], id='concatenate-last')
case('concatenate', lambda op, x, y: op([x, y], axis=0),
     lambda b, r: [f32(r, b, 2), f32(r, 2, 2)], id='concatenate-batch-axis')
case('reshape', lambda op, x: op(x, (-1, 12)), lambda b, r: [f32(r, b, 3, 4)],
     id='reshape-minus-one')
case('reshape', lambda op, x: op(x, (K.shape(x)[0], 2, -1)), lambda b, r: [f32(r, b, 3, 4)],
     id='reshape-shape-tensor')
case('permute_dimensions', lambda op, x: op(x, (0, 2, 1)), lambda b, r: [f32(r, b, 3, 4)])
case('repeat_elements', lambda op, x: op(x, 2, axis=1), lambda b, r: [f32(r, b, 3, 2)])
case('repeat_elements', lambda op, x: op(x, 3, axis=0), lambda b, r: [f32(r, b, 2)],
     id='repeat_elements-batch-axis')
case('repeat', lambda op, x: op(x, 3), lambda b, r: [f32(r, b, 4)])
case('arange', lambda op, n: op(n), lambda b, r: [np.array(r.randint(3, 9), 'int32')],
     dynamic={(0, 0)})
case('arange', lambda op, start, stop: op(start, stop, 2, dtype='float32'),
     lambda b, r: [np.array(r.randint(0, 3), 'int64'), np.array(r.randint(5, 12), 'int64')],
     id='arange-start-stop-step', dynamic={(0, 0)})
case('tile', lambda op, x: op(x, (2, 1, 3)), lambda b, r: [f32(r, b, 3, 2)])
case('tile', lambda op, x: op(x, 2), lambda b, r: [f32(r, b, 3)], id='tile-int')
case('flatten', lambda op, x: op(x), lambda b, r: [f32(r, b, 3, 2)])
case('batch_flatten', lambda op, x: op(x), lambda b, r: [f32(r, b, 3, 2)])
case('expand_dims', lambda op, x: op(x, 1), lambda b, r: [f32(r, b, 3)])
case('expand_dims', lambda op, x: op(x), lambda b, r: [f32(r, b, 3)], id='expand_dims-last')
case('squeeze', lambda op, x: op(x, 1), lambda b, r: [f32(r, b, 1, 3)])
case('squeeze', lambda op, x: op(x, -1), lambda b, r: [f32(r, b, 3, 1)], id='squeeze-last')
case('stack', lambda op, x, y: op([x, y], axis=1), lambda b, r: [f32(r, b, 3), f32(r, b, 3)])
case('stack', lambda op, x, y: op([x, y]), lambda b, r: [f32(r, b, 3), f32(r, b, 3)],
     id='stack-axis0')
case('one_hot', lambda op, i: op(i, 5), lambda b, r: [ints(r, 5, b, 3)])
case('one_hot', lambda op, i: op(i, 4), lambda b, r: [ints(r, 4, b, dtype='int32')],
     id='one_hot-int32-1d')
case('reverse', lambda op, x: op(x, [0, 2]), lambda b, r: [f32(r, b, 3, 2)])
case('reverse', lambda op, x: op(x, -1), lambda b, r: [f32(r, b, 3)], id='reverse-int-axis')
case('slice', lambda op, x: op(x, (0, 1, 0), (-1, 2, 2)), lambda b, r: [f32(r, b, 4, 3)])
case('slice', lambda op, x: op(x, (1, 0), (1, 2)), lambda b, r: [f32(r, b, 3)],
     id='slice-fixed-batch')
case('gather', lambda op, ref, idx: op(ref, idx),
     lambda b, r: [f32(r, 5, 3), ints(r, 5, b, 2)], id='gather-batch-indices')
case('gather', lambda op, ref, idx: op(ref, idx),
     lambda b, r: [f32(r, b + 2, 3), ints(r, 2, 4, dtype='int32')], id='gather-batch-reference')
case('zeros_like', lambda op, x: op(x), lambda b, r: [f32(r, b, 3)])
case('zeros_like', lambda op, x: op(x, dtype='int32'), lambda b, r: [ints(r, 5, b, 3)],
     id='zeros_like-int32')
case('ones_like', lambda op, x: op(x), lambda b, r: [ints(r, 5, b, 3)])
case('ones_like', lambda op, x: op(x, dtype='float64'), lambda b, r: [f32(r, b, 3)],
     id='ones_like-float64')
case('identity', lambda op, x: op(x), lambda b, r: [f32(r, b, 3)])
case('identity', lambda op, x: op(x), lambda b, r: [ints(r, 5, b, 3)], id='identity-int')

# nn_ops.
unary('relu')
unary('relu', alpha=0.3)
unary('relu', alpha=0.2, max_value=1., threshold=0.5)
unary('relu', max_value=6.)
unary('elu')
unary('elu', alpha=0.5)
unary('softmax')
unary('softmax', axis=1, shape=(3, 4))
for _name in ('softplus', 'softsign', 'sigmoid', 'hard_sigmoid', 'tanh'):
    unary(_name, make=lambda r, *s: 2 * f32(r, *s))
case('categorical_crossentropy', lambda op, t, o: op(t, o),
     lambda b, r: [one_hot(r, 4, b), probs(r, b, 4)])
case('categorical_crossentropy', lambda op, t, o: op(t, o, from_logits=True),
     lambda b, r: [one_hot(r, 4, b), f32(r, b, 4)], id='categorical_crossentropy-logits')
case('categorical_crossentropy', lambda op, t, o: op(t, o, axis=1),
     lambda b, r: [probs(r, b, 4, 3, axis=1), probs(r, b, 4, 3, axis=1)],
     id='categorical_crossentropy-axis1')
case('sparse_categorical_crossentropy', lambda op, t, o: op(t, o),
     lambda b, r: [ints(r, 4, b), probs(r, b, 4)])
case('sparse_categorical_crossentropy', lambda op, t, o: op(t, o, from_logits=True),
     lambda b, r: [ints(r, 4, b, 1).astype('float32'), f32(r, b, 4)],
     id='sparse_categorical_crossentropy-logits-float-targets')
case('sparse_categorical_crossentropy', lambda op, t, o: op(t, o, axis=1),
     lambda b, r: [ints(r, 4, b, 3, dtype='int32'), probs(r, b, 4, 3, axis=1)],
     id='sparse_categorical_crossentropy-axis1')
case('binary_crossentropy', lambda op, t, o: op(t, o),
     lambda b, r: [ints(r, 2, b, 3).astype('float32'), r.uniform(0.05, 0.95, (b, 3))
                   .astype('float32')])
case('binary_crossentropy', lambda op, t, o: op(t, o, from_logits=True),
     lambda b, r: [r.uniform(0, 1, (b, 3)).astype('float32'), f32(r, b, 3)],
     id='binary_crossentropy-logits')
unary('l2_normalize', axis=-1)
unary('l2_normalize')
unary('l2_normalize', axis=[1, 2])
case('in_top_k', lambda op, p, t: op(p, t, 2), lambda b, r: [f32(r, b, 5), ints(r, 5, b)])
case('in_top_k', lambda op, p, t: op(p, t, 1),
     lambda b, r: [halves(r, b, 5), ints(r, 5, b, dtype='int32')], id='in_top_k-ties')
case('batch_normalization', lambda op, x, m, v, beta, gamma: op(x, m, v, beta, gamma),
     lambda b, r: [f32(r, b, 3, 4), f32(r, 4), pos(r, 4), f32(r, 4), f32(r, 4)])
case('batch_normalization',
     lambda op, x, m, v: op(x, m, v, None, None, axis=1, epsilon=1e-2),
     lambda b, r: [f32(r, b, 3, 4), f32(r, 3), pos(r, 3)], id='batch_normalization-axis1-none')
case('batch_normalization', lambda op, x, m, v, beta, gamma: op(x, m, v, beta, gamma),
     lambda b, r: [f32(r, b, 3, 4), f32(r, 1, 1, 4), pos(r, 1, 1, 4), f32(r, 1, 1, 4),
                   f32(r, 1, 1, 4)], id='batch_normalization-broadcast-params')
case('normalize_batch_in_training', lambda op, x, g, beta: op(x, g, beta, [0]),
     lambda b, r: [f32(r, b, 3), pos(r, 3), f32(r, 3)])
case('normalize_batch_in_training', lambda op, x, g, beta: op(x, g, beta, [0, 1, 2]),
     lambda b, r: [f32(r, b, 3, 4, 2), pos(r, 2), f32(r, 2)],
     id='normalize_batch_in_training-4d')
case('normalize_batch_in_training', lambda op, x: op(x, None, None, [0, 2], epsilon=1e-2),
     lambda b, r: [f32(r, b, 3, 4)], id='normalize_batch_in_training-no-params')

# conv_ops.
case('conv1d', lambda op, x, k: op(x, k, 2, 'causal', LAST, dilation_rate=2),
     lambda b, r: [f32(r, b, 9, 3), f32(r, 3, 3, 4)])
case('conv1d', lambda op, x, k: op(x, k, padding='same', data_format=FIRST),
     lambda b, r: [f32(r, b, 3, 7), f32(r, 2, 3, 2)], id='conv1d-same-first')
case('conv2d', lambda op, x, k: op(x, k, (2, 2), 'same', FIRST),
     lambda b, r: [f32(r, b, 3, 7, 6), f32(r, 2, 3, 3, 4)])
case('conv2d', lambda op, x, k: op(x, k, data_format=LAST, dilation_rate=(2, 1)),
     lambda b, r: [f32(r, b, 6, 5, 2), f32(r, 2, 2, 2, 3)], id='conv2d-valid-dilated-last')
case('conv3d', lambda op, x, k: op(x, k, padding='same', data_format=LAST),
     lambda b, r: [f32(r, b, 5, 4, 5, 2), f32(r, 2, 2, 2, 2, 3)])
case('conv2d_transpose', lambda op, x, k: op(x, k, (None, 5, 7, 5), (2, 2), 'same', LAST),
     lambda b, r: [f32(r, b, 3, 4, 3), f32(r, 3, 3, 5, 3)])
case('conv2d_transpose',
     lambda op, x, k: op(x, k, (K.shape(x)[0], 5, 7, 5), (2, 2), 'same', LAST),
     lambda b, r: [f32(r, b, 3, 4, 3), f32(r, 3, 3, 5, 3)], id='conv2d_transpose-shape-tensor')
case('conv3d_transpose', lambda op, x, k: op(x, k, (None, 3, 4, 4, 4), (2, 2, 2), 'valid',
                                            FIRST),
     lambda b, r: [f32(r, b, 2, 2, 2, 2), f32(r, 2, 2, 2, 3, 2)])
case('deconv2d', lambda op, x, k: op(x, k, (None, 5, 7, 5), (2, 2), 'same', 'tf'),
     lambda b, r: [f32(r, b, 3, 4, 3), f32(r, 3, 3, 5, 3)])
case('separable_conv1d', lambda op, x, d, p: op(x, d, p, 2, 'same', LAST),
     lambda b, r: [f32(r, b, 7, 3), f32(r, 3, 3, 2), f32(r, 1, 6, 4)])
case('separable_conv2d', lambda op, x, d, p: op(x, d, p, padding='same', data_format=LAST),
     lambda b, r: [f32(r, b, 7, 6, 3), f32(r, 3, 3, 3, 2), f32(r, 1, 1, 6, 4)])
case('depthwise_conv2d', lambda op, x, k: op(x, k, (2, 2), 'same', LAST),
     lambda b, r: [f32(r, b, 7, 6, 3), f32(r, 3, 3, 3, 2)])
case('depthwise_conv2d', lambda op, x, k: op(x, k, data_format=FIRST),
     lambda b, r: [f32(r, b, 2, 5, 4), f32(r, 2, 2, 2, 1)], id='depthwise_conv2d-first')
case('local_conv1d', lambda op, x, k: op(x, k, (3,), (1,)),
     lambda b, r: [f32(r, b, 8, 3), f32(r, 6, 9, 4)])
case('local_conv2d', lambda op, x, k: op(x, k, (3, 3), (2, 2), (2, 2), FIRST),
     lambda b, r: [f32(r, b, 3, 5, 5), f32(r, 4, 27, 2)])
case('local_conv2d', lambda op, x, k: op(x, k, (3, 3), (1, 1), (2, 2), LAST),
     lambda b, r: [f32(r, b, 4, 4, 2), f32(r, 4, 18, 2)], id='local_conv2d-last')
case('pool2d', lambda op, x: op(x, (2, 2), (2, 2), 'same', LAST, 'avg'),
     lambda b, r: [f32(r, b, 7, 6, 3)])
case('pool2d', lambda op, x: op(x, (3, 3), (2, 1), 'valid', FIRST, 'max'),
     lambda b, r: [f32(r, b, 2, 7, 6)], id='pool2d-max-first')
case('pool3d', lambda op, x: op(x, (2, 2, 2), (2, 2, 2), 'same', LAST, 'max'),
     lambda b, r: [f32(r, b, 5, 4, 5, 3)])
case('pool3d', lambda op, x: op(x, (2, 2, 2), (1, 1, 1), 'valid', FIRST, 'avg'),
     lambda b, r: [f32(r, b, 2, 3, 4, 3)], id='pool3d-avg-first')
case('bias_add', lambda op, x, bias: op(x, bias, FIRST),
     lambda b, r: [f32(r, b, 3, 4, 5), f32(r, 4, 5, 3)])
case('bias_add', lambda op, x, bias: op(x, bias),
     lambda b, r: [f32(r, b, 5), f32(r, 5)], id='bias_add-1d')
case('bias_add', lambda op, x, bias: op(x, bias, FIRST),
     lambda b, r: [f32(r, b, 3, 4, 5), f32(r, 3)], id='bias_add-1d-first')
case('temporal_padding', lambda op, x: op(x, (1, 2)), lambda b, r: [f32(r, b, 4, 3)])
case('asymmetric_temporal_padding', lambda op, x: op(x, 2, 1), lambda b, r: [f32(r, b, 4, 3)])
case('spatial_2d_padding', lambda op, x: op(x, ((1, 2), (0, 1)), LAST),
     lambda b, r: [f32(r, b, 4, 3, 1)])
case('spatial_2d_padding', lambda op, x: op(x, ((1, 0), (2, 1)), FIRST),
     lambda b, r: [f32(r, b, 2, 3, 3)], id='spatial_2d_padding-first')
case('asymmetric_spatial_2d_padding', lambda op, x: op(x, 1, 2, 0, 1, dim_ordering='tf'),
     lambda b, r: [f32(r, b, 4, 3, 2)])
case('spatial_3d_padding', lambda op, x: op(x, ((1, 0), (0, 1), (1, 1)), LAST),
     lambda b, r: [f32(r, b, 2, 2, 2, 2)])
case('spatial_3d_padding', lambda op, x: op(x, data_format=FIRST),
     lambda b, r: [f32(r, b, 2, 2, 3, 2)], id='spatial_3d_padding-first')
case('resize_images', lambda op, x: op(x, 2, 3, LAST, 'bilinear'),
     lambda b, r: [f32(r, b, 3, 4, 2)])
case('resize_images', lambda op, x: op(x, 2, 1, FIRST),
     lambda b, r: [f32(r, b, 2, 3, 4)], id='resize_images-nearest-first')
case('resize_volumes', lambda op, x: op(x, 2, 1, 3, FIRST),
     lambda b, r: [f32(r, b, 2, 2, 2, 2)])
case('resize_volumes', lambda op, x: op(x, 1, 2, 2, LAST),
     lambda b, r: [f32(r, b, 2, 2, 3, 1)], id='resize_volumes-last')

# core.
case('shape', lambda op, x: op(x), lambda b, r: [f32(r, b, 3, 4)])
case('size', lambda op, x: op(x), lambda b, r: [f32(r, b, 3, 4)])
case('to_dense', lambda op, x: op(x),
     lambda b, r: [Sparse(f32(r, b, 4) * (r.rand(b, 4) > 0.5))])
case('to_dense', lambda op, x: op(x), lambda b, r: [f32(r, b, 4)], id='to_dense-dense')
case('switch', lambda op, c, x, y: op(c, x, y),
     lambda b, r: [np.array(True), f32(r, b, 3), f32(r, b, 3)], id='switch-scalar-true')
case('switch', lambda op, c, x, y: op(c, x, y),
     lambda b, r: [np.array(False), f32(r, b, 3), f32(r, b, 3)], id='switch-scalar-false')
case('switch', lambda op, c, x, y: op(c, x, y),
     lambda b, r: [r.rand(b, 3) > 0.5, f32(r, b, 3), f32(r, b, 3)], id='switch-elementwise')
case('switch', lambda op, c, x, y: op(c, x, y),
     lambda b, r: [r.rand(b) > 0.5, f32(r, b, 3, 2), f32(r, b, 3, 2)],
     id='switch-lower-rank-condition')
case('switch', lambda op, c, x, y: op(c, lambda: x * 2., lambda: y - 1.),
     lambda b, r: [np.array(1, 'int32'), f32(r, b, 3), f32(r, b, 3)], id='switch-callables')


def _check_dropout(level, shared_axes=()):
    """Dropout's values are 0 or x / (1 - level); the mask is shared along `shared_axes`
    (the axes where `noise_shape` is 1)."""
    def check(inputs, outputs):
        x, (y,) = inputs[0], outputs  # x > 0, so a dropped entry is exactly the zeros of y
        kept = y != 0
        assert_allclose(y[kept], x[kept] / (1. - level), rtol=RTOL, atol=ATOL)
        for axis in shared_axes:
            assert_array_equal(kept, np.broadcast_to(kept.take([0], axis), kept.shape))
        if not shared_axes:  # 24 or 36 draws at level 0.5: some are kept and some dropped
            assert 0 < kept.sum() < kept.size
    return check


case('dropout', lambda op, x: op(x, 0.5, seed=3), lambda b, r: [pos(r, b, 12)],
     check=_check_dropout(0.5))
case('dropout', lambda op, x: op(x, 0.25, noise_shape=(None, 1, 4), seed=1),
     lambda b, r: [pos(r, b, 3, 4)], id='dropout-noise-shape',
     check=_check_dropout(0.25, shared_axes=(1,)))

# ctc.
case('ctc_batch_cost', lambda op, t, p, il, ll: op(t, p, il, ll),
     lambda b, r: list(ctc_inputs(r, b)))
case('ctc_decode', lambda op, p, il: op(p, il),
     lambda b, r: [probs(r, b, 6, 5), r.randint(3, 7, b).astype('int32')],
     dynamic={(0, 1)})
case('ctc_decode', lambda op, p, il: op(p, il, greedy=False, beam_width=3, top_paths=2),
     lambda b, r: [probs(r, b, 6, 5), r.randint(3, 7, b).astype('int64')],
     id='ctc_decode-beam', dynamic={(0, 1), (1, 1)})
case('ctc_label_dense_to_sparse', lambda op, labels, lengths: op(labels, lengths),
     lambda b, r: [ints(r, 5, b, 4, dtype='int32'), r.randint(0, 5, b).astype('int32')])

REQUIRED_OPS = sorted(set(math_ops.__all__) | set(array_ops.__all__) | set(nn_ops.__all__)
                      | set(conv_ops.__all__) | set(ctc.__all__) | set(CORE_OPS))


# ---------------------------------------------------------------------------------------------
# Running a case

def _inputs(c, batch, draw=0):
    """The case's input values for `batch`; another `draw` gives other values, same shapes."""
    seed = (zlib.crc32(c.id.encode()) + 7919 * draw + batch) % 2 ** 32
    return c.inputs(batch, np.random.RandomState(seed))


def _dense(value):
    return value.value if isinstance(value, Sparse) else value


def _leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _eager(c, batch, draw=0):
    """Inputs, output leaves (as torch tensors) of the op run eagerly at `batch`."""
    values = _inputs(c, batch, draw)
    tensors = [torch.from_numpy(v.value.copy()).to_sparse() if isinstance(v, Sparse)
               else torch.from_numpy(np.array(v)) for v in values]
    leaves = _leaves(c.call(getattr(K, c.name), *tensors))
    assert all(isinstance(leaf, torch.Tensor) for leaf in leaves), leaves
    return values, leaves


def _numpy(tensor):
    tensor = tensor.detach()
    return (tensor.to_dense() if tensor.is_sparse else tensor).numpy()


def _placeholder(value, shape):
    sparse = isinstance(value, Sparse)
    return K.placeholder(shape=shape, dtype=_dense(value).dtype.name, sparse=sparse)


def _feed(value):
    if isinstance(value, Sparse):
        return scipy.sparse.csr_matrix(value.value)
    return value


def _compare(c, values, outputs, eager):
    assert len(outputs) == len(eager)
    if c.check is not None:
        for got, expected in zip(outputs, eager):
            assert got.shape == expected.shape
            assert got.dtype == _numpy(expected).dtype
        c.check([_dense(v) for v in values], outputs)
        return
    for i, (got, expected) in enumerate(zip(outputs, eager)):
        expected = _numpy(expected)
        assert got.dtype == expected.dtype, 'output %d' % i
        assert got.shape == expected.shape, 'output %d' % i
        if expected.dtype.kind in 'fc':
            assert_allclose(got, expected, rtol=RTOL, atol=ATOL, err_msg='output %d' % i)
        else:
            assert_array_equal(got, expected, err_msg='output %d' % i)


def _check_static(c, symbols, expected_shapes, eager):
    """Symbolic dtypes equal the eager ones; int_shapes equal `expected_shapes` (a `None`
    is also accepted in the case's value-dependent `dynamic` dimensions)."""
    lazy = all(isinstance(s, K.KerasTensor) for s in symbols)
    # K.shape of a symbol of static shape is known when the graph is built: a constant.
    constant = (c.name in CONSTANT_OF_STATIC_SHAPES
                and all(shape is not None and None not in shape for shape in expected_shapes)
                and all(torch.is_tensor(s) and not isinstance(s, K.KerasTensor)
                        for s in symbols))
    assert lazy or constant, 'not lazy: %r' % (symbols,)
    assert len(symbols) == len(eager)
    for i, (symbol, expected_shape, real) in enumerate(zip(symbols, expected_shapes, eager)):
        assert K.dtype(symbol) == K.dtype(real), 'output %d' % i
        shape = K.int_shape(symbol)
        assert shape is not None and len(shape) == len(expected_shape), \
            'output %d: int_shape %s, expected %s' % (i, shape, expected_shape)
        for d, (got, want) in enumerate(zip(shape, expected_shape)):
            if got is None and (i, d) in c.dynamic:
                continue
            assert got == want, 'output %d: int_shape %s, expected %s' % (
                i, shape, expected_shape)


def _run_placeholder(c):
    values2, eager2 = _eager(c, 2)
    values3, eager3 = _eager(c, 3)
    shapes = []
    for v2, v3 in zip(values2, values3):
        s2, s3 = np.shape(_dense(v2)), np.shape(_dense(v3))
        assert len(s2) == len(s3)
        shapes.append(tuple(a if a == b else None for a, b in zip(s2, s3)))
    assert any(None in s for s in shapes), 'no batch-like input: use the static mode only'
    placeholders = [_placeholder(v, s) for v, s in zip(values2, shapes)]
    symbols = _leaves(c.call(getattr(K, c.name), *placeholders))
    expected_shapes = [tuple(a if a == b else None for a, b in zip(e2.shape, e3.shape))
                       if e2.ndim == e3.ndim else None for e2, e3 in zip(eager2, eager3)]
    _check_static(c, symbols, expected_shapes, eager2)
    run = K.function(placeholders, symbols)
    for values, eager in ((values2, eager2), (values3, eager3)):
        _compare(c, values, run([_feed(v) for v in values]), eager)


def _run_static(c):
    values, eager = _eager(c, 2)
    placeholders = [_placeholder(v, np.shape(_dense(v))) for v in values]
    symbols = _leaves(c.call(getattr(K, c.name), *placeholders))
    _check_static(c, symbols, [tuple(e.shape) for e in eager], eager)
    run = K.function(placeholders, symbols)
    _compare(c, values, run([_feed(v) for v in values]), eager)


def _run_variable(c):
    values, eager = _eager(c, 2)
    variables = [K.variable(_dense(v), dtype=_dense(v).dtype.name) for v in values]
    symbols = _leaves(c.call(getattr(K, c.name), *variables))
    _check_static(c, symbols, [tuple(e.shape) for e in eager], eager)
    _compare(c, values, [K.eval(s) for s in symbols], eager)
    # The graph reads the variables when it runs: new values give the eager result on them,
    # and the static shape still holds.
    values, eager = _eager(c, 2, draw=1)
    for variable, value in zip(variables, values):
        K.set_value(variable, _dense(value))
    _check_static(c, symbols, [tuple(e.shape) for e in eager], eager)
    _compare(c, values, [K.eval(s) for s in symbols], eager)


MODES = {'placeholder': _run_placeholder, 'static': _run_static, 'variable': _run_variable}


def _has_batch(c):
    return any(np.shape(_dense(a)) != np.shape(_dense(b))
               for a, b in zip(_inputs(c, 2), _inputs(c, 3)))


PARAMS = [pytest.param(c, mode, id='%s-%s' % (c.id, mode)) for c in CASES for mode in MODES
          if mode != 'placeholder' or _has_batch(c)]


@pytest.mark.parametrize('c, mode', PARAMS)
def test_symbolic_matches_eager(c, mode):
    MODES[mode](c)


# ---------------------------------------------------------------------------------------------
# The table itself

def test_every_public_op_has_a_case():
    covered = {c.name for c in CASES}
    assert sorted(set(REQUIRED_OPS) - covered) == []


def test_every_case_names_a_public_op():
    assert sorted({c.name for c in CASES} - set(REQUIRED_OPS)) == []
    for c in CASES:
        assert callable(getattr(K, c.name))


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_every_op_is_run_on_placeholders_with_unknown_dimensions():
    """Each op has at least one case with a batch-like input (a `None` dimension)."""
    with_batch = {c.name for c in CASES if _has_batch(c)}
    # arange takes only scalars: it has no dimension to leave unknown.
    assert sorted(set(REQUIRED_OPS) - with_batch) == ['arange']
