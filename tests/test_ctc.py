"""CTC: loss, greedy and beam-search decoding, dense-to-sparse labels (torchk/ctc.py).

References: a numpy CTC forward (alpha) recursion, brute-force sums over every frame path,
Keras' numpy backend for greedy decoding, an exhaustive search over labelings and a plain
dictionary-based prefix beam search for beam decoding.
"""
import collections
import itertools
import os

import numpy as np
import pytest
import torch

from reference import numpy_backend as npb
from torchk import config
from torchk.ctc import ctc_batch_cost, ctc_decode, ctc_label_dense_to_sparse


# ---------------------------------------------------------------------------------------
# numpy references; `log_probs` is one sample's `log(y_pred + epsilon)`, shape (T, C)

def _log_probs(y_pred):
    return np.log(np.asarray(y_pred, np.float64) + config.epsilon())


def _forward_nll(log_probs, labels):
    """-log p(labels) by the CTC forward recursion over the blank-interleaved labels."""
    blank = log_probs.shape[1] - 1
    extended = [blank]
    for label in labels:
        extended += [label, blank]
    alpha = np.full(len(extended), -np.inf)
    alpha[0] = log_probs[0, blank]
    if len(extended) > 1:
        alpha[1] = log_probs[0, extended[1]]
    for frame in log_probs[1:]:
        previous = alpha.copy()
        for s, label in enumerate(extended):
            total = previous[s]
            if s >= 1:
                total = np.logaddexp(total, previous[s - 1])
            if s >= 2 and label != blank and label != extended[s - 2]:
                total = np.logaddexp(total, previous[s - 2])
            alpha[s] = total + frame[label]
    return -np.logaddexp.reduce(alpha[-2:])


def _collapse(path, blank):
    labels = [label for label, _ in itertools.groupby(path)]
    return tuple(label for label in labels if label != blank)


def _labeling_log_probs(log_probs):
    """log p(labeling) of every reachable labeling, summed over all C**T frame paths."""
    steps, classes = log_probs.shape
    probs = collections.defaultdict(float)
    for path in itertools.product(range(classes), repeat=steps):
        probs[_collapse(path, classes - 1)] += np.exp(log_probs[np.arange(steps), path].sum())
    return {labeling: np.log(p) for labeling, p in probs.items()}


def _reference_beam_search(log_probs, width):
    """Prefix beam search with dictionaries: [(labeling, score)], best first.

    Scores are TensorFlow's: frames taken relative to their most likely class.
    """
    blank = log_probs.shape[1] - 1
    beams = {(): (0., -np.inf)}  # prefix -> (log p ending in blank, log p ending in label)
    for frame in log_probs - log_probs.max(1, keepdims=True):
        candidates = collections.defaultdict(lambda: [-np.inf, -np.inf])
        for prefix, (ends_blank, ends_label) in beams.items():
            total = np.logaddexp(ends_blank, ends_label)
            stay = candidates[prefix]
            stay[0] = np.logaddexp(stay[0], total + frame[blank])
            if prefix:
                stay[1] = np.logaddexp(stay[1], ends_label + frame[prefix[-1]])
            for label in range(blank):
                before = ends_blank if prefix and prefix[-1] == label else total
                child = candidates[prefix + (label,)]
                child[1] = np.logaddexp(child[1], before + frame[label])
        ranked = sorted(candidates.items(), key=lambda item: -np.logaddexp(*item[1]))
        beams = dict(ranked[:width])
    return [(prefix, np.logaddexp(*p)) for prefix, p in
            sorted(beams.items(), key=lambda item: -np.logaddexp(*item[1]))]


def _rows(decoded):
    """Decoded sequences of a `(samples, length)` -1-padded tensor, as tuples."""
    return [tuple(int(v) for v in row if v >= 0) for row in decoded]


def _random_softmax(rng, samples, steps, classes, sharpness=1.):
    logits = rng.normal(size=(samples, steps, classes)) * sharpness
    y = np.exp(logits)
    return y / y.sum(-1, keepdims=True)


def _feasible_labels(rng, steps, classes, max_labels):
    """Random labels (repeats included) that fit in `steps` frames, padded with -1."""
    while True:
        length = int(rng.integers(0, max_labels + 1))
        labels = rng.integers(0, classes - 1, size=length)
        if length + int(np.sum(labels[1:] == labels[:-1])) <= steps:
            return np.concatenate([labels, -np.ones(max_labels - length)]), length


# ---------------------------------------------------------------------------------------
# ctc_batch_cost

@pytest.mark.parametrize('seed', range(4))
def test_batch_cost_matches_forward_recursion(seed):
    rng = np.random.default_rng(seed)
    samples, steps, classes, max_labels = 5, 9, 4, 5
    y_pred = _random_softmax(rng, samples, steps, classes)
    input_length = rng.integers(1, steps + 1, size=(samples, 1))
    rows = [_feasible_labels(rng, int(n), classes, max_labels) for n in input_length[:, 0]]
    y_true = np.stack([labels for labels, _ in rows])
    label_length = np.array([[length] for _, length in rows])
    loss = ctc_batch_cost(torch.tensor(y_true), torch.tensor(y_pred),
                          torch.tensor(input_length), torch.tensor(label_length))
    expected = [_forward_nll(_log_probs(y_pred[i, :input_length[i, 0]]),
                             y_true[i, :label_length[i, 0]].astype(int))
                for i in range(samples)]
    assert loss.shape == (samples, 1) and loss.dtype == torch.float64
    np.testing.assert_allclose(loss[:, 0].numpy(), expected, rtol=1e-10)


def test_batch_cost_repeated_labels_need_a_blank_between():
    y_pred = torch.full((1, 3, 3), 1. / 3, dtype=torch.float64)
    loss = ctc_batch_cost([[1, 1]], y_pred, [[3]], [[2]])
    # 'a - a' is the only alignment of [a, a] in three frames.
    np.testing.assert_allclose(loss.item(), -3 * np.log(1. / 3 + config.epsilon()))


@pytest.mark.parametrize('steps,classes', [(1, 2), (3, 2), (4, 3), (5, 3)])
def test_batch_cost_matches_brute_force_over_alignments(steps, classes):
    rng = np.random.default_rng(steps * 10 + classes)
    y_pred = _random_softmax(rng, 1, steps, classes)
    labelings = _labeling_log_probs(_log_probs(y_pred[0]))
    for labeling, log_prob in labelings.items():
        y_true = torch.tensor([list(labeling) + [-1]], dtype=torch.float32)
        loss = ctc_batch_cost(y_true, torch.tensor(y_pred), [[steps]], [[len(labeling)]])
        np.testing.assert_allclose(loss.item(), -log_prob, rtol=1e-10)


def test_batch_cost_is_inf_when_repeats_leave_no_room_for_blanks():
    y_pred = torch.full((1, 2, 3), 1. / 3)
    assert ctc_batch_cost([[0, 0]], y_pred, [[2]], [[2]]).item() == float('inf')


def test_batch_cost_of_empty_labels_is_all_blanks():
    y_pred = torch.tensor(_random_softmax(np.random.default_rng(0), 2, 4, 3))
    loss = ctc_batch_cost(torch.full((2, 2), -1.), y_pred, [[4], [2]], [[0], [0]])
    blank_log_probs = _log_probs(y_pred[..., -1])
    np.testing.assert_allclose(loss[:, 0].numpy(), [-blank_log_probs[0].sum(),
                                                    -blank_log_probs[1, :2].sum()])


def test_batch_cost_of_blank_valued_labels_equals_tensorflow():
    """Keras' image_ocr batch (labels `[blank]`, label_length 1, for empty images) and other
    labels holding the blank, against TF's loss (tests/fixtures/make_ctc_blank_labels.py)."""
    fixture = np.load(os.path.join(os.path.dirname(__file__), 'fixtures',
                                   'ctc_blank_labels.npz'))
    loss = ctc_batch_cost(*[torch.tensor(fixture[name]) for name in
                            ('y_true', 'y_pred', 'input_length', 'label_length')])
    assert loss.dtype == torch.float32
    np.testing.assert_allclose(loss.numpy(), fixture['loss'], rtol=2e-6)


@pytest.mark.parametrize('steps', [2, 3, 6])
def test_batch_cost_of_labels_starting_with_the_blank(steps):
    # TF's kernel (no label before the blank): the last frame's blank counts as 1 + p.
    y_pred = torch.tensor(_random_softmax(np.random.default_rng(steps), 1, steps, 3))
    blank = _log_probs(y_pred[0, :, 2])
    expected = -blank[:-1].sum() - np.log1p(np.exp(blank[-1]))
    for y_true, label_length in (([[2, 0]], [[1]]), ([[2, 2]], [[2]])):
        loss = ctc_batch_cost(y_true, y_pred, [[steps]], label_length)
        np.testing.assert_allclose(loss.item(), expected, rtol=1e-6)


def test_batch_cost_ends_the_labels_at_the_first_blank():
    y_pred = torch.tensor(_random_softmax(np.random.default_rng(5), 1, 6, 4))
    loss = ctc_batch_cost([[0, 1, 3, 3]], y_pred, [[6]], [[4]])
    np.testing.assert_allclose(loss.item(), _forward_nll(_log_probs(y_pred[0]), [0, 1]),
                               rtol=1e-10)


def test_batch_cost_of_a_blank_in_one_frame_is_the_blank():
    y_pred = torch.tensor(_random_softmax(np.random.default_rng(6), 1, 3, 4))
    loss = ctc_batch_cost([[3]], y_pred, [[1]], [[1]])
    np.testing.assert_allclose(loss.item(), -_log_probs(y_pred[0, 0, 3]), rtol=1e-10)


def test_batch_cost_gradient_with_blank_valued_labels_matches_finite_differences():
    y_pred = torch.tensor(np.random.default_rng(7).uniform(0.05, 1., size=(2, 5, 4)),
                          requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda y: ctc_batch_cost([[3, 1], [0, 3]], y, [[5], [4]], [[1], [2]]), (y_pred,))


@pytest.mark.parametrize('length_dtype', [torch.int32, torch.int64, torch.float32])
@pytest.mark.parametrize('length_shape', [(2, 1), (2,)])
def test_batch_cost_accepts_keras_argument_forms(length_dtype, length_shape):
    y_pred = torch.tensor(_random_softmax(np.random.default_rng(1), 2, 6, 5), dtype=torch.float32)
    y_true = torch.tensor([[0., 3., -1.], [2., 2., 1.]])
    lengths = [torch.tensor(v, dtype=length_dtype).reshape(length_shape)
               for v in ([6, 5], [2, 3])]
    loss = ctc_batch_cost(y_true, y_pred, *lengths)
    expected = ctc_batch_cost(y_true.double(), y_pred.double(), [[6], [5]], [[2], [3]])
    assert loss.shape == (2, 1) and loss.dtype == torch.float32
    np.testing.assert_allclose(loss.numpy(), expected.numpy(), rtol=1e-5)


def test_batch_cost_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    # Unnormalized probabilities: torch's own ctc_loss gradient assumes log-softmax inputs.
    y_pred = torch.tensor(rng.uniform(0.05, 1., size=(3, 5, 4)), requires_grad=True)
    y_true = torch.tensor([[0, 2, -1], [1, 1, -1], [2, 0, 1]])

    def loss(y):
        return ctc_batch_cost(y_true, y, [[5], [4], [5]], [[2], [2], [3]])
    assert torch.autograd.gradcheck(loss, (y_pred,))


def test_batch_cost_gradient_through_softmax_trains_towards_the_labels():
    logits = torch.zeros(1, 6, 4, requires_grad=True)
    optimizer = torch.optim.SGD([logits], lr=1.)
    for _ in range(50):
        optimizer.zero_grad()
        ctc_batch_cost([[2, 0, 0]], logits.softmax(-1), [[6]], [[3]]).sum().backward()
        optimizer.step()
    decoded, _ = ctc_decode(logits.softmax(-1), [6])
    assert _rows(decoded[0]) == [(2, 0, 0)]


@pytest.mark.parametrize('y_true,input_length,label_length,fragment', [
    ([[0, 4]], [[4]], [[2]],
     'labels must lie in [0, 3] (class 3 is the blank); sample 0 has label 4'),
    ([[3, 1]], [[4]], [[2]], 'only blanks may follow it within label_length; sample 0 has '
     'label 1 after a blank'),
    ([[0, -1]], [[4]], [[2]], 'sample 0 has label -1'),
    ([[0, 1]], [[1]], [[2]], 'sample 0 has label_length 2, longer than its input_length (1)'),
    ([[0, 1]], [[5]], [[2]], 'sample 0 has input_length 5, longer than its time_steps (4)'),
    ([[0, 1]], [[-1]], [[0]], 'input_length must not be negative; sample 0 has -1'),
    ([[0, 1]], [[4]], [[-2]], 'label_length must not be negative; sample 0 has -2'),
    ([[0, 1]], [[4]], [[3]], 'label_length 3, longer than its row of y_true (2)'),
    ([[0, 1]], [[4], [4]], [[2]], 'input_length must hold one length per sample (1)'),
    ([0, 1], [[4]], [[2]], 'y_true must have rank 2'),
])
def test_batch_cost_errors(y_true, input_length, label_length, fragment):
    y_pred = torch.full((1, 4, 4), .25)
    with pytest.raises(ValueError) as info:
        ctc_batch_cost(y_true, y_pred, input_length, label_length)
    assert fragment in str(info.value)


def test_batch_cost_errors_name_the_first_bad_sample():
    y_pred = torch.full((3, 4, 4), .25)
    with pytest.raises(ValueError, match='sample 1 has label 7'):
        ctc_batch_cost([[0], [7], [9]], y_pred, [[4]] * 3, [[1]] * 3)


# ---------------------------------------------------------------------------------------
# Shape inference: value checks skip meta tensors; zero-filled inputs run through.

def test_value_checks_skip_meta_tensors():
    from torchk.ctc import _raise_on_first
    bad = torch.ones(2, dtype=torch.bool, device='meta')
    _raise_on_first([(bad, lambda i: 'never raised')])


@pytest.mark.parametrize('max_labels, steps', [(1, 4), (3, 1), (1, 1)])
def test_batch_cost_builds_on_placeholders_of_one_label_or_one_step(max_labels, steps):
    from torchk import core as K
    y_true, y_pred = K.placeholder(shape=(None, max_labels)), K.placeholder(shape=(None, steps, 3))
    lengths = [K.placeholder(shape=(None, 1), dtype='int32') for _ in range(2)]
    loss = ctc_batch_cost(y_true, y_pred, *lengths)
    assert K.int_shape(loss) == (None, 1)
    probs = _random_softmax(np.random.default_rng(8), 2, steps, 3).astype('float32')
    labels = np.zeros((2, max_labels), 'float32')
    ones = np.ones((2, 1), 'int32')
    result = K.function([y_true, y_pred] + lengths, [loss])([labels, probs, ones * steps, ones])
    expected = [_forward_nll(_log_probs(probs[i]), [0]) for i in range(2)]
    np.testing.assert_allclose(result[0][:, 0], expected, rtol=1e-5)


def test_zero_filled_inputs_give_the_output_shapes():
    y_pred = torch.zeros(3, 7, 5)
    lengths = torch.zeros(3, 1)
    assert ctc_batch_cost(torch.zeros(3, 4), y_pred, lengths, lengths).shape == (3, 1)
    decoded, log_prob = ctc_decode(y_pred, lengths[:, 0], greedy=False, beam_width=4,
                                   top_paths=2)
    assert [d.shape for d in decoded] == [(3, 0), (3, 0)] and log_prob.shape == (3, 2)
    assert ctc_label_dense_to_sparse(torch.zeros(3, 4), lengths).shape == (3, 4)


# ---------------------------------------------------------------------------------------
# Greedy decoding

@pytest.mark.parametrize('seed', range(5))
def test_greedy_decode_matches_numpy_backend(seed):
    rng = np.random.default_rng(seed)
    samples, steps, classes = 6, 12, 4
    y_pred = _random_softmax(rng, samples, steps, classes, sharpness=2.)
    input_length = rng.integers(1, steps + 1, size=samples)  # the reference fails on 0
    decoded, log_prob = ctc_decode(torch.tensor(y_pred, dtype=torch.float32), input_length)
    expected, expected_log_prob = npb.ctc_decode(y_pred, input_length)
    assert len(decoded) == 1 and decoded[0].dtype == torch.int64
    np.testing.assert_array_equal(decoded[0].numpy(), expected)
    np.testing.assert_allclose(log_prob.numpy(), expected_log_prob, rtol=1e-5)


def test_greedy_decode_merges_repeats_and_drops_blanks():
    frames = [1, 1, 2, 1, 0, 2, 2, 0, 0]  # blank = 2
    y_pred = np.eye(3)[frames][None] * .9 + .1 / 3
    decoded, _ = ctc_decode(y_pred, [len(frames)])
    assert _rows(decoded[0]) == [(1, 1, 0, 0)]


def test_greedy_decode_of_blanks_or_no_frames_is_empty():
    y_pred = np.eye(3)[[2, 0]][None] * np.ones((2, 1, 1))
    decoded, log_prob = ctc_decode(y_pred, [1, 0])
    assert decoded[0].shape == (2, 0)
    np.testing.assert_allclose(log_prob.numpy(), [[-np.log(1 + 1e-7)], [0.]])


# ---------------------------------------------------------------------------------------
# Beam-search decoding

@pytest.mark.parametrize('steps,classes', [(1, 3), (3, 2), (4, 3), (5, 3), (3, 4)])
def test_beam_search_with_a_wide_beam_is_exhaustive(steps, classes):
    rng = np.random.default_rng(steps * 10 + classes)
    y_pred = _random_softmax(rng, 2, steps, classes, sharpness=1.5)
    top_paths = 3
    decoded, log_prob = ctc_decode(torch.tensor(y_pred), [steps, steps], greedy=False,
                                   beam_width=200, top_paths=top_paths)
    for i in range(2):
        log_probs = _log_probs(y_pred[i])
        ranked = sorted(_labeling_log_probs(log_probs).items(), key=lambda item: -item[1])
        ranked += [((), -np.inf)] * top_paths  # fewer labelings than paths: empty and -inf
        best_frames = log_probs.max(1).sum()
        assert [_rows(d)[i] for d in decoded] == [seq for seq, _ in ranked[:top_paths]]
        np.testing.assert_allclose(log_prob[i].numpy(),
                                   [p - best_frames for _, p in ranked[:top_paths]])


@pytest.mark.parametrize('width', [1, 2, 3, 6])
def test_beam_search_matches_reference_prefix_beam_search(width):
    rng = np.random.default_rng(width)
    samples, steps, classes = 8, 10, 5
    y_pred = _random_softmax(rng, samples, steps, classes, sharpness=2.)
    input_length = rng.integers(0, steps + 1, size=samples)
    decoded, log_prob = ctc_decode(torch.tensor(y_pred), torch.tensor(input_length),
                                   greedy=False, beam_width=width, top_paths=width)
    for i in range(samples):
        expected = _reference_beam_search(_log_probs(y_pred[i, :input_length[i]]), width)
        expected += [((), -np.inf)] * (width - len(expected))
        assert [_rows(d)[i] for d in decoded] == [seq for seq, _ in expected]
        np.testing.assert_allclose(log_prob[i].numpy(), [p for _, p in expected])


def test_beam_search_top_paths_are_ordered_and_padded():
    rng = np.random.default_rng(7)
    y_pred = torch.tensor(_random_softmax(rng, 4, 15, 6, sharpness=2.), dtype=torch.float32)
    decoded, log_prob = ctc_decode(y_pred, [15, 9, 3, 0], greedy=False, beam_width=20,
                                   top_paths=5)
    assert len(decoded) == 5 and log_prob.shape == (4, 5) and log_prob.dtype == torch.float32
    assert torch.all(log_prob[:, :-1] >= log_prob[:, 1:])
    assert log_prob[3, 0] == 0 and torch.all(log_prob[3, 1:] == float('-inf'))
    for path in decoded:
        lengths = (path >= 0).sum(1)
        assert path.shape[1] == lengths.max()
        assert all(torch.all(row[n:] == -1) and torch.all(row[:n] >= 0)
                   for row, n in zip(path, lengths))
    assert len(set(_rows(d)[0] for d in decoded)) == 5


def test_beam_search_merge_repeated():
    # "a - a" is by far the likeliest alignment: labeling (a, a).
    y_pred = np.array([[[.9, .05, .05], [.05, .05, .9], [.9, .05, .05]]])
    kept, _ = ctc_decode(y_pred, [3], greedy=False, beam_width=4)
    merged, _ = ctc_decode(y_pred, [3], greedy=False, beam_width=4, merge_repeated=True)
    assert _rows(kept[0]) == [(0, 0)] and _rows(merged[0]) == [(0,)]


def test_beam_search_scores_frames_relative_to_their_best_class():
    y_pred = np.array([[[.5, .2, .3]]])  # one frame: labelings (), (0,) and (1,)
    _, log_prob = ctc_decode(y_pred, [1], greedy=False, beam_width=3, top_paths=3)
    np.testing.assert_allclose(log_prob[0].numpy(), np.log(np.array([.5, .3, .2]) + 1e-7)
                               - np.log(.5 + 1e-7))


@pytest.mark.parametrize('kwargs,input_length,fragment', [
    (dict(greedy=False, beam_width=2, top_paths=3), [3],
     'top_paths (3) must be at least 1 and at most beam_width (2)'),
    (dict(greedy=False, top_paths=0), [3], 'top_paths (0) must be at least 1'),
    (dict(), [4], 'sample 0 has input_length 4, longer than its time_steps (3)'),
    (dict(), [-1], 'input_length must not be negative; sample 0 has -1'),
    (dict(), [3, 3], 'input_length must hold one length per sample (1)'),
])
def test_decode_errors(kwargs, input_length, fragment):
    with pytest.raises(ValueError) as info:
        ctc_decode(torch.full((1, 3, 3), 1. / 3), input_length, **kwargs)
    assert fragment in str(info.value)


# ---------------------------------------------------------------------------------------
# ctc_label_dense_to_sparse

def test_dense_to_sparse_round_trip():
    labels = torch.tensor([[3., 1., -1., -1.], [2., 2., 0., 5.], [-1., -1., -1., -1.]])
    sparse = ctc_label_dense_to_sparse(labels, torch.tensor([2, 4, 0]))
    assert sparse.is_sparse and sparse.dtype == torch.int64 and sparse.shape == (3, 4)
    np.testing.assert_array_equal(sparse.to_dense().numpy(),
                                  [[3, 1, 0, 0], [2, 2, 0, 5], [0, 0, 0, 0]])
    np.testing.assert_array_equal(sparse.coalesce().indices().numpy(),
                                  [[0, 0, 1, 1, 1, 1], [0, 1, 0, 1, 2, 3]])


@pytest.mark.parametrize('lengths,fragment', [
    ([[3]], 'sample 0 has label length 3, longer than its row (2)'),
    ([[-1]], 'label length must not be negative; sample 0 has -1'),
])
def test_dense_to_sparse_errors(lengths, fragment):
    with pytest.raises(ValueError) as info:
        ctc_label_dense_to_sparse([[1, 2]], lengths)
    assert fragment in str(info.value)
