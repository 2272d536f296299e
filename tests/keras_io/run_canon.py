"""Run keras-io's tf.keras 2 guides and examples unmodified on TensorFlow and on torchk.

Usage:
    python tests/keras_io/run_canon.py --keras-io /tmp/keras-io --out /tmp/keras_io_canon \
        [--side tf|torchk|both] [--only NAME ...] [--timeout 900] [--pythonpath DIR] \
        [--report docs/KERAS_IO.md]

`--keras-io` is a checkout of keras-io from its TF 2.x era (before its move to Keras 3);
`selection.py` picks the scripts to run and gives the others' reasons. Each script runs once
per side, one process at a time, in a fresh scratch directory `OUT/<side>/<name>/`, through
`harness.py` (offline, `keras.datasets` replaced by `synthetic_datasets.py`):
- TensorFlow: `TF_PYTHON harness.py SCRIPT` with `TF_USE_LEGACY_KERAS=1` (tf_keras);
- torchk: `python -m torchk run harness.py SCRIPT`, with this checkout (or `--torchk DIR`,
  e.g. an older commit's tree, to measure it) first on PYTHONPATH.
Results go to `OUT/tf.json` and `OUT/torchk.json` (outcome, seconds, error line, the script
line it came from) and logs to `OUT/logs/<side>/<name>.log`. TensorFlow's results are kept:
`--side both` runs TensorFlow only for scripts missing from `tf.json`. `--report` rewrites
the generated part of the Markdown report (between its markers) from both JSON files.
`--pythonpath` adds a directory of the general packages some scripts import (matplotlib,
pandas, tqdm; `selection.GENERAL_PACKAGES`) to both sides.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import report  # noqa: E402
import selection  # noqa: E402

HARNESS = os.path.join(HERE, 'harness.py')
# Scripts that hard-code a data set's real sample counts get them (KERAS_IO_DATA=real).
REAL_COUNTS = {
    'guides/distributed_training.py': 'x_train[-10000:] as validation data',
    'guides/functional_api.py': 'x_train.reshape(60000, 784)',
    'guides/intro_to_keras_for_researchers.py': 'x_train.reshape(60000, 784)',
    'guides/making_new_layers_and_models_via_subclassing.py': 'x_train.reshape(60000, 784)',
    'guides/training_with_built_in_methods.py': 'x_train.reshape(60000, 784)',
    'guides/writing_a_training_loop_from_scratch.py': 'x_train[-10000:] as validation data',
    'examples/vision/siamese_contrastive.py': 'x_train_val[30000:] as validation data',
    'examples/vision/metric_learning.py': 'np.random.randint(0, 50000) indices of x_train',
    'examples/vision/mixup.py': 'x_train[2000:] as training data',
}
_EXCEPTION = re.compile(r'^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)|'
                        r'[A-Za-z_][\w.]*\.[A-Z]\w*)(: .*)?$')


def first_error(output, script):
    """The exception line of a failed run's output and the script line it was raised from.

    # Returns
        `(error, where)`: the last line that reads `SomeError: message` (a traceback's
        last line), and `'LINE: code'` of the deepest traceback frame in `script`, or ''.
    """
    lines = output.rstrip().splitlines()
    error = next((line for line in reversed(lines) if _EXCEPTION.match(line)),
                 lines[-1] if lines else '')
    where = ''
    frame = re.compile(r'^\s*File "%s", line (\d+)' % re.escape(script))
    for i, line in enumerate(lines):
        match = frame.match(line)
        if match:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ''
            where = '%s: %s' % (match.group(1), code)
    return error, where


def command(side, script, tf_python):
    if side == 'tf':
        return [tf_python, HARNESS, script]
    return [sys.executable, '-m', 'torchk', 'run', HARNESS, script]


def environment(side, relative, extra_paths, torchk_root=REPO):
    env = dict(os.environ, MPLBACKEND='Agg', PYTHONUNBUFFERED='1',
               KERAS_IO_DATA='real' if relative in REAL_COUNTS else 'small')
    paths = list(extra_paths)
    if side == 'tf':
        env.update(TF_USE_LEGACY_KERAS='1', TF_CPP_MIN_LOG_LEVEL='2')
    else:
        paths.insert(0, torchk_root)
    env['PYTHONPATH'] = os.pathsep.join(paths)
    env.pop('KERAS_BACKEND', None)
    return env


def run_script(side, keras_io, relative, out, timeout, tf_python, extra_paths,
               torchk_root=REPO):
    """Runs one script on one side; returns its result dict (outcome, seconds, error,
    where)."""
    name = relative[:-3].replace('/', '__')
    scratch = os.path.join(out, side, name)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    logs = os.path.join(out, 'logs', side)
    os.makedirs(logs, exist_ok=True)
    script = os.path.join(keras_io, relative)
    start = time.time()
    proc = subprocess.run(['timeout', '--kill-after=30', str(timeout)]
                          + command(side, script, tf_python),
                          cwd=scratch,
                          env=environment(side, relative, extra_paths, torchk_root),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors='replace')
    seconds = round(time.time() - start, 1)
    with open(os.path.join(logs, name + '.log'), 'w') as log:
        log.write(proc.stdout)
    shutil.rmtree(scratch, ignore_errors=True)
    if proc.returncode == 0:
        return dict(outcome='pass', seconds=seconds, error='', where='')
    if proc.returncode in (124, 137):
        return dict(outcome='timeout', seconds=seconds,
                    error='timed out after %ds' % timeout, where='')
    error, where = first_error(proc.stdout, script)
    return dict(outcome='fail', seconds=seconds, error=error[:400], where=where[:200])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--keras-io', required=True)
    parser.add_argument('--out', default='/tmp/keras_io_canon')
    parser.add_argument('--side', choices=('tf', 'torchk', 'both'), default='both')
    parser.add_argument('--only', nargs='*', default=[])
    parser.add_argument('--timeout', type=int, default=900)
    parser.add_argument('--tf-python', default='/tmp/oracle-env/bin/python')
    parser.add_argument('--pythonpath', action='append', default=[])
    parser.add_argument('--torchk', default=REPO,
                        help='the directory holding the torchk package to run (default: '
                        'this checkout)')
    parser.add_argument('--rerun-tf', action='store_true',
                        help='run TensorFlow again for scripts it already has results for')
    parser.add_argument('--report', help='Markdown file whose generated part to rewrite')
    parser.add_argument('--source', help='how the report names the keras-io checkout '
                        '(e.g. its commit); default: the checkout\'s path')
    args = parser.parse_args()

    keras_io = os.path.abspath(args.keras_io)
    os.makedirs(args.out, exist_ok=True)
    scripts = selection.scripts(keras_io)
    to_run = [relative for relative, reason in scripts if reason is None
              and (not args.only or any(s in relative for s in args.only))]
    sides = ('tf', 'torchk') if args.side == 'both' else (args.side,)
    for relative in to_run:
        for side in sides:
            path = os.path.join(args.out, side + '.json')
            results = json.load(open(path)) if os.path.exists(path) else {}
            if side == 'tf' and relative in results and not args.rerun_tf \
                    and args.side == 'both':
                continue
            result = run_script(side, keras_io, relative, args.out, args.timeout,
                                args.tf_python, args.pythonpath, os.path.abspath(args.torchk))
            results[relative] = result
            with open(path, 'w') as f:
                json.dump(results, f, indent=1, sort_keys=True)
            print('%-6s %-64s %-7s %6.0fs  %s' % (side, relative, result['outcome'],
                                                   result['seconds'], result['error'][:120]),
                  flush=True)
    if args.report:
        report.write(args.report, args.out, scripts, args.source or keras_io, REAL_COUNTS)


if __name__ == '__main__':
    main()
