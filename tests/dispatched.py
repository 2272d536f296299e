"""The ATen ops that torch dispatches inside a block, for tests of what a program runs per call
(the host work `../shared/bench/host_overhead.py` counts)."""
from torch.utils._python_dispatch import TorchDispatchMode


class DispatchedOps(TorchDispatchMode):
    """Records the name of every ATen op dispatched inside it (`names`)."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))
