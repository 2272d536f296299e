"""The identities pass (torchk/passes/identities.py): graphs run with the pass on and off give
the same outputs and gradients, and the identity ops are gone from the program."""
import operator

import numpy as np
import pytest

from torchk import core as K
from torchk.passes import identities


def _function(build, simplify):
    identities.set_enabled(simplify)
    try:
        inputs, outputs = build()
        return K.function(inputs, outputs)
    finally:
        identities.set_enabled(None)


@pytest.mark.parametrize('identity, dropped', [
    (lambda y: 1. * K.exp(y), operator.mul),
    (lambda y: K.exp(y) * 1, operator.mul),
    (lambda y: K.cast(y, 'float32'), K.cast.__wrapped__),
    (lambda y: K.mean(K.sum(y)), K.mean.__wrapped__),
    (lambda y: K.mean(K.sum(y, axis=-1, keepdims=True), axis=-1), K.mean.__wrapped__),
    (lambda y: K.mean(K.expand_dims(y, 1), axis=[1]), K.mean.__wrapped__),
], ids=['one_times', 'times_one', 'cast_to_own_dtype', 'mean_of_a_scalar',
        'mean_over_a_last_axis_of_one', 'mean_over_a_middle_axis_of_one'])
def test_identity_ops_are_dropped_with_the_same_values_and_gradients(identity, dropped):
    def build():
        x = K.placeholder(shape=(None, 3))
        w = K.variable(np.arange(3.) - 1.)
        y = identity(x + w)
        return [x], [y] + K.gradients(K.sum(K.square(y)), [x, w])
    feeds = [np.arange(6., dtype='float32').reshape(2, 3)]
    simplified = _function(build, True)
    plain = _function(build, False)
    for a, b in zip(simplified(feeds), plain(feeds)):
        np.testing.assert_array_equal(a, b)
    assert dropped not in _constants(simplified)
    assert dropped in _constants(plain)


def _constants(function):
    return list(function._program.__globals__.values())


@pytest.mark.parametrize('op', [
    lambda y: 2. * y,
    lambda y: K.cast(y, 'float64'),
    lambda y: K.mean(y),                          # not a scalar
    lambda y: K.mean(K.sum(y), keepdims=True),
], ids=['two_times', 'cast_to_other_dtype', 'mean_of_a_tensor', 'mean_keepdims'])
def test_other_ops_are_kept(op):
    def build():
        x = K.placeholder(shape=(2, 3))
        return [x], [op(x)]
    simplified = _function(build, True)
    plain = _function(build, False)
    feeds = [np.arange(6., dtype='float32').reshape(2, 3)]
    np.testing.assert_array_equal(simplified(feeds)[0], plain(feeds)[0])
    assert simplified._program.source == plain._program.source
