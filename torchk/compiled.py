"""Opt-in whole-program compile: a `K.function`'s program run through `torch.compile`.

With `TORCHK_COMPILE=1` (or `set_enabled(True)`), a `K.function` called a second time
compiles its whole program, forward, backward and updates, with `torch.compile` (inductor:
C++ on the CPU, Triton on CUDA), and prints the compile time once. One-off evaluations
(`K.eval`, a function called once) never pay for a compile. Parts dynamo cannot trace run
eagerly between compiled parts (the gradient call `torch.autograd.grad` is such a break: the
forward pass and the update arithmetic compile on either side of it). A function whose
compile fails runs its plain program from then on, after a one-time message naming the
error: compiling never fails a user's program. The first compile of a graph takes seconds to
a minute; inductor caches its kernels on disk, so later processes compile faster.
"""
import os
import sys
import time

import torch

_enabled = None


def enabled():
    """True if `K.function`s compile their programs (`TORCHK_COMPILE=1`)."""
    if _enabled is not None:
        return _enabled
    return os.environ.get('TORCHK_COMPILE', '0') == '1'


def set_enabled(value):
    """Turns whole-program compile on or off for `K.function`s built from now on (None:
    follow the `TORCHK_COMPILE` environment variable)."""
    global _enabled
    _enabled = None if value is None else bool(value)


class CompiledProgram:
    """Runs `program` plainly on its first call, compiled from the second on.

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
        self._calls += 1
        if self.error is not None or self._calls == 1:
            return self.program(*args)
        if self._compiled is None:
            self._compiled = torch.compile(self.program)
            start = time.perf_counter()
            values = self._run(args)
            if self.error is None:
                self.compile_seconds = time.perf_counter() - start
                print('torchk: compiled K.function %s in %.1f s (TORCHK_COMPILE=1).'
                      % (self._label(), self.compile_seconds), file=sys.stderr)
            return values
        return self._run(args)

    def _run(self, args):
        try:
            return self._compiled(*args)
        except Exception as e:  # noqa: BLE001 -- any compiler failure falls back, once
            self.error = e
            print('torchk: could not compile K.function %s (%s: %s); it runs uncompiled.'
                  % (self._label(), type(e).__name__, str(e).split('\n')[0][:200]),
                  file=sys.stderr)
            return self.program(*args)

    def _label(self):
        return repr(self.name) if self.name else '(unnamed)'
