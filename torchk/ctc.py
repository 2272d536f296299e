"""Connectionist temporal classification: the loss, greedy and beam-search decoding, labels.

The conventions are the TensorFlow backend's: `y_pred` holds softmax probabilities
`(samples, time, classes)`, the blank is the last class, and every function works on
`log(y_pred + epsilon)`.

Labels equal to the blank class are accepted as TensorFlow's `ctc_loss` accepts them: the
first blank ends the sample's labels (the entries after it, within `label_length`, must be
blanks too), and a sample whose labels start with the blank gets TensorFlow's value for it
(see `_blank_first_correction`).

Where torchk differs from TensorFlow:
- `ctc_batch_cost` raises ValueError for a `label_length` that is negative or longer than
  `y_true`'s rows; TensorFlow silently truncates the labels to the row.
- `ctc_batch_cost` raises ValueError for a label above the blank class; TensorFlow, outside
  its documented domain, reads it as the blank.
- `ctc_batch_cost` computes the all-blank loss for a `label_length` of 0, where TensorFlow
  fails the batch ("Labels length is zero").
- `ctc_batch_cost` of labels starting with the blank and an `input_length` of 1 is
  `-log p(blank)`; TensorFlow's kernel writes out of its buffer there and may crash.
- `ctc_decode(greedy=False)` returns an empty path (all `-1`) with log-probability `-inf`
  where fewer than `top_paths` prefixes exist; TensorFlow fails the whole batch.
- The beam search keeps, at each frame, the `beam_width` best of all candidate prefixes.
  TensorFlow's decoder, which inserts candidates one by one, also drops for that frame the
  extensions of a beam that was pushed out and then revisited from its parent; so when the
  beam is full the two can keep different prefixes (they agree otherwise).
"""
import torch
import torch.nn.functional as F

from . import config
from . import dtypes
from .graph import inferring, op

__all__ = ['ctc_batch_cost', 'ctc_decode', 'ctc_label_dense_to_sparse']

_NEG_INF = float('-inf')


def _lengths(x, samples, name, fn, device):
    """Returns lengths of any int or float dtype, shape `(samples,)` or `(samples, 1)`, as int64."""
    lengths = torch.as_tensor(x, device=device).reshape(-1).to(torch.int64)
    if lengths.shape[0] != samples:
        raise ValueError('%s: %s must hold one length per sample (%d), got shape %s.'
                         % (fn, name, samples, tuple(torch.as_tensor(x).shape)))
    return lengths


def _check_rank(x, rank, name, fn):
    if x.dim() != rank:
        raise ValueError('%s: %s must have rank %d, got shape %s.'
                         % (fn, name, rank, tuple(x.shape)))


def _raise_on_first(checks):
    """Raises ValueError for the first sample flagged by a `(mask, message)` check.

    `mask` flags bad samples, `message(i)` describes sample `i`. Graph shape inference runs
    ops on meta tensors, which have shapes but no values, so there the checks are skipped.
    """
    if checks[0][0].device.type == 'meta':
        return
    flags = torch.stack([mask.any() for mask, _ in checks]).tolist()  # one device sync
    for (mask, message), flagged in zip(checks, flags):
        if flagged:
            raise ValueError(message(int(mask.nonzero()[0, 0])))


def _length_checks(lengths, name, limits, fn):
    """Checks for `_raise_on_first` that `0 <= lengths <= limit` for each `(limit, its name)`
    of `limits`, a limit being an int or a per-sample tensor."""
    def too_long(limit, limit_name):
        limit = torch.as_tensor(limit, device=lengths.device).expand_as(lengths)
        return (lengths > limit,
                lambda i: '%s: sample %d has %s %d, longer than its %s (%d).'
                % (fn, i, name, lengths[i], limit_name, limit[i]))
    return ([(lengths < 0, lambda i: '%s: %s must not be negative; sample %d has %d.'
              % (fn, name, i, lengths[i]))]
            + [too_long(limit, limit_name) for limit, limit_name in limits])


def _log_probs(y_pred):
    """`log(y_pred + epsilon)`, computed in float32 at least."""
    if y_pred.dtype not in (torch.float32, torch.float64):
        y_pred = y_pred.float()
    return torch.log(y_pred + config.epsilon())


def _label_mask(labels, label_length):
    """Marks the entries of `labels` `(samples, max_labels)` within each sample's length."""
    positions = torch.arange(labels.shape[1], device=labels.device)
    return positions < label_length[:, None]


@op
def ctc_label_dense_to_sparse(labels, label_lengths):
    """Converts CTC labels from dense to sparse.

    # Arguments
        labels: dense labels `(samples, max_labels)`; entries past a sample's length are
            ignored, whatever they hold.
        label_lengths: length of each sample's labels, shape `(samples,)` or `(samples, 1)`.

    # Returns
        A torch sparse COO tensor of int64 with the shape of `labels`, holding
        `labels[i, :label_lengths[i]]` for each sample `i`.

    # Raises
        ValueError: if `labels` is not 2-D, or a length is negative or longer than the rows.
    """
    fn = 'ctc_label_dense_to_sparse'
    labels = torch.as_tensor(labels)
    _check_rank(labels, 2, 'labels', fn)
    lengths = _lengths(label_lengths, labels.shape[0], 'label_lengths', fn, labels.device)
    _raise_on_first(_length_checks(lengths, 'label length', [(labels.shape[1], 'row')], fn))
    mask = _label_mask(labels, lengths)
    return torch.sparse_coo_tensor(mask.nonzero().t(), labels[mask].to(torch.int64),
                                   tuple(labels.shape), is_coalesced=True,
                                   check_invariants=False)


def _at_least_float32(y_pred):
    """`y_pred` in float32 if it is float16 or bfloat16 (a mixed precision model's output):
    CTC computes in float32, as TF does (`torchk.mixed_precision`)."""
    if y_pred.dtype in dtypes.HALF_PRECISION:
        return y_pred.float()
    return y_pred


@op
def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """Runs the CTC loss algorithm on each batch element.

    # Arguments
        y_true: labels `(samples, max_labels)`, any numeric dtype; entries past
            `label_length` may hold anything (e.g. -1). A label equal to the blank class
            ends the sample's labels, as in TensorFlow (e.g. Keras' image_ocr example
            feeds `[blank]` with `label_length` 1 for an empty image).
        y_pred: softmax output `(samples, time_steps, num_categories)`; the last category
            is the blank.
        input_length: `(samples, 1)` number of valid time steps of each sample of `y_pred`.
        label_length: `(samples, 1)` number of labels of each sample of `y_true`.

    # Returns
        Tensor `(samples, 1)`: each sample's negative log-likelihood
        `-log p(labels | log(y_pred + epsilon))`. It is `inf` when repeated labels leave too
        few time steps for the blanks they need between them (as in TensorFlow).

    # Raises
        ValueError: if a shape is wrong, a label is negative, above the blank class or
            not the blank after a blank, a length is negative, an `input_length` exceeds
            `time_steps`, a `label_length` exceeds `max_labels` or its sample's
            `input_length`.

    # Example
    ```python
        >>> y_pred = K.softmax(K.random_normal((2, 10, 5)))  # 4 labels + blank
        >>> y_true = np.array([[1, 2, 2], [3, -1, -1]])
        >>> K.ctc_batch_cost(y_true, y_pred, [[10], [8]], [[3], [1]])  # shape (2, 1)
    ```
    """
    fn = 'ctc_batch_cost'
    y_pred = _at_least_float32(torch.as_tensor(y_pred))
    _check_rank(y_pred, 3, 'y_pred', fn)
    samples, steps, classes = y_pred.shape
    labels = torch.as_tensor(y_true, device=y_pred.device)
    _check_rank(labels, 2, 'y_true', fn)
    if labels.shape[0] != samples:
        raise ValueError('%s: y_true has %d samples but y_pred has %d.'
                         % (fn, labels.shape[0], samples))
    input_length = _lengths(input_length, samples, 'input_length', fn, y_pred.device)
    label_length = _lengths(label_length, samples, 'label_length', fn, y_pred.device)
    if inferring():
        # Example lengths need not fit the example shapes (a length of 2 for rows of one
        # label); the shape of the result does not depend on them.
        input_length, label_length = input_length * 0, label_length * 0
    labels = labels.to(torch.int64)
    mask = _label_mask(labels, label_length)
    blank = classes - 1
    out_of_range = mask & ((labels < 0) | (labels > blank))
    is_blank = mask & (labels == blank)
    after_blank = mask & (is_blank.cumsum(1) > 0) & ~is_blank
    _raise_on_first(
        _length_checks(input_length, 'input_length', [(steps, 'time_steps')], fn)
        + _length_checks(label_length, 'label_length',
                         [(labels.shape[1], 'row of y_true'), (input_length, 'input_length')],
                         fn)
        + [(out_of_range.any(1),
            lambda i: '%s: labels must lie in [0, %d] (class %d is the blank); sample %d '
            'has label %d.' % (fn, blank, blank, i, labels[i][out_of_range[i]][0])),
           (after_blank.any(1),
            lambda i: '%s: a blank label (class %d) ends the labels, so only blanks may '
            'follow it within label_length; sample %d has label %d after a blank.'
            % (fn, blank, i, labels[i][after_blank[i]][0]))])
    # The labels of a sample end at its first blank (TensorFlow's "null label").
    target_length = torch.where(is_blank.any(1), is_blank.to(torch.int8).argmax(1),
                                label_length)
    targets = torch.where(_label_mask(labels, target_length), labels, 0)
    log_probs = _log_probs(y_pred).transpose(0, 1)
    # torch's ctc_loss backward assumes log-softmax inputs (its gradient adds
    # exp(log_probs)), so it is fed normalized frames; as every alignment takes one class
    # per valid frame, adding the frames' log-normalizers back gives the exact loss.
    normalizer = torch.logsumexp(log_probs, -1)
    normalized = log_probs - normalizer[..., None]
    loss = F.ctc_loss(normalized, targets, input_length, target_length, blank=blank,
                      reduction='none')
    loss = loss - _blank_first_correction(normalized[..., blank], input_length,
                                          (target_length == 0) & (label_length > 0))
    valid = torch.arange(steps, device=y_pred.device)[:, None] < input_length
    loss = loss - torch.where(valid, normalizer, 0).sum(0)
    return loss[:, None].to(y_pred.dtype)


def _blank_first_correction(blank_log_probs, input_length, blank_first):
    """What TensorFlow's loss subtracts from the all-blank loss for labels starting with the
    blank: `log(1 + 1 / p)`, `p` the blank's probability in the last valid frame.

    TensorFlow's kernel, given no label before the blank, runs its recursions over the one
    state "blank" and, writing its backward start for a state before the first, sets that
    state's backward value one frame early; its loss is then
    `-sum(log p_t(blank), t < T - 1) - log(1 + p_{T-1}(blank))` for `T >= 2` valid frames.

    # Arguments
        blank_log_probs: `(time_steps, samples)` normalized log-probabilities of the blank.
        input_length: `(samples,)` valid frames of each sample.
        blank_first: `(samples,)` flags the samples whose labels start with the blank.

    # Returns
        `(samples,)` the amount, 0 where a sample is not flagged or has fewer than 2 frames.
    """
    last = blank_log_probs.gather(0, (input_length - 1).clamp(min=0)[None])[0]
    return torch.where(blank_first & (input_length >= 2), F.softplus(-last), 0)


# The decoded sequences (result[0]) are as long as the longest decoding: a value, not a shape.
@op(dynamic_axes=lambda path: (1,) if path[0] == 0 else ())
def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1,
               merge_repeated=False):
    """Decodes the output of a softmax.

    Uses either greedy search (also known as best path) or beam search (CTC prefix beam
    search, TensorFlow's `ctc_beam_search_decoder`).

    # Arguments
        y_pred: softmax output `(samples, time_steps, num_categories)`; the last category
            is the blank.
        input_length: `(samples,)` number of valid time steps of each sample.
        greedy: perform the much faster best-path search if `True`.
        beam_width: if `greedy` is `False`, the number of prefixes the beam search keeps.
        top_paths: if `greedy` is `False`, how many of the most probable label sequences
            to return.
        merge_repeated: if `greedy` is `False`, merge repeated classes in the output beams
            (greedy decoding always merges repeats).

    # Returns
        Tuple:
            List: `[decoded]` if `greedy`, else the `top_paths` most probable sequences,
                most probable first; each an int64 tensor `(samples, max_decoded_length)`
                padded with `-1`.
            Tensor: if `greedy`, `(samples, 1)`: minus the sum of each frame's highest
                log-probability. Else `(samples, top_paths)`: each sequence's log-probability
                relative to the best frames, `log p(sequence) - sum_t max_c log y[t, c]`
                (TensorFlow's scores), `-inf` where fewer than `top_paths` prefixes exist.
            All log-probabilities are taken of `y_pred + epsilon`.

    # Raises
        ValueError: if a shape is wrong, an `input_length` is negative or exceeds
            `time_steps`, or `top_paths` is not in `[1, beam_width]`.
    """
    fn = 'ctc_decode'
    y_pred = _at_least_float32(torch.as_tensor(y_pred).detach())
    _check_rank(y_pred, 3, 'y_pred', fn)
    samples, steps, _ = y_pred.shape
    input_length = _lengths(input_length, samples, 'input_length', fn, y_pred.device)
    _raise_on_first(_length_checks(input_length, 'input_length', [(steps, 'time_steps')], fn))
    log_probs = _log_probs(y_pred)
    valid = torch.arange(steps, device=y_pred.device) < input_length[:, None]
    if greedy:
        decoded, log_prob = _greedy_decode(log_probs, valid)
    else:
        if not 1 <= top_paths <= beam_width:
            raise ValueError('%s: top_paths (%d) must be at least 1 and at most beam_width '
                             '(%d).' % (fn, top_paths, beam_width))
        decoded, log_prob = _beam_search_decode(log_probs, valid, beam_width, top_paths,
                                                merge_repeated)
    return decoded, log_prob.to(y_pred.dtype)


def _pack(labels, keep):
    """Moves the kept entries of each row of `labels` to the left; pads with -1.

    Returns an int64 tensor `(samples, most kept in a row)`.
    """
    counts = keep.sum(1)
    width = int(counts.max()) if counts.numel() else 0
    position = torch.where(keep, keep.cumsum(1) - 1, labels.shape[1])
    packed = torch.full((labels.shape[0], labels.shape[1] + 1), -1, dtype=torch.int64,
                        device=labels.device)
    packed.scatter_(1, position, torch.where(keep, labels, -1))
    return packed[:, :width]


def _greedy_decode(log_probs, valid):
    """Best path: each frame's top class, repeats merged, blanks dropped."""
    blank = log_probs.shape[-1] - 1
    best = log_probs.argmax(-1)
    best_log_prob = log_probs.gather(2, best[..., None])[..., 0]
    best = torch.where(valid, best, blank)
    previous = F.pad(best[:, :-1], (1, 0), value=-1)
    decoded = _pack(best, (best != blank) & (best != previous))
    return [decoded], -torch.where(valid, best_log_prob, 0).sum(1, keepdim=True)


# Prefixes are identified by two polynomial hashes modulo 31-bit primes, packed into one
# int64 key: distinct prefixes in a beam collide with probability about 2**-62.
_HASHES = ((1000003, 2147483647), (999983, 2147483629))


def _grow_keys(keys, labels):
    """Keys of the prefixes `keys` stand for, each extended by its entry of `labels`."""
    (base_1, modulus_1), (base_2, modulus_2) = _HASHES
    hash_1 = (keys // modulus_2 * base_1 + labels + 1) % modulus_1
    hash_2 = (keys % modulus_2 * base_2 + labels + 1) % modulus_2
    return hash_1 * modulus_2 + hash_2


def _find_parents(keys, parent_keys, live):
    """Finds, for each beam, the live beam whose prefix is its own less its last label.

    Returns `(parent index, has a parent)`, each `(samples, width)`.
    """
    sorted_keys, order = torch.where(live, keys, -2).sort(-1)
    position = torch.searchsorted(sorted_keys, parent_keys).clamp(max=keys.shape[1] - 1)
    found = (sorted_keys.gather(1, position) == parent_keys) & live
    return order.gather(1, position), found


def _beam_search_decode(log_probs, valid, width, top_paths, merge_repeated):
    """CTC prefix beam search over all samples at once, as TensorFlow's decoder.

    Each beam is a label prefix with the log-probabilities of its alignments ending in a
    blank and in its last label. At every frame, each beam either stays (a blank or a
    repeat of its last label) or grows by a label; a grown prefix that is already a beam
    adds to that beam. The `width` best candidates survive. Frames are scored relative to
    their most likely class, as TensorFlow does. Prefixes are read back at the end from
    each step's record of where every beam came from and which label it added.
    """
    samples, steps, classes = log_probs.shape
    blank = classes - 1
    device = log_probs.device
    log_probs = log_probs - log_probs.amax(-1, keepdim=True)
    beam_ids = torch.arange(width, device=device).expand(samples, -1)
    last = torch.full((samples, width), -1, dtype=torch.int64, device=device)
    keys = torch.zeros((samples, width), dtype=torch.int64, device=device)
    parent_keys = torch.full((samples, width), -1, dtype=torch.int64, device=device)
    ends_blank = torch.full((samples, width), _NEG_INF, dtype=log_probs.dtype, device=device)
    ends_blank[:, 0] = 0.
    ends_label = torch.full_like(ends_blank, _NEG_INF)
    sources, added = [], []
    for t in range(steps):
        frame = log_probs[:, t]
        total = torch.logaddexp(ends_blank, ends_label)
        last_log_prob = frame.gather(1, last.clamp(min=0))
        stay_blank = total + frame[:, blank:]
        stay_label = ends_label + last_log_prob
        # Growth by each class; the blank's column is a spare slot, dropped below.
        grown = total[..., None] + frame[:, None]
        # Repeating the last label starts a new symbol only after a blank.
        grown.scatter_(2, torch.where(last >= 0, last, blank)[..., None],
                       (ends_blank + last_log_prob)[..., None])
        grown = grown.reshape(samples, -1)
        # A grown prefix that is already a beam adds to that beam instead.
        parent, has_parent = _find_parents(keys, parent_keys, total > _NEG_INF)
        child = torch.where(has_parent, parent * classes + last, blank)
        stay_label = torch.where(has_parent,
                                 torch.logaddexp(stay_label, grown.gather(1, child)),
                                 stay_label)
        grown.scatter_(1, child, _NEG_INF)
        scores = torch.cat([torch.logaddexp(stay_blank, stay_label),
                            grown.reshape(samples, width, classes)[..., :blank]
                            .reshape(samples, -1)], 1)
        best, pick = scores.topk(width, dim=1)
        active = valid[:, t, None]
        is_grown = (pick >= width) & active
        source = torch.where(is_grown, (pick - width) // max(blank, 1),
                             torch.where(active, pick, beam_ids))
        label = torch.where(is_grown, (pick - width) % max(blank, 1), -1)
        source_keys = keys.gather(1, source)
        last = torch.where(is_grown, label, last.gather(1, source))
        parent_keys = torch.where(is_grown, source_keys, parent_keys.gather(1, source))
        keys = torch.where(is_grown, _grow_keys(source_keys, label), source_keys)
        ends_blank = torch.where(
            active, torch.where(is_grown, _NEG_INF, stay_blank.gather(1, source)), ends_blank)
        ends_label = torch.where(
            active, torch.where(is_grown, best, stay_label.gather(1, source)), ends_label)
        sources.append(source)
        added.append(label)
    log_prob, beam = torch.logaddexp(ends_blank, ends_label).topk(top_paths, dim=1)
    labels = []
    for source, label in zip(reversed(sources), reversed(added)):
        labels.append(label.gather(1, beam))
        beam = source.gather(1, beam)
    labels = torch.stack(labels[::-1], -1) if labels else beam.new_zeros(beam.shape + (0,))
    labels = labels.masked_fill(log_prob[..., None] == _NEG_INF, -1)
    decoded = []
    for path in range(top_paths):
        sequence = _pack(labels[:, path], labels[:, path] >= 0)
        if merge_repeated:
            previous = F.pad(sequence[:, :-1], (1, 0), value=-1)
            sequence = _pack(sequence, (sequence >= 0) & (sequence != previous))
        decoded.append(sequence)
    return decoded, log_prob
