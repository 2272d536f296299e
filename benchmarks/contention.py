"""Step time on a quiet machine against the same with one competing busy process.

Runs workloads of the shared scoreboard (`shared/bench`: mlp, cnn, lstm, fit_mlp,
tfk_tape_loop by default), each (workload, impl) in its own process, alternately alone and
beside a busy process (one Python thread spinning), and prints each median step time and the
contended/quiet ratio. The scoreboard's own contention check is turned off
(`BENCH_ATTEMPTS=1`): the contention is the point here.

Run:  python benchmarks/contention.py --bench ../shared/bench
      python benchmarks/contention.py --bench ../shared/bench --impls raw_torch keras2_torchk \
          --workloads mlp --env OMP_WAIT_POLICY=active
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ('mlp', 'cnn', 'lstm', 'fit_mlp', 'tfk_tape_loop')
SCRIPTS = {'raw_torch': 'impl_raw_torch.py', 'keras2_torchk': 'impl_keras2_torchk.py',
           'tfkeras_torchk': 'impl_tfkeras_torchk.py', 'tf_keras': 'impl_tf_keras.py'}
BUSY = 'while True: pass'


def default_bench():
    """The shared scoreboard beside the checkout (`../shared/bench`, or two levels up for a
    worktree under `wt/`), or None."""
    for relative in ('../shared/bench', '../../shared/bench'):
        path = os.path.normpath(os.path.join(ROOT, relative))
        if os.path.isfile(os.path.join(path, 'bench_common.py')):
            return path
    return None


def applies(impl, workload):
    """Whether the scoreboard runs `impl` on `workload` (tf.keras workloads: the tf.keras
    impls and raw torch; the others: every impl but tfkeras_torchk)."""
    if workload.startswith('tfk_'):
        return impl in ('tfkeras_torchk', 'tf_keras', 'raw_torch')
    return impl != 'tfkeras_torchk'


def run_one(bench, python, impl, workload, env):
    """One scoreboard run; returns its JSON record (with 'error' on failure)."""
    command = [python, SCRIPTS[impl], '--workload', workload]
    result = subprocess.run(command, cwd=bench, env=env, capture_output=True, text=True,
                            timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith('{"impl"')]
    if not lines:
        return {'error': 'no result (exit %d): %s' % (result.returncode,
                                                       result.stderr.strip()[-300:])}
    return json.loads(lines[-1])


def measure(bench, python, impl, workload, env, contended):
    """`run_one`, beside a busy process when `contended`."""
    if not contended:
        return run_one(bench, python, impl, workload, env)
    busy = subprocess.Popen([sys.executable, '-c', BUSY])
    try:
        return run_one(bench, python, impl, workload, env)
    finally:
        busy.kill()
        busy.wait()


def environment(impl, threads, extra):
    env = dict(os.environ, BENCH_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), BENCH_ATTEMPTS='1', PYTHONHASHSEED='0',
               TF_CPP_MIN_LOG_LEVEL='2', CUDA_VISIBLE_DEVICES='')
    env.pop('KERAS_BACKEND', None)
    if impl in ('keras2_torchk', 'tfkeras_torchk'):
        env['PYTHONPATH'] = ROOT + (os.pathsep + env['PYTHONPATH']
                                    if env.get('PYTHONPATH') else '')
        if impl == 'keras2_torchk':
            env['KERAS_BACKEND'] = 'torchk.core'
    env.update(extra)
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bench', default=default_bench(),
                        help='the shared scoreboard directory (shared/bench)')
    parser.add_argument('--workloads', nargs='+', default=list(WORKLOADS))
    parser.add_argument('--impls', nargs='+', default=['keras2_torchk', 'tfkeras_torchk'],
                        choices=sorted(SCRIPTS))
    parser.add_argument('--repeats', type=int, default=2,
                        help='quiet and contended runs of each (workload, impl)')
    parser.add_argument('--threads', type=int, default=2, help='BENCH_THREADS')
    parser.add_argument('--python', default=sys.executable,
                        help='interpreter of the torch impls (torch 2.13 + keras 2.3.1)')
    parser.add_argument('--tf-python', default=os.environ.get('TFK_PY', '/tmp/tfkvenv/bin/python'),
                        help='interpreter of tf_keras (tensorflow-cpu + tf_keras)')
    parser.add_argument('--env', nargs='*', default=[], metavar='NAME=VALUE',
                        help='extra environment of the runs (e.g. OMP_WAIT_POLICY=passive)')
    args = parser.parse_args()
    if not args.bench:
        parser.error('give --bench, the shared scoreboard directory')
    extra = dict(item.split('=', 1) for item in args.env)
    print('%-14s %-15s %10s %12s %7s %9s' % ('workload', 'impl', 'quiet ms', 'contended ms',
                                             'ratio', 'foreign'))
    for workload in args.workloads:
        for impl in args.impls:
            if not applies(impl, workload):
                continue
            python = args.tf_python if impl == 'tf_keras' else args.python
            env = environment(impl, args.threads, extra)
            if impl == 'tf_keras':
                env['TF_USE_LEGACY_KERAS'] = '1'
            runs = {False: [], True: []}
            errors = []
            for _ in range(args.repeats):
                for contended in (False, True):
                    record = measure(args.bench, python, impl, workload, env, contended)
                    if record.get('error'):
                        errors.append(record['error'])
                    else:
                        runs[contended].append(record)
            if errors or not runs[False] or not runs[True]:
                print('%-14s %-15s error: %s' % (workload, impl, (errors or ['no run'])[0][:90]))
                continue
            quiet = statistics.median(r['ms_per_step_median'] for r in runs[False])
            busy = statistics.median(r['ms_per_step_median'] for r in runs[True])
            foreign = statistics.median(r.get('foreign_cpu', float('nan')) for r in runs[True])
            print('%-14s %-15s %10.2f %12.2f %6.2fx %9.2f' % (workload, impl, quiet, busy,
                                                               busy / quiet, foreign))
            sys.stdout.flush()


if __name__ == '__main__':
    main()
