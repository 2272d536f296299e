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
"""
import contextlib

import torch

from . import structure

_RECORDING = []
_UNCONNECTED = ('none', 'zero')


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
        later uses, inside or outside the tape, are recorded too.

        # Raises
            TypeError: if a leaf is not a floating-point or complex torch tensor.
        """
        for leaf in structure.flatten(tensor):
            if not isinstance(leaf, torch.Tensor):
                raise TypeError('GradientTape.watch expects tensors or variables; got %r.'
                                % (leaf,))
            if not (leaf.is_floating_point() or leaf.is_complex()):
                raise TypeError('GradientTape.watch: cannot watch a tensor of dtype %s; only '
                                'floating-point tensors have gradients.' % leaf.dtype)
            if not leaf.requires_grad:
                leaf.requires_grad_(True)
            self._watched.append(leaf)

    def watched_variables(self):
        """Returns the tensors and variables passed to `watch`."""
        return tuple(self._watched)

    @contextlib.contextmanager
    def stop_recording(self):
        """A context in which operations are not recorded (`torch.no_grad`)."""
        with torch.no_grad():
            yield

    def reset(self):
        """Forgets the watched tensors; the tape may compute gradients again."""
        self._watched = []
        self._used = False

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
        unconnected = getattr(unconnected_gradients, 'value', unconnected_gradients)
        if unconnected not in _UNCONNECTED:
            raise ValueError('unconnected_gradients must be one of %s; got %r.'
                             % (', '.join(map(repr, _UNCONNECTED)), unconnected_gradients))
        if self._used and not self._persistent:
            raise RuntimeError('A non-persistent GradientTape can compute gradients only once; '
                               'create it with tf.GradientTape(persistent=True) to call '
                               'gradient() several times.')
        self._used = True
        flat_sources = structure.flatten(sources)
        targets = structure.flatten(target)
        seeds = (structure.flatten(output_gradients) if output_gradients is not None
                 else [None] * len(targets))
        pairs = [(t, g) for t, g in zip(targets, seeds)
                 if isinstance(t, torch.Tensor) and t.requires_grad]
        wanted = [i for i, s in enumerate(flat_sources) if self._differentiable(s)]
        grads = [None] * len(flat_sources)
        if pairs and wanted:
            outputs = [t for t, _ in pairs]
            seeds = [torch.ones_like(t) if g is None else torch.as_tensor(g, dtype=t.dtype,
                                                                          device=t.device)
                     for t, g in pairs]
            computed = torch.autograd.grad(
                outputs, [flat_sources[i] for i in wanted], grad_outputs=seeds,
                retain_graph=True, create_graph=bool(_RECORDING), allow_unused=True)
            for i, g in zip(wanted, computed):
                grads[i] = g
        if unconnected == 'zero':
            grads = [torch.zeros_like(s) if g is None and isinstance(s, torch.Tensor) else g
                     for s, g in zip(flat_sources, grads)]
        return structure.pack_as(sources, grads)

    def _differentiable(self, source):
        if not isinstance(source, torch.Tensor) or not source.requires_grad:
            return False
        if self._watch_accessed_variables:
            return True
        return any(source is w for w in self._watched)


class UnconnectedGradients:
    """`tf.UnconnectedGradients`: the values of `GradientTape.gradient`'s
    `unconnected_gradients`."""
    NONE = 'none'
    ZERO = 'zero'
