"""Opt-in compile: `K.function` programs run through `torch.compile`.

Two modes, chosen by `TORCHK_COMPILE` (or `set_enabled`):

- `TORCHK_COMPILE=1`: whole-step compile. A `K.function` called a second time compiles its
  whole program as one graph with `torch.compile` (inductor: C++ on the CPU, Triton on
  CUDA), and prints the compile time once. For Keras' training function that is the whole
  training step: the forward pass, the gradients (dynamo traces `torch.autograd.grad`,
  `trace_autograd_ops`) and the optimizer's updates. The program takes the variables as
  arguments (`compile_program(variable_arguments=True)`, leaf aliases made per call), so the
  updates are in-place writes into graph inputs, which inductor plans with the rest; it is
  built without the update fusion pass (no `out=` destinations: inductor plans memory). The
  learning phase is fixed per program and Python numbers are constants of the source, so
  nothing a step changes makes dynamo recompile; a new input shape (the last, smaller batch
  of an epoch) compiles once more (static shapes). Random ops draw from their own seeded
  generators through one opaque op (`random_ops`), so a compiled step draws the dropout
  masks the plain one draws. Parts dynamo cannot trace still run eagerly between compiled
  graphs (the loops of `rnn_kernels`).
- `TORCHK_COMPILE=predict`: compiled predict. Only programs that compute no gradients
  (predict, evaluate) are compiled, from their second call, with the weights frozen
  (inductor's freezing: the variables become constants, so batch norm is folded into the
  convolutions, and the element-wise ops are fused into C++ kernels). The program is specialised on the shapes it is called with
  (each new batch size compiles once). A frozen program is only valid for the weights it
  was compiled with: when a variable it reads has been written since (a training step,
  `set_weights`), the call runs the plain program and the next call with unchanged weights
  compiles again. Use it for inference on a trained model, not between training steps.

Inductor's generated code is cached on disk in both modes, under `~/.cache/torchk/inductor`
unless `TORCHINDUCTOR_CACHE_DIR` says otherwise, so a later process compiles faster.

One-off evaluations (`K.eval`, a function called once) never pay for a compile. A function
whose compile fails runs its plain program from then on, after a one-time message naming
the error: compiling never fails a user's program.
"""
import os
import sys
import time

import torch

from .. import graph

_MODES = {'0': None, '1': 'all', 'predict': 'predict'}
_mode = False


def mode():
    """The compile mode: None (off), 'all' (`TORCHK_COMPILE=1`) or 'predict'
    (`TORCHK_COMPILE=predict`).

    # Raises
        ValueError: if `TORCHK_COMPILE` has another value.
    """
    if _mode is not False:
        return _mode
    value = os.environ.get('TORCHK_COMPILE', '0')
    if value not in _MODES:
        raise ValueError('TORCHK_COMPILE must be one of %s, got %r.'
                         % (', '.join(sorted(_MODES)), value))
    return _MODES[value]


def enabled():
    """True if `K.function`s compile their whole programs (`TORCHK_COMPILE=1`)."""
    return mode() == 'all'


def freezes_inference():
    """True if programs without gradients are compiled with frozen weights
    (`TORCHK_COMPILE=predict`)."""
    return mode() == 'predict'


def set_enabled(value):
    """Sets the compile mode for `K.function`s built from now on: True (every program),
    'predict' (programs without gradients, weights frozen), False (none), or None (follow
    the `TORCHK_COMPILE` environment variable).

    # Raises
        ValueError: for another value.
    """
    global _mode
    if value not in (None, True, False, 'predict'):
        raise ValueError("set_enabled takes True, False, 'predict' or None, got %r." % (value,))
    _mode = False if value is None else {True: 'all', False: None}.get(value, value)


_TORCH_COMPILE_MODES = ('default', 'reduce-overhead', 'max-autotune',
                        'max-autotune-no-cudagraphs')


def compile_mode():
    """`torch.compile`'s `mode` for compiled programs: `TORCHK_COMPILE_MODE`, default
    `'default'`. `'reduce-overhead'` replays each compiled step as a CUDA graph on CUDA.

    # Raises
        ValueError: if `TORCHK_COMPILE_MODE` names no mode of `torch.compile`.
    """
    value = os.environ.get('TORCHK_COMPILE_MODE', 'default')
    if value not in _TORCH_COMPILE_MODES:
        raise ValueError('TORCHK_COMPILE_MODE must be one of %s, got %r.'
                         % (', '.join(_TORCH_COMPILE_MODES), value))
    return value


def _replays_cuda_graphs():
    return compile_mode() in ('reduce-overhead', 'max-autotune')


def _static(alias):
    """Marks a variable's alias as a fixed address for CUDA graphs (its storage is the
    variable's, the same at every call), so that a replay reads and updates the variable in
    place rather than copying it into the graph's own input buffers."""
    torch._dynamo.mark_static_address(alias, guard=False)
    return alias


def _cache_on_disk():
    """Points inductor's on-disk cache to `~/.cache/torchk/inductor`, unless
    `TORCHINDUCTOR_CACHE_DIR` says otherwise."""
    os.environ.setdefault('TORCHINDUCTOR_CACHE_DIR', os.path.join(
        os.path.expanduser('~'), '.cache', 'torchk', 'inductor'))


def _copied(value, pointers):
    """`program._unaliased` inside a compiled program: storage pointers cannot be traced,
    so a value that may alias an updated variable is always copied (inductor fuses the
    copy into the kernel that computes the value)."""
    return value.clone() if isinstance(value, torch.Tensor) else value


class CompiledProgram:
    """Runs `program` (built with `variable_arguments=True`) plainly on its first call, and
    from the second on as one compiled graph: the forward pass, the gradients
    (`torch.autograd.grad`, traced by dynamo: no graph break) and the updates, written in
    place into the variables, which are graph inputs.

    `compile_seconds` is the time of the call that compiled it; `error` the exception that
    made it fall back to the plain program, if any.
    """

    def __init__(self, program, name):
        self.program = program
        self.source = program.source
        self.computes_gradients = program.computes_gradients
        self.name = name
        self.compile_seconds = None
        self.error = None
        self._calls = 0
        self._compiled = None

    def __call__(self, *args):
        # Leaf aliases sharing each variable's memory and version counter: gradients are
        # taken with respect to them, updates write through them.
        aliases = [v.detach().requires_grad_(v.requires_grad) for v in self.program.variables]
        if self._calls and _replays_cuda_graphs():
            aliases = [_static(alias) for alias in aliases]
        return self._call(*args, *aliases)

    def _call(self, *args):
        self._calls += 1
        if self.error is not None or self._calls == 1:
            return self.program(*args)
        return self._compiled_run(args)

    def _compiled_run(self, args):
        """Runs the compiled program, compiling it first (timed and reported) if needed;
        any failure runs the plain program, now and from then on."""
        start = time.perf_counter()
        try:
            if self._compiled is None:
                self._compiled = self._compile()
                values = self._run(args)
                self.compile_seconds = time.perf_counter() - start
                self._report()
                return values
            return self._run(args)
        except Exception as e:  # noqa: BLE001 -- any compiler failure falls back, once
            self.error = e
            print('torchk: could not compile K.function %s (%s: %s); it runs uncompiled.'
                  % (self._label(), type(e).__name__, str(e).split('\n')[0][:200]),
                  file=sys.stderr)
            return self.program(*args)

    def _compile(self):
        namespace = dict(self.program.__globals__, _unaliased=_copied,
                         _storage_pointers=lambda variables: None)
        exec(compile(self.source, '<torchk compiled program>', 'exec'), namespace)
        _cache_on_disk()
        return torch.compile(namespace['program'], dynamic=False, mode=compile_mode())

    def _run(self, args):
        with torch._dynamo.config.patch(trace_autograd_ops=True), graph.compiling_program():
            return self._compiled(*args)

    def _report(self):
        print('torchk: compiled K.function %s in %.1f s (TORCHK_COMPILE=1).'
              % (self._label(), self.compile_seconds), file=sys.stderr)

    def _label(self):
        return repr(self.name) if self.name else '(unnamed)'


class FrozenProgram(CompiledProgram):
    """Runs a program without gradients (built with `frozen=True`) plainly on its first
    call, and from the second on compiled with its variables frozen as constants; runs it
    plainly again, and recompiles on the next call, when a variable has been written since
    it was compiled (see the module doc)."""

    # Kernels prepacked for oneDNN cannot be pickled: inductor's FX graph cache would skip
    # the graph; unpacked, a later process loads it from disk (measured: same speed).
    inductor_options = {'freezing': True, 'cpp.weight_prepack': False}

    def __init__(self, program, name):
        super().__init__(program, name)
        self._variables = program.variables
        self._versions = None

    def __call__(self, *args):
        versions = [v._version for v in self._variables]
        if versions != self._versions:
            # Written since the last call (or the first call): frozen constants are stale.
            self._versions = versions
            self._compiled = None
            self._calls = 0
        self._calls += 1
        if self.error is not None or self._calls == 1:
            return self.program(*args)
        with torch._inductor.config.patch(self.inductor_options):
            return self._compiled_run(args)

    def _compile(self):
        # Dynamo keys what it compiled on the code object: a new one compiles anew, with the
        # variables' current values.
        namespace = dict(self.program.__globals__)
        exec(compile(self.source, '<torchk frozen program>', 'exec'), namespace)
        _cache_on_disk()
        return torch.compile(namespace['program'], dynamic=False)

    def _run(self, args):
        with graph.compiling_program():
            return self._compiled(*args)

    def _report(self):
        print('torchk: compiled the predict program of K.function %s in %.1f s '
              '(TORCHK_COMPILE=predict, weights frozen).' % (self._label(),
                                                             self.compile_seconds),
              file=sys.stderr)
