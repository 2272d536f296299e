"""torch's intra-op threads follow other processes' CPU use (torchk/cpu_threads.py)."""
import os
import subprocess
import sys

import pytest
import torch

from torchk import cpu_threads


@pytest.mark.parametrize('foreign, base, cpus, expected', [
    (0.0, 2, 2, 2), (0.3, 2, 2, 2), (0.5, 2, 2, 1), (1.0, 2, 2, 1), (1.9, 2, 2, 1),
    (4.0, 16, 16, 12), (0.2, 16, 16, 16), (15.5, 16, 16, 1), (1.0, 2, 8, 2)])
def test_threads_for(foreign, base, cpus, expected):
    assert cpu_threads.threads_for(foreign, base, cpus) == expected


class _Machine:
    """A clock and /proc/stat of a 2-CPU machine whose other processes keep `foreign`
    CPUs busy; this process uses no CPU, and runs a program every `step[threads]` seconds
    (by torch's thread count; 10 ms if not given)."""

    def __init__(self, monkeypatch):
        self.now, self.busy, self.foreign, self.step = 100., 0., 0., {}
        monkeypatch.setattr(cpu_threads.time, 'monotonic', lambda: self.now)
        monkeypatch.setattr(cpu_threads, '_busy_seconds', lambda: self.busy)
        monkeypatch.setattr(cpu_threads, '_cpus', lambda: 2)
        monkeypatch.setattr(cpu_threads.os, 'times', lambda: os.times_result((0,) * 5))
        monkeypatch.setitem(cpu_threads._state, 'next', 0.)
        monkeypatch.setitem(cpu_threads._state, 'last', None)
        for key, value in (('set', None), ('trial', None), ('choice', None)):
            monkeypatch.setitem(cpu_threads._state, key, value)
        monkeypatch.delenv('TORCHK_ADAPTIVE_THREADS', raising=False)

    def run(self, seconds):
        """Runs programs (each calls `adapt`) for `seconds`."""
        end = self.now + seconds
        while self.now < end:
            step = self.step.get(torch.get_num_threads(), 0.01)
            self.now += step
            self.busy += step * self.foreign
            cpu_threads.adapt()


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_threads_drop_while_others_are_busy_and_come_back(monkeypatch, threads):
    machine = _Machine(monkeypatch)
    machine.run(1.)
    assert torch.get_num_threads() == 2
    machine.foreign = 1.
    machine.run(1.)
    assert torch.get_num_threads() == 1
    machine.foreign = 0.
    machine.run(1.)
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize('faster', [1, 2])
def test_under_load_the_faster_count_is_kept(monkeypatch, threads, faster):
    machine = _Machine(monkeypatch)
    machine.foreign = 1.
    machine.step = {faster: 0.01, 3 - faster: 0.03}
    machine.run(2.)
    assert torch.get_num_threads() == faster
    machine.run(cpu_threads.HOLD)  # tried again, same answer
    assert torch.get_num_threads() == faster
    machine.foreign = 0.
    machine.run(1.)
    assert torch.get_num_threads() == 2


def test_a_count_the_user_sets_is_the_one_returned_to(monkeypatch, threads):
    machine = _Machine(monkeypatch)
    machine.foreign = 1.5
    machine.run(1.)
    assert torch.get_num_threads() == 1
    torch.set_num_threads(3)
    machine.run(1.)
    assert torch.get_num_threads() == 1
    machine.foreign = 0.
    machine.run(1.)
    assert torch.get_num_threads() == 3


def test_switched_off(monkeypatch, threads):
    machine = _Machine(monkeypatch)
    monkeypatch.setenv('TORCHK_ADAPTIVE_THREADS', '0')
    machine.foreign = 2.
    machine.run(1.)
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize('environment, expected', [
    ({}, '30000'), ({'TORCHK_ADAPTIVE_THREADS': '0'}, None),
    ({'OMP_WAIT_POLICY': 'active'}, None), ({'GOMP_SPINCOUNT': '7'}, '7')])
def test_openmp_spin_set_before_torch_loads(environment, expected):
    env = {k: v for k, v in os.environ.items()
           if k not in ('GOMP_SPINCOUNT', 'OMP_WAIT_POLICY', 'TORCHK_ADAPTIVE_THREADS')}
    env.update(environment)
    code = 'import os, torchk, torch; print(os.environ.get("GOMP_SPINCOUNT"))'
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == str(expected)


def test_openmp_spin_left_alone_when_torch_came_first():
    env = {k: v for k, v in os.environ.items() if k != 'GOMP_SPINCOUNT'}
    code = 'import os, torch, torchk; print(os.environ.get("GOMP_SPINCOUNT"))'
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == 'None'
