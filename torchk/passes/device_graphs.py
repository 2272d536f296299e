"""Device graphs: a program of static shapes captured once as a CUDA graph and replayed.

A small training step on a GPU is bound by the host: one launch per kernel, from Python.
On CUDA, `K.function` wraps each program in a `CapturedProgram`: for each signature of its
arguments (shapes, dtypes and devices of the tensors, values of the rest) it runs the program
`WARMUP_CALLS` times as it is (the last time under `StepProbe`, which notes anything a
capture cannot hold), then captures it into a CUDA graph with static argument buffers, and
from then on copies each call's arguments into those buffers and replays the graph: one
launch for the whole step.

What makes a program capturable is the design of the step (docs/ARCHITECTURE.md): it reads no
value back to the host (`StepProbe` flags `.item()`, `bool()`, `float()`, `.tolist()`,
`.numpy()` and value-sized ops), makes no tensor from host data, reads no variable as a Python
number (the program is built with `compile_program(host_variables=False)`: learning rate, loss
scale and optimizer counters stay device tensors), and draws random numbers from generators
registered with the graph (`random_ops.generators`). Python numbers a step does read at
capture, such as Adam's `beta_1` (`variables.host_scalar`), are remembered with their
variables' version counters: a `set_value` makes the next call capture again.

When a signature cannot be captured (the probe noted a host read, capture raised, or more than
`MAX_GRAPHS` signatures were seen) the program runs as it is, and one message says why.
`TORCHK_CUDA_GRAPHS=0` (or `set_enabled(False)`) turns capture off for programs built
afterwards; it is only ever on for programs on a CUDA device.
"""
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .. import config
from .. import random_ops
from .. import variables

_switch = config.PassSwitch('TORCHK_CUDA_GRAPHS')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

WARMUP_CALLS = 2
MAX_GRAPHS = 8

# Ops that read values back to the host (a device synchronisation on CUDA).
_SYNC_OPS = frozenset(getattr(torch.ops.aten, name).default for name in (
    '_local_scalar_dense', 'equal', 'nonzero', 'masked_select', 'is_nonzero', 'allclose',
    'unique_consecutive', '_unique2'))
# Ops that make a tensor from host (Python or numpy) data.
_HOST_DATA_OPS = frozenset(getattr(torch.ops.aten, name).default for name in (
    'lift_fresh', 'lift_fresh_copy'))


def applies(device):
    """True if programs on `device` are captured."""
    return enabled() and torch.device(device).type == 'cuda'


class StepProbe(TorchDispatchMode):
    """Notes what in a run could not be captured in a CUDA graph: values read back to the
    host, tensors made from host data, and boolean-mask indexing (value-sized results).

    Used as a context manager around a run; `problems` then lists `(what, where)` pairs, the
    first of each kind, with the innermost torchk frame that caused it. The run itself goes on
    as it would.
    """

    def __init__(self):
        super().__init__()
        self.problems = []
        self._methods = {}

    def __enter__(self):
        for name in ('numpy', 'tolist'):
            original = getattr(torch.Tensor, name)
            self._methods[name] = original
            setattr(torch.Tensor, name, self._noting('Tensor.%s()' % name, original))
        return super().__enter__()

    def __exit__(self, *exc):
        for name, original in self._methods.items():
            setattr(torch.Tensor, name, original)
        self._methods = {}
        return super().__exit__(*exc)

    def _noting(self, what, original):
        probe = self

        def method(tensor, *args, **kwargs):
            probe._note(what)
            return original(tensor, *args, **kwargs)
        return method

    def _note(self, what):
        if all(seen != what for seen, _ in self.problems):
            self.problems.append((what, _torchk_frame()))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SYNC_OPS:
            self._note('a value read back to the host (%s)' % func.__name__)
        elif func in _HOST_DATA_OPS:
            self._note('a tensor made from host data (torch.tensor / as_tensor)')
        elif func is torch.ops.aten.index.Tensor and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool
                for i in (args[1] if len(args) > 1 else ())):
            self._note('boolean-mask indexing (a value-sized result)')
        return func(*args, **kwargs)


def _torchk_frame():
    """'file:line' of the innermost torchk frame outside this module, or '?'."""
    import traceback
    for frame in reversed(traceback.extract_stack()):
        if '/torchk/' in frame.filename and not frame.filename.endswith('device_graphs.py'):
            return '%s:%d' % (frame.filename.split('/torchk/')[-1], frame.lineno)
    return '?'


class CudaCapture:
    """Capture and replay of one CUDA graph (the backend `CapturedProgram` uses on CUDA)."""

    def __init__(self, device):
        self.device = torch.device(device)
        self._pool = None

    def warm(self, run):
        """Runs `run()` on a side stream, as torch requires before a capture."""
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            result = run()
        torch.cuda.current_stream(self.device).wait_stream(stream)
        return result

    def capture(self, run):
        """Captures `run()`; returns a handle with `replay()` and the static `outputs`."""
        return _CudaGraph(run, self)


class _CudaGraph:
    def __init__(self, run, backend):
        self.graph = torch.cuda.CUDAGraph()
        for generator in random_ops.generators(backend.device):
            self.graph.register_generator_state(generator)
        if backend._pool is None:
            backend._pool = torch.cuda.graph_pool_handle()
        with torch.cuda.graph(self.graph, pool=backend._pool):
            self.outputs = run()

    def replay(self):
        self.graph.replay()


class _Signature:
    """The state of one signature of a `CapturedProgram`'s arguments."""

    def __init__(self):
        self.calls = 0
        self.handle = None
        self.arguments = None
        self.read_variables = ()
        self.host_read = []
        self.failed = None


class CapturedProgram:
    """A program run as a CUDA graph per signature of its arguments (see the module doc).

    # Arguments
        program: a compiled program (`program.compile_program`, built with
            `host_variables=False`).
        name: the `K.function`'s name, for messages.
        backend: what captures and replays (default: `CudaCapture` on the program's
            device); the tests give one that replays by running the program.
        copy_outputs: return copies of the outputs (a replay overwrites them), for callers
            that keep the tensors (`recorded` programs).
    """

    def __init__(self, program, name=None, backend=None, copy_outputs=False, device=None):
        self.program = program
        self.name = name
        self.backend = backend or CudaCapture(device or config.device())
        self.copy_outputs = copy_outputs
        self.computes_gradients = program.computes_gradients
        self.source = program.source
        self.variables = program.variables
        self.written = program.written
        self._signatures = {}
        self._told = set()

    def __call__(self, *args):
        key = _signature(args)
        state = self._signatures.get(key)
        if state is None:
            if len(self._signatures) >= MAX_GRAPHS:
                self._tell('more than %d argument signatures' % MAX_GRAPHS)
                return self.program(*args)
            state = self._signatures[key] = _Signature()
        if state.failed is None and not all(isinstance(a, _CAPTURABLE) for a in args):
            state.failed = 'an argument that is not a tensor or a number (%s)' % next(
                type(a).__name__ for a in args if not isinstance(a, _CAPTURABLE))
            self._tell(state.failed)
        if state.failed is not None:
            return self.program(*args)
        if state.handle is not None and not _unchanged(state.read_variables):
            state.handle = None
        if state.handle is None:
            if state.calls < WARMUP_CALLS:
                state.calls += 1
                return self._warm(state, args)
            self._capture(state, args)
            if state.failed is not None:
                return self.program(*args)
        for static, value in zip(state.arguments, args):
            if isinstance(static, torch.Tensor) and static is not value:
                static.copy_(value, non_blocking=True)
        state.handle.replay()
        # a replay writes the variables behind the autograd version counters' back
        torch.autograd.graph.increment_version(self.written)
        outputs = list(state.handle.outputs)
        if self.copy_outputs:
            outputs = [o.clone() if isinstance(o, torch.Tensor) else o for o in outputs]
        return outputs

    def _warm(self, state, args):
        if state.calls < WARMUP_CALLS:
            return self.backend.warm(lambda: self.program(*args))
        probe = StepProbe()
        with probe, variables.recording_host_reads() as read:
            outputs = self.backend.warm(lambda: self.program(*args))
        state.host_read = read
        if probe.problems:
            what, where = probe.problems[0]
            state.failed = '%s at %s' % (what, where)
            self._tell(state.failed)
        return outputs

    def _capture(self, state, args):
        state.arguments = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        with variables.recording_host_reads() as read:
            try:
                state.handle = self.backend.capture(lambda: self.program(*state.arguments))
            except RuntimeError as error:
                state.failed = 'capture failed: %s' % str(error).split('\n')[0]
                self._tell(state.failed)
                return
        # the Python numbers the graph holds: read in the probed run and in the capture
        state.read_variables = [(v, v._version) for v in
                                {id(v): v for v in state.host_read + read}.values()]

    def _tell(self, why):
        if why in self._told:
            return
        self._told.add(why)
        warnings.warn('torchk: the program %s runs without a CUDA graph: %s. '
                      '(TORCHK_CUDA_GRAPHS=0 turns capture off.)' % (self.name or '', why),
                      RuntimeWarning, stacklevel=3)


_CAPTURABLE = (torch.Tensor, int, float, bool, type(None))


def _unchanged(read_variables):
    return all(v._version == version for v, version in read_variables)


def _signature(args):
    key = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append((tuple(a.shape), a.dtype, a.device, a.requires_grad))
        elif isinstance(a, (int, float, bool, str, type(None))):
            key.append((type(a), a))
        else:
            key.append((type(a), id(a)))
    return tuple(key)
