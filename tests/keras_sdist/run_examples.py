"""Run every Keras 2.3.1 example (from its PyPI sdist) on torchk, offline and cut short.

Usage:
    python tests/keras_sdist/run_examples.py --sdist /tmp/ksdist/Keras-2.3.1.tar.gz \
        --out /tmp/keras_examples [--only NAME ...] [--timeout 600]

Each example runs in its own process through `example_harness.py` (synthetic data, capped
epochs and steps; see its docstring), in one shared scratch directory `OUT/cwd` (so that
`lstm_seq2seq_restore.py` finds the model `lstm_seq2seq.py` saved). The log of each run is
`OUT/logs/NAME.log`; `OUT/examples.json` and the printed table give pass/fail per example and
the last line of the error. Extra packages (matplotlib, pandas, cairocffi, editdistance,
opencv) are used when importable; `--pythonpath` adds a directory that holds them.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_suite import REPO, unpack  # noqa: E402

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'example_harness.py')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sdist', required=True)
    parser.add_argument('--out', default='/tmp/keras_examples')
    parser.add_argument('--only', nargs='*', default=[])
    parser.add_argument('--timeout', type=int, default=600)
    parser.add_argument('--pythonpath', default='')
    args = parser.parse_args()

    root = unpack(args.sdist, args.out)
    scratch = os.path.join(args.out, 'cwd')
    logs = os.path.join(args.out, 'logs')
    os.makedirs(scratch, exist_ok=True)
    os.makedirs(logs, exist_ok=True)
    paths = [REPO] + [p for p in (args.pythonpath, os.environ.get('PYTHONPATH')) if p]
    # Keras' examples are trusted code: Lambda layers may be reloaded with their bytecode.
    env = dict(os.environ, KERAS_BACKEND='torchk.core', MPLBACKEND='Agg',
               TORCHK_UNSAFE_DESERIALIZATION='1',
               PYTHONPATH=os.pathsep.join(paths))
    results_path = os.path.join(args.out, 'examples.json')
    results = json.load(open(results_path)) if os.path.exists(results_path) else {}
    examples = sorted(n for n in os.listdir(os.path.join(root, 'examples'))
                      if n.endswith('.py'))
    for name in examples:
        if args.only and not any(s in name for s in args.only):
            continue
        start = time.time()
        proc = subprocess.run(
            ['timeout', str(args.timeout), sys.executable, HARNESS,
             os.path.join(root, 'examples', name)],
            cwd=scratch, env=env, capture_output=True, text=True)
        output = proc.stdout + proc.stderr
        with open(os.path.join(logs, name[:-3] + '.log'), 'w') as log:
            log.write(output)
        lines = [l for l in output.strip().splitlines() if l.strip()]
        error = '' if proc.returncode == 0 else (
            'timed out' if proc.returncode == 124 else (lines[-1] if lines else ''))
        results[name] = dict(passed=proc.returncode == 0, returncode=proc.returncode,
                             seconds=round(time.time() - start, 1), error=error[:300])
        print('%-32s %s %5.0fs  %s' % (name, 'PASS' if proc.returncode == 0 else 'FAIL',
                                       time.time() - start, error[:150]), flush=True)
        with open(results_path, 'w') as f:
            json.dump(results, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
