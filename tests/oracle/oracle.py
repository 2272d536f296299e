"""Runs a backend function on torchk and on TensorFlow's Keras 2 backend and compares them.

The reference is `tf_keras.backend` (TF 2's Keras 2 backend). Where it differs from Keras
2.3.1's `tensorflow_backend.py`, a test calls instead the TF op that 2.3.1 calls, through
`tf.compat.v1` where needed. Both sides get the same numpy inputs. They must agree on
acceptance (both compute, or both raise) and on the results: shapes, dtypes and integer
values exactly, float32 values to a few ulps of float32.

torchk runs each function eagerly on torch tensors and, unless a test says otherwise, through
`K.function` on placeholders whose dimensions are unknown.
"""
import numpy as np
import tensorflow as tf
import tf_keras.backend as TK  # noqa: F401 (re-exported to the tests)
import tf_keras.src.backend as TK_SOURCE
import torch
from numpy.testing import assert_allclose, assert_array_equal

from torchk import core as K

RTOL = {'float16': 1e-2, 'float32': 2e-5, 'float64': 1e-10}

# Where tf_keras.backend lacks a function of Keras 2.3.1's backend or differs from it, the
# TF ops that 2.3.1's tensorflow_backend.py calls (name: (reference, why)).
KERAS_2_3_1 = {
    'identity': (tf.identity, 'not in tf_keras.backend'),
    'logsumexp': (lambda x, axis=None, keepdims=False: tf.reduce_logsumexp(x, axis, keepdims),
                  'not in tf_keras.backend'),
    'zeros_like': (lambda x: tf.zeros_like(x, dtype='float32'),
                   "2.3.1 gives floatx() by default; tf_keras keeps x's dtype"),
    'ones_like': (lambda x: tf.ones_like(x, dtype='float32'),
                  "2.3.1 gives floatx() by default; tf_keras keeps x's dtype"),
    'softmax': (lambda x, axis=-1: tf.nn.softmax(x, axis=axis),
                'tf_keras refuses 1-D inputs; 2.3.1 calls tf.nn.softmax on any rank'),
}


# Inputs TF refuses and torchk computes on (listed in docs/COMPATIBILITY.md): function: case.
TORCHK_EXTENDS = {
    'dot': 'a 1-D operand: torchk contracts it as numpy.dot does; tf.matmul needs rank 2',
    'repeat_elements': 'along an empty axis: torchk returns the empty tensor; TF splits the '
                       'axis into 0 pieces and refuses',
    'arange': 'a range that steps away from its stop: torchk returns an empty tensor '
              '(numpy.arange); tf.range refuses',
    'eye': 'a `(rows, columns)` size: torchk makes that matrix (as the numpy and Theano '
           'backends do); tf.eye takes an int',
    'ctc_batch_cost': 'a label_length of 0: torchk gives the all-blank loss; TF refuses the '
                      'batch ("Labels length is zero")',
    'ctc_decode': 'beam search asked for more top_paths than there are prefixes: torchk '
                  'pads with empty paths of log-probability -inf; TF refuses the batch',
    'depthwise_conv2d': 'strides that differ between the two axes (also in separable_conv2d): '
                        'torchk computes them; TF\'s depthwise kernels refuse unequal strides',
    'conv2d_transpose': 'a dilation rate that differs between the axes: torchk computes '
                        'it; 2.3.1 asserts they are equal (tf.nn.atrous_conv2d_transpose)',
}


class _KerasBackend231:
    """tf_keras.backend with Keras 2.3.1's functions where they differ (`KERAS_2_3_1`)."""

    def __getattr__(self, name):
        return reference(name)


TK231 = _KerasBackend231()


def _binary_crossentropy(target, output, from_logits=False):
    if not from_logits:  # 2.3.1 clips and takes logits; tf_keras adds epsilon in the logs
        epsilon = TK.epsilon()
        output = tf.clip_by_value(output, epsilon, 1 - epsilon)
        output = tf.math.log(output / (1 - output))
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)


def _batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    if x.shape.rank == 4 and axis in (3, -1):  # 2.3.1's fused kernel; NCHW only on GPUs
        mean, var, beta, gamma = (tf.reshape(v, [-1]) for v in (mean, var, beta, gamma))
        return tf.compat.v1.nn.fused_batch_norm(x, gamma, beta, mean, var, epsilon,
                                                data_format='NHWC', is_training=False)[0]
    return tf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


KERAS_2_3_1.update({
    'batch_normalization': (_batch_normalization, "tf_keras calls the fused kernel on every "
                            "4-D input, and refuses an axis other than 1 or 3 there"),
    'binary_crossentropy': (_binary_crossentropy, 'tf_keras computes probabilities with '
                            'epsilon added in the logs; 2.3.1 clips them and takes logits'),
    'is_tensor': (tf.is_tensor, 'not in tf_keras.backend'),
    'is_variable': (lambda x: isinstance(x, tf.Variable), 'not in tf_keras.backend'),
    'is_placeholder': (lambda x: getattr(getattr(x, 'op', None), 'type', None) == 'Placeholder',
                       'not in tf_keras.backend'),
    'control_dependencies': (tf.control_dependencies, 'not in tf_keras.backend'),
    'get_session': (TK_SOURCE.get_session, 'not exported by tf_keras.backend (TF 1 only)'),
    'set_session': (TK_SOURCE.set_session, 'not exported by tf_keras.backend (TF 1 only)'),
    'slice': (tf.slice, 'not in tf_keras.backend'),
    'moving_average_update': (
        lambda x, value, momentum: x.assign_sub(
            (x - tf.cast(value, x.dtype)) * tf.cast(tf.convert_to_tensor(1. - momentum),
                                                    x.dtype)),
        'tf_keras rounds `momentum` to float32, 2.3.1 rounds `1 - momentum`'),
    'size': (lambda x, name=None: tf.size(x, name=name), 'not in tf_keras.backend'),
    'local_conv1d': (lambda x, kernel, kernel_size, strides, data_format=None:
                     TK.local_conv1d(x, kernel, kernel_size, strides, 'channels_last'),
                     '2.3.1 reads the input as channels_last whatever data_format says'),
})


def reference(name):
    """The TF reference of backend function `name`: Keras 2.3.1's where tf_keras differs."""
    return KERAS_2_3_1[name][0] if name in KERAS_2_3_1 else getattr(TK, name)


def covers(*names):
    """Marks a test as comparing the backend functions `names` (counted by coverage.py)."""
    def mark(test):
        return test
    return mark


def to_numpy(value):
    """numpy of a tensor, variable, number, or (recursively) a list or tuple of them."""
    if isinstance(value, (list, tuple)):
        return [to_numpy(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value.numpy()
    return np.asarray(value)


def outcome(compute):
    """`(True, numpy result)` of `compute()`, or `(False, the exception it raised)`."""
    try:
        return True, to_numpy(compute())
    except Exception as error:  # any failure is a refusal, to compare with the other side
        return False, error


def assert_same(result, expected, rtol=None, atol=None, dtype=True, where=''):
    """`result` equals `expected` (numpy, or lists of them): shape, dtype (when `dtype`),
    integers and booleans exactly, floats to `rtol`/`atol` (defaults by dtype)."""
    if isinstance(expected, list):
        assert isinstance(result, list) and len(result) == len(expected), (where, result)
        for i, (r, e) in enumerate(zip(result, expected)):
            assert_same(r, e, rtol, atol, dtype, '%s[%d]' % (where, i))
        return
    assert result.shape == expected.shape, (where, result.shape, expected.shape)
    if dtype:
        assert result.dtype == expected.dtype, (where, result.dtype, expected.dtype)
    if expected.dtype.kind in 'fc':
        tolerance = RTOL.get(str(expected.dtype), 2e-5)
        assert_allclose(result, expected, rtol=tolerance if rtol is None else rtol,
                        atol=tolerance if atol is None else atol, err_msg=where)
    else:
        assert_array_equal(result, expected, err_msg=where)


def torchk_eager(fn, arrays):
    return fn(*[torch.from_numpy(np.array(a)) for a in arrays])


def _placeholder_shape(shape, known_shapes):
    if known_shapes == 'batch':
        return (None,) + tuple(shape[1:]) if shape else ()
    return tuple(shape) if known_shapes else (None,) * len(shape)


def torchk_graph(fn, arrays, known_shapes=False):
    """`fn` through `K.function` on placeholders: of unknown dimensions, of the arrays'
    shapes with `known_shapes`, or of unknown batch size only with `known_shapes='batch'`."""
    placeholders = [K.placeholder(shape=_placeholder_shape(a.shape, known_shapes),
                                  dtype=str(a.dtype)) for a in arrays]
    outputs = fn(*placeholders)
    several = isinstance(outputs, (list, tuple))
    values = K.function(placeholders, list(outputs) if several else [outputs])(list(arrays))
    return values if several else values[0]


def tf_eager(fn, arrays):
    return fn(*[tf.constant(a) for a in arrays])


def denormals_are_zero(array):
    """`array` with its subnormal floats set to 0, as TensorFlow's CPU kernels read them
    (TF computes with denormals flushed: 1e-45 == 0 there); torch computes on them."""
    if array.dtype.kind != 'f':
        return array
    return np.where(np.abs(array) < np.finfo(array.dtype).tiny, np.zeros_like(array), array)


def compare(torchk_fn, tf_fn, *arrays, rtol=None, atol=None, dtype=True, graph=True,
            known_shapes=False, extends=None):
    """Asserts that `torchk_fn(*arrays)` (eager, and through `K.function` unless `graph` is
    False) and `tf_fn(*arrays)` both raise, or both compute the same result. `extends`, a
    function of `TORCHK_EXTENDS`, lets torchk compute where TF raises.

    # Returns
        TF's result (numpy), or None where both raised.
    """
    arrays = [denormals_are_zero(np.asarray(a)) for a in arrays]
    tf_ok, expected = outcome(lambda: tf_eager(tf_fn, arrays))
    eager_ok, result = outcome(lambda: torchk_eager(torchk_fn, arrays))
    if eager_ok and not tf_ok and TORCHK_EXTENDS.get(extends):
        return None
    assert eager_ok == tf_ok, ('acceptance differs: torchk %s, TF %s'
                               % ('computes' if eager_ok else 'raises %r' % result,
                                  'computes' if tf_ok else 'raises %r' % expected))
    if not tf_ok:
        return None
    assert_same(result, expected, rtol, atol, dtype, 'eager')
    if graph:
        graph_ok, result = outcome(lambda: torchk_graph(torchk_fn, arrays, known_shapes))
        assert graph_ok, 'torchk eager computes, K.function raises %r' % result
        assert_same(result, expected, rtol, atol, dtype, 'K.function')
    return expected
