"""Random ops against TF's Keras 2 backend: not the draws (the generators differ) but the
distribution (two-sample Kolmogorov-Smirnov tests between torchk's and TF's samples, supports,
shapes and dtypes) and the seeding (TF 1 graph semantics: two ops of one seed draw the same
sequence, an op draws anew on each run, two seeds differ)."""
import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow as tf  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402
from scipy import stats  # noqa: E402

from oracle import TK, covers, to_numpy  # noqa: E402
from torchk import core as K  # noqa: E402

SAMPLES = 4000
# Both samples come from fixed seeds, so a test's outcome is fixed; a sound sampler fails
# this bound once in 10**4 draws of the seeds.
P_VALUE = 1e-4


def _distributions(draw):
    """(name, torchk sampler, TF sampler, support check) over `shape` and `seed`."""
    mean = draw(st.sampled_from([0., -1.5, 2.]))
    stddev = draw(st.sampled_from([1., 0.5, 2.]))
    low = draw(st.sampled_from([0., -2.]))
    high = low + draw(st.sampled_from([1., 3.]))
    p = draw(st.sampled_from([0., 0.3, 0.5, 1.]))
    dtype = draw(st.sampled_from(['float32', 'float64']))
    return [
        ('random_normal', lambda B, shape, seed: B.random_normal(shape, mean, stddev, dtype, seed),
         lambda v: True),
        ('random_uniform', lambda B, shape, seed: B.random_uniform(shape, low, high, dtype, seed),
         lambda v: ((v >= low) & (v < high)).all()),
        ('truncated_normal',
         lambda B, shape, seed: B.truncated_normal(shape, mean, stddev, dtype, seed),
         lambda v: (np.abs(v - mean) <= 2 * stddev * (1 + 1e-6)).all()),
        ('random_binomial', lambda B, shape, seed: B.random_binomial(shape, p, dtype, seed),
         lambda v: np.isin(v, [0., 1.]).all()),
        ('random_uniform_variable',
         lambda B, shape, seed: B.random_uniform_variable(shape, low, high, dtype, seed=seed),
         lambda v: ((v >= low) & (v < high)).all()),
        ('random_normal_variable',
         lambda B, shape, seed: B.random_normal_variable(shape, mean, stddev, dtype, seed=seed),
         lambda v: True),
    ]


NAMES = ['random_normal', 'random_uniform', 'truncated_normal', 'random_binomial',
         'random_uniform_variable', 'random_normal_variable']


@covers(*NAMES)
@pytest.mark.parametrize('index', range(len(NAMES)), ids=NAMES)
@given(data=st.data(), seed=st.integers(0, 2 ** 20))
def test_distribution(index, data, seed):
    name, sample, in_support = _distributions(data.draw)[index]
    ours = to_numpy(K.eval(sample(K, (SAMPLES,), seed)))
    theirs = to_numpy(sample(TK, (SAMPLES,), seed))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert in_support(ours) and in_support(theirs)
    if np.ptp(theirs) == 0:  # p of 0 or 1: a constant
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert stats.ks_2samp(ours, theirs).pvalue > P_VALUE, name


def _tf_graph_draws(make):
    """Runs, in a TF 1 graph, two ops from `make(seed)` of one seed (twice the first) and one
    of another seed: the four draws."""
    with tf.Graph().as_default():
        first, same, other = make(7), make(7), make(8)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return [session.run(first), session.run(first), session.run(same),
                    session.run(other)]


def _torchk_graph_draws(make):
    first, same, other = make(7), make(7), make(8)
    run = K.function([], [first, same, other])
    (a, b, c), (a2, _, _) = run([]), run([])
    return [a, a2, b, c]


def _seeding(draws):
    first, again, same_seed, other_seed = draws
    return {'same seed draws the same': np.array_equal(first, same_seed),
            'a new run draws anew': not np.array_equal(first, again),
            'another seed differs': not np.array_equal(first, other_seed)}


@covers('dropout')
@pytest.mark.parametrize('name', ['random_normal', 'random_uniform', 'truncated_normal',
                                  'random_binomial', 'dropout'])
def test_seeding(name):
    def make(backend):
        if name == 'dropout':
            return lambda seed: backend.dropout(backend.ones((50,)), 0.5, seed=seed)
        return lambda seed: getattr(backend, name)((50,), seed=seed) if name != \
            'random_binomial' else backend.random_binomial((50,), 0.5, seed=seed)
    expected = _seeding(_tf_graph_draws(make(TK)))
    assert _seeding(_torchk_graph_draws(make(K))) == expected


@given(level=st.sampled_from([0., 0.2, 0.5, 0.9]), seed=st.integers(0, 2 ** 20),
       per_row=st.booleans())
def test_dropout(level, seed, per_row):
    x = np.ones((SAMPLES // 4, 4), 'float32')
    noise_shape = (SAMPLES // 4, 1) if per_row else None
    ours = to_numpy(K.dropout(K.constant(x), level, noise_shape, seed))
    theirs = to_numpy(TK.dropout(tf.constant(x), level, noise_shape, seed))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    for values in (ours, theirs):
        np.testing.assert_allclose(np.unique(values), np.unique(
            [0., 1. / (1. - level)] if level else [1.]), rtol=1e-6)
        if per_row:
            assert (values == values[:, :1]).all()
    kept = [(v != 0).mean() for v in (ours, theirs)]
    count = ours.size // (4 if per_row else 1)
    # The kept fractions: binomial of `count` draws each, compared with a two-proportion test.
    pooled = np.mean(kept)
    spread = np.sqrt(max(pooled * (1 - pooled), 1e-12) * 2 / count)
    assert abs(kept[0] - kept[1]) <= 4.5 * spread + 1e-12
