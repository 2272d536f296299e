"""torch's intra-op threads on a machine shared with other work.

torch splits an op's work evenly over its OpenMP threads, and an op ends when its slowest
thread does. When another process keeps a CPU busy, one of torch's threads shares that CPU
and every parallel op waits for it: measured on 2 CPUs with torch's 2 threads beside busy
processes, a training step of an MLP took 5-8 times as long as with 1 thread. So each
program run (`K.function`, eager and recorded calls) calls `adapt()`, which, at most every
`INTERVAL` seconds, measures the CPU time other processes used (from `/proc/stat`, less this
process's own). While other work keeps CPUs busy, it tries the CPUs left to torch (at least
one thread) against the thread count it had, an interval each, and keeps the one that ran
more programs per second for a while; once the machine is quiet again, torch has its thread
count back (the user's). A thread count the user sets meanwhile (`torch.set_num_threads`)
becomes the count returned to.

`TORCHK_ADAPTIVE_THREADS=0` turns this off. Where `/proc/stat` cannot be read (not Linux),
nothing changes.
"""
import os
import time

import torch

INTERVAL = 0.25
# Other processes' CPUs (averaged over an interval) from which torch gives up threads, and
# the margin by which fewer than a whole CPU still counts as one left to torch.
BUSY_CPUS = 0.35
_MARGIN = 0.35

_TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100
# How long a thread count chosen by trial under load holds before it is tried again.
HOLD = 10.
_state = {'next': 0., 'last': None, 'base': None, 'set': None, 'calls': 0, 'trial': None,
          'choice': None}


def enabled():
    """Whether thread counts adapt to other processes' load (`TORCHK_ADAPTIVE_THREADS`)."""
    return os.environ.get('TORCHK_ADAPTIVE_THREADS', '1') != '0'


def _busy_seconds():
    """CPU seconds all processes have spent busy (all CPUs, idle, I/O wait and steal left
    out), or None."""
    try:
        with open('/proc/stat', 'rb') as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(v) for v in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    steal = ticks[7] if len(ticks) > 7 else 0
    return (sum(ticks[:8]) - idle - steal) / _TICKS


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def threads_for(foreign_cpus, base, cpus):
    """The intra-op threads for `base` threads wanted on `cpus` CPUs of which other
    processes keep `foreign_cpus` busy."""
    if foreign_cpus < BUSY_CPUS:
        return base
    return max(1, min(base, int(cpus - foreign_cpus + _MARGIN)))


def adapt():
    """Counts a program run and, once per `INTERVAL`, measures other processes' CPU use and
    sets torch's threads for it (see the module docstring). Cheap between measurements: a
    count and one clock read."""
    _state['calls'] += 1
    now = time.monotonic()
    if now < _state['next']:
        return
    _state['next'] = now + INTERVAL
    if not enabled():
        return
    busy = _busy_seconds()
    if busy is None:
        _state['next'] = float('inf')
        return
    times = os.times()
    sample = (now, busy, times.user + times.system)
    last, _state['last'] = _state['last'], sample
    current = torch.get_num_threads()
    if _state['set'] != current:  # first call, or the user set a count: it is the base
        _state['base'] = current
        _state['trial'] = _state['choice'] = None
    if last is None or now - last[0] > 4 * INTERVAL:
        return  # no recent sample: the CPU use since then says little about now
    wall = now - last[0]
    foreign = max(0., (busy - last[1]) - (sample[2] - last[2])) / wall
    fewer = threads_for(foreign, _state['base'], _cpus())
    if fewer == _state['base']:
        _state['trial'] = None
        wanted = fewer
    else:
        wanted = _tried(now, fewer, foreign)
    if wanted != current:
        torch.set_num_threads(wanted)
    _state['set'] = wanted


def _tried(now, fewer, foreign):
    """Under other processes' load: the thread count, `fewer` or the base, that ran more
    programs per second when each was tried for an interval (ops split over more threads
    wait for the one the other work delays, fewer threads compute less at once: which wins
    depends on the load and the model). The choice holds for `HOLD` seconds, or until the
    load changes by half a CPU."""
    choice = _state['choice']
    if choice is not None and now < choice[1] and abs(foreign - choice[2]) < 0.5:
        return choice[0]
    trial = _state['trial']
    if trial is None:
        _state['trial'] = {'candidates': [fewer, _state['base']], 'rates': [],
                           'start': (now, _state['calls'])}
        return fewer
    elapsed, runs = now - trial['start'][0], _state['calls'] - trial['start'][1]
    candidate = trial['candidates'][len(trial['rates'])]
    if runs < 3 and elapsed < 4 * INTERVAL:
        return candidate  # too few runs to tell yet
    trial['rates'].append(runs / elapsed)
    trial['start'] = (now, _state['calls'])
    if len(trial['rates']) < len(trial['candidates']):
        return trial['candidates'][len(trial['rates'])]
    rates = trial['rates']  # on a tie, the fewer threads
    best = trial['candidates'][max(range(len(rates)), key=rates.__getitem__)]
    _state['trial'], _state['choice'] = None, (best, now + HOLD, foreign)
    return best
