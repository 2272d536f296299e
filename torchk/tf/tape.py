"""`tf.GradientTape` on torch autograd.

torch records every computation on tensors that require gradients, so a tape has little to
record: torchk variables are `torch.nn.Parameter`s that require gradients (every trainable
variable is watched, as TF watches the variables a tape reads), `watch` makes a constant
require gradients, and `gradient` calls `torch.autograd.grad`.

Two choices follow from autograd's design:
- graphs are kept after `gradient` (`retain_graph=True`): two tapes over one forward pass
  (a GAN's generator and discriminator tapes) differentiate through the same nodes, and
  autograd frees a graph once its tensors are no longer referenced anyway;
- a gradient computed while a tape is recording (an outer tape's block, or its own) is
  itself differentiable (`create_graph=True`): nested tapes give second derivatives.

In a step being recorded as a program (`tracing`), the target is a symbol and `gradient` is
`K.gradients`: the program's backward pass.
"""
import contextlib
import warnings

import torch

from .. import array_ops
from .. import function
from .. import graph
from .. import structure
from . import tracing

_RECORDING = []
_UNCONNECTED = ('none', 'zero')


def note_variables_read(variables):
    """Tells the tapes recording now that `variables` were read (by a function restored from
    a SavedModel): their trainable ones are among `watched_variables()`, as TF's tapes list
    the variables they saw read."""
    for tape in _RECORDING:
        if tape._watch_accessed_variables:
            known = {id(v) for v in tape._watched}
            tape._watched.extend(v for v in variables
                                 if getattr(v, 'trainable', False) and id(v) not in known)


class GradientTape:
    """Records operations for automatic differentiation (TF's `tf.GradientTape`).

    # Arguments
        persistent: if True, `gradient` may be called several times.
        watch_accessed_variables: if False, only tensors and variables passed to `watch`
            get gradients (the others give None).

    # Example
    ```python
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)  # 6.0
    ```
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._watched = []
        self._used = False
        self._grad_mode = None
        self._reset_at = None

    def __enter__(self):
        self._grad_mode = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        _RECORDING.append(self)
        return self

    def __exit__(self, *exc_info):
        _RECORDING.remove(self)
        torch.set_grad_enabled(self._grad_mode)
        return False

    def watch(self, tensor):
        """Makes `tensor` (a tensor, a variable, or a nested structure of them) differentiable.

        A tensor that does not require gradients is switched to require them, in place: its
        later uses, inside or outside the tape, are recorded too. An integer or boolean
        tensor is not watched: as in TF, a warning says so and its gradient is None.

        # Raises
            TypeError: if a leaf is not a torch tensor.
        """
        for leaf in structure.flatten(tensor):
            if graph.is_symbol(leaf) and tracing.current() is not None:
                self._watched.append(leaf)
                continue
            if not isinstance(leaf, torch.Tensor):
                raise TypeError('GradientTape.watch expects tensors or variables; got %r.'
                                % (leaf,))
            if not (leaf.is_floating_point() or leaf.is_complex()):
                warnings.warn('The dtype of the watched tensor must be floating (e.g. '
                              'tf.float32), got tf.%s' % str(leaf.dtype).replace('torch.', ''),
                              stacklevel=2)
                continue
            if not leaf.requires_grad:
                leaf.requires_grad_(True)
            self._watched.append(leaf)

    def watched_variables(self):
        """Returns the tensors and variables passed to `watch`, and the trainable variables
        that restored SavedModel functions read (`note_variables_read`)."""
        return tuple(self._watched)

    @contextlib.contextmanager
    def stop_recording(self):
        """A context in which operations are not recorded (`torch.no_grad`)."""
        with torch.no_grad():
            yield

    def reset(self):
        """Forgets what the tape recorded so far, as a new tape would: gradients do not flow
        through the operations computed before (their results are constants), and the tape
        may compute gradients again."""
        self._watched = []
        self._used = False
        self._reset_at = _next_node_number()

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients='none'):
        """Gradients of `target` with respect to `sources`.

        # Arguments
            target: a tensor, or a nested structure of tensors (their gradients are summed).
                A non-scalar target is differentiated as the sum of its elements, as in TF.
            sources: a tensor or variable, or a nested structure of them.
            output_gradients: optional gradients of `target` (same structure), in place of ones.
            unconnected_gradients: `'none'` (None for a source `target` does not depend on)
                or `'zero'` (zeros of the source's shape).

        # Returns
            The gradients in the structure of `sources`.

        # Raises
            RuntimeError: if a non-persistent tape computes gradients a second time.
            ValueError: for another `unconnected_gradients`.
        """
        unconnected = self._start('gradient', unconnected_gradients)
        if tracing.current() is not None and any(
                graph.is_symbol(t) for t in structure.flatten(target)):
            return self._recorded_gradient(target, sources, output_gradients, unconnected)
        return self._gradient(target, sources, output_gradients, unconnected)

    def _recorded_gradient(self, target, sources, output_gradients, unconnected):
        """`gradient` in a step being recorded (`tracing`): `K.gradients` of the targets'
        sum (each weighted by its output gradient)."""
        targets = structure.flatten(target)
        seeds = (structure.flatten(output_gradients) if output_gradients is not None
                 else [None] * len(targets))
        total = None
        for t, seed in zip(targets, seeds):
            if not graph.is_symbol(t):
                continue
            term = t if seed is None else t * function.stop_gradient(seed)
            total = term if total is None else total + term
        flat_sources = structure.flatten(sources)
        wanted = [i for i, s in enumerate(flat_sources) if self._differentiable(s)]
        grads = [None] * len(flat_sources)
        for i, g in zip(wanted, function.gradients(total, [flat_sources[i] for i in wanted])):
            grads[i] = g
        if unconnected == 'zero':
            grads = [array_ops.zeros_like(s) if g is None else g
                     for s, g in zip(flat_sources, grads)]
        return structure.pack_as(sources, grads)

    def _start(self, method, unconnected_gradients):
        """Checks a use of the tape (`method`, for errors); returns `unconnected_gradients`
        as a string."""
        unconnected = getattr(unconnected_gradients, 'value', unconnected_gradients)
        if unconnected not in _UNCONNECTED:
            raise ValueError('unconnected_gradients must be one of %s; got %r.'
                             % (', '.join(map(repr, _UNCONNECTED)), unconnected_gradients))
        if self._used and not self._persistent:
            raise RuntimeError('A non-persistent GradientTape can compute gradients only once; '
                               'create it with tf.GradientTape(persistent=True) to call '
                               '%s() several times.' % method)
        self._used = True
        return unconnected

    def _gradient(self, target, sources, output_gradients, unconnected):
        flat_sources = structure.flatten(sources)
        targets = structure.flatten(target)
        seeds = (structure.flatten(output_gradients) if output_gradients is not None
                 else [None] * len(targets))
        pairs = [(t, g) for t, g in zip(targets, seeds)
                 if isinstance(t, torch.Tensor) and t.requires_grad]
        wanted = [i for i, s in enumerate(flat_sources) if self._differentiable(s)]
        grads = [None] * len(flat_sources)
        forgotten = []
        if pairs and wanted and self._reset_at is not None:
            reached, forgotten = _reached_since([t.grad_fn for t, _ in pairs], self._reset_at)
            wanted = [i for i in wanted if _node_of(flat_sources[i], reached)]
        if pairs and wanted:
            outputs = [t for t, _ in pairs]
            seeds = [torch.ones_like(t) if g is None else torch.as_tensor(g, dtype=t.dtype,
                                                                          device=t.device)
                     for t, g in pairs]
            handles = [node.register_prehook(_no_gradient) for node in forgotten]
            try:
                computed = torch.autograd.grad(
                    outputs, [flat_sources[i] for i in wanted], grad_outputs=seeds,
                    retain_graph=True, create_graph=bool(_RECORDING), allow_unused=True)
            finally:
                for handle in handles:
                    handle.remove()
            for i, g in zip(wanted, computed):
                grads[i] = g
        if unconnected == 'zero':
            grads = [torch.zeros_like(s) if g is None and isinstance(s, torch.Tensor) else g
                     for s, g in zip(flat_sources, grads)]
        return structure.pack_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients='none',
                 parallel_iterations=None, experimental_use_pfor=True):
        """The Jacobian of `target` with respect to each of `sources`.

        # Arguments
            target: a tensor.
            sources: a tensor or variable, or a nested structure of them.
            unconnected_gradients: as for `gradient`.
            parallel_iterations, experimental_use_pfor: accepted for TF's signature; the
                rows are computed one backward pass each.

        # Returns
            In the structure of `sources`, tensors of shape `target.shape + source.shape`
            (None for an unconnected source unless `unconnected_gradients='zero'`).
        """
        flat_target = self._target_tensor(target, 'jacobian').reshape(-1)
        unconnected = self._start('jacobian', unconnected_gradients)
        rows = [self._gradient(flat_target[i], sources, None, unconnected)
                for i in range(flat_target.shape[0])]
        return self._stacked(rows, sources, tuple(target.shape), lambda s: tuple(s.shape))

    def batch_jacobian(self, target, source, unconnected_gradients='none',
                       parallel_iterations=None, experimental_use_pfor=True):
        """The Jacobian of each example of `target` with respect to the same example of
        `source`, the examples (axis 0) being independent of each other, as TF assumes.

        # Arguments
            target: a tensor of shape `(batch,) + t`.
            source: a tensor of shape `(batch,) + s`.
            unconnected_gradients, parallel_iterations, experimental_use_pfor: as for
                `jacobian`.

        # Returns
            A tensor of shape `(batch,) + t + s`.

        # Raises
            ValueError: if `target` and `source` have different batch sizes.
        """
        target = self._target_tensor(target, 'batch_jacobian')
        if target.dim() < 1 or source.dim() < 1 or target.shape[0] != source.shape[0]:
            raise ValueError('batch_jacobian needs a target and a source with the same first '
                             '(batch) dimension; got shapes %s and %s.'
                             % (tuple(target.shape), tuple(source.shape)))
        unconnected = self._start('batch_jacobian', unconnected_gradients)
        per_example = target.reshape(target.shape[0], -1)
        rows = [self._gradient(per_example[:, i].sum(), source, None, unconnected)
                for i in range(per_example.shape[1])]
        if rows and rows[0] is None:
            return None
        batch = target.shape[0]
        if not rows:
            return torch.zeros(tuple(target.shape) + tuple(source.shape[1:]),
                               dtype=source.dtype, device=source.device)
        stacked = torch.stack([r.reshape(batch, -1) for r in rows], dim=1)
        return stacked.reshape(tuple(target.shape) + tuple(source.shape[1:]))

    def _target_tensor(self, target, method):
        if not isinstance(target, torch.Tensor):
            raise TypeError('GradientTape.%s expects one tensor as its target; got %r.'
                            % (method, type(target).__name__))
        return target

    @staticmethod
    def _stacked(rows, sources, target_shape, source_shape):
        flat_sources = structure.flatten(sources)
        flat_rows = [structure.flatten(row) for row in rows]
        result = []
        for k, source in enumerate(flat_sources):
            column = [row[k] for row in flat_rows]
            if any(g is None for g in column):
                result.append(None)
                continue
            shape = target_shape + source_shape(source)
            result.append(torch.stack(column).reshape(shape) if column else
                          torch.zeros(shape, dtype=source.dtype, device=source.device))
        return structure.pack_as(sources, result)

    def _differentiable(self, source):
        if isinstance(source, graph.KerasTensor):
            return any(source is w for w in self._watched)
        if not isinstance(source, torch.Tensor) or not source.requires_grad:
            return False
        if self._watch_accessed_variables:
            return True
        return any(source is w for w in self._watched)


def _next_node_number():
    """The sequence number autograd gives the next node it creates (numbers increase)."""
    with torch.enable_grad():
        node = torch.zeros((), requires_grad=True).mul(1).grad_fn
    return node._sequence_nr() + 1


def _reached_since(roots, first):
    """The autograd nodes reached from `roots` through nodes numbered `first` or later
    (a set, leaves' `AccumulateGrad` included), and the earlier nodes met (a list), where
    the walk stops."""
    reached, forgotten, stack = set(), [], [n for n in roots if n is not None]
    while stack:
        node = stack.pop()
        if node in reached or node in forgotten:
            continue
        if not hasattr(node, 'variable') and node._sequence_nr() < first:
            forgotten.append(node)
            continue
        reached.add(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return reached, forgotten


def _node_of(source, reached):
    """Whether the gradient of `source` flows from one of the `reached` nodes."""
    if source.grad_fn is not None:
        return source.grad_fn in reached
    return any(getattr(node, 'variable', None) is source for node in reached)


def _no_gradient(grad_outputs):
    """An autograd pre-hook letting no gradient through a node (zeros in its place)."""
    return tuple(None if g is None else torch.zeros_like(g) for g in grad_outputs)


class UnconnectedGradients:
    """`tf.UnconnectedGradients`: the values of `GradientTape.gradient`'s
    `unconnected_gradients`."""
    NONE = 'none'
    ZERO = 'zero'
