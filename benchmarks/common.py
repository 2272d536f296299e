"""Timing helpers shared by the benchmarks: best-of-N medians, printed as ratios."""
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault('KERAS_BACKEND', 'torchk.core')


def interleaved_seconds(fns, repeats=5, number=50, sync=None):
    """Median over `repeats` rounds of the mean time of `number` calls, for each of `fns`.

    The functions' rounds alternate, so that a load change on a shared machine hits every
    side alike. `sync` (e.g. `torch.cuda.synchronize`) runs before each round is timed.
    """
    for fn in fns:
        fn()
    rounds = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, rounds):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            if sync is not None:
                sync()
            times.append((time.perf_counter() - start) / number)
    return [statistics.median(times) for times in rounds]


def seconds_per_call(fn, repeats=5, number=50, sync=None):
    """Median over `repeats` rounds of the mean time of `number` calls of `fn`."""
    return interleaved_seconds([fn], repeats, number, sync)[0]


def report(name, torchk_seconds, torch_seconds):
    """Prints one benchmark line with the torchk/torch ratio."""
    print('%-42s torchk %9.1f us   torch %9.1f us   ratio %.2fx'
          % (name, torchk_seconds * 1e6, torch_seconds * 1e6, torchk_seconds / torch_seconds))


def torch_classifier_step(model, inputs, labels, device):
    """One hand-written torch training step of a classifier (Adam, cross-entropy on logits),
    the baseline the Keras models are compared with. Returns the step function."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

    def step():
        x = torch.as_tensor(inputs, device=device)
        targets = torch.as_tensor(labels, device=device)
        optimizer.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        accuracy = (logits.argmax(1) == targets).float().mean()
        return loss.item(), accuracy.item()
    return step
