"""Running one script of a corpus on one side, as both corpus runners do (`run_canon.py`
for keras-io, `tests/tf_docs/run_docs.py` for TensorFlow's docs).

A script runs through `harness.py` (offline, downloads and `keras.datasets` replaced by
synthetic data), in a fresh scratch directory that is also its `HOME` (so `get_file`'s
cache, `~/.keras`, starts empty), under `nice`, with a wall-clock limit:
- TensorFlow: `TF_PYTHON harness.py SCRIPT` with `TF_USE_LEGACY_KERAS=1` (tf_keras);
- torchk: `python -m torchk run harness.py SCRIPT`, the torchk tree first on PYTHONPATH.
Before each run it waits while `/tmp/QUIET` exists (someone on the shared machine is
timing). The result is a dict: outcome ('pass', 'fail', 'timeout'), seconds, the error
line and the script line it came from.
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
HARNESS = os.path.join(HERE, 'harness.py')
QUIET = '/tmp/QUIET'
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


def wait_while_quiet(path=QUIET, poll=30):
    """Sleeps while `path` exists; returns the seconds waited."""
    waited = 0
    while os.path.exists(path):
        time.sleep(poll)
        waited += poll
    return waited


def command(side, script, tf_python):
    if side == 'tf':
        return [tf_python, HARNESS, script]
    return [sys.executable, '-m', 'torchk', 'run', HARNESS, script]


def environment(side, extra_paths, torchk_root, home, variables=None):
    """The child's environment: `HOME` the scratch directory, Agg plots, unbuffered output,
    `variables` added (e.g. a shared `MPLCONFIGDIR`), PYTHONPATH the extra paths (after the
    torchk tree on torchk's side)."""
    env = dict(os.environ, MPLBACKEND='Agg', PYTHONUNBUFFERED='1', HOME=home)
    env.update(variables or {})
    paths = list(extra_paths)
    if side == 'tf':
        env.update(TF_USE_LEGACY_KERAS='1', TF_CPP_MIN_LOG_LEVEL='2')
    else:
        paths.insert(0, torchk_root)
    env['PYTHONPATH'] = os.pathsep.join(paths)
    env.pop('KERAS_BACKEND', None)
    env.pop('KERAS_HOME', None)
    return env


def run_script(side, script, name, out, timeout, tf_python, extra_paths, torchk_root,
               variables=None, files=None, prepare=None, nice=15, wait_quiet=True):
    """Runs `script` on one side; returns its result dict.

    # Arguments
        side: 'tf' or 'torchk'.
        script: the script's absolute path.
        name: the run's name: its scratch directory `OUT/<side>/<name>/` and its log
            `OUT/logs/<side>/<name>.log`.
        out: the output directory.
        timeout: the wall-clock limit in seconds.
        tf_python: TensorFlow's Python.
        extra_paths: directories put on PYTHONPATH on both sides.
        torchk_root: the directory holding the torchk package run.
        variables: more environment variables.
        files: {name: text} written into the scratch directory before the run.
        prepare: a function called with the scratch directory before the run (and before
            the clock starts), e.g. to fetch data as a notebook's shell cell does; the text
            it returns starts the log.
        nice: the niceness of the run (`nice -n`), or None.
        wait_quiet: whether to wait while `/tmp/QUIET` exists before the run.
    """
    scratch = os.path.join(out, side, name)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    logs = os.path.join(out, 'logs', side)
    os.makedirs(logs, exist_ok=True)
    for file_name, text in (files or {}).items():
        with open(os.path.join(scratch, file_name), 'w') as f:
            f.write(text)
    prepared = prepare(scratch) if prepare is not None else ''
    if wait_quiet:
        wait_while_quiet()
    prefix = ['nice', '-n', str(nice)] if nice is not None else []
    start = time.time()
    proc = subprocess.run(prefix + ['timeout', '--kill-after=30', str(timeout)]
                          + command(side, script, tf_python),
                          cwd=scratch,
                          env=environment(side, extra_paths, torchk_root, scratch, variables),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors='replace')
    seconds = round(time.time() - start, 1)
    with open(os.path.join(logs, name + '.log'), 'w') as log:
        log.write(prepared + proc.stdout)
    shutil.rmtree(scratch, ignore_errors=True)
    if proc.returncode == 0:
        return dict(outcome='pass', seconds=seconds, error='', where='')
    if proc.returncode in (124, 137):
        return dict(outcome='timeout', seconds=seconds,
                    error='timed out after %ds' % timeout, where='')
    error, where = first_error(proc.stdout, script)
    return dict(outcome='fail', seconds=seconds, error=error[:400], where=where[:200])


def argument_parser(description, corpus, corpus_help, out, timeout, unit, torchk_root):
    """The command line both runners take: `--<corpus>` (the checkout), `--out`, `--side`,
    `--only`, `--timeout`, `--tf-python`, `--pythonpath`, `--torchk`, `--rerun-tf`, `--nice`,
    `--no-wait-quiet`, `--report`, `--source`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('--' + corpus, required=True, help=corpus_help)
    parser.add_argument('--out', default=out)
    parser.add_argument('--side', choices=('tf', 'torchk', 'both'), default='both')
    parser.add_argument('--only', nargs='*', default=[],
                        help='run only the %s whose path contains one of these' % unit)
    parser.add_argument('--timeout', type=int, default=timeout)
    parser.add_argument('--tf-python', default='/tmp/tfkvenv/bin/python')
    parser.add_argument('--pythonpath', action='append', default=[])
    parser.add_argument('--torchk', default=torchk_root,
                        help='the directory holding the torchk package to run (default: '
                        'this checkout)')
    parser.add_argument('--rerun-tf', action='store_true',
                        help='run TensorFlow again for %s it already has results for' % unit)
    parser.add_argument('--nice', type=int, default=15, help='niceness of the runs')
    parser.add_argument('--no-wait-quiet', dest='wait_quiet', action='store_false',
                        help='do not wait while %s exists before each run' % QUIET)
    parser.add_argument('--report', help='Markdown file whose generated part to rewrite')
    parser.add_argument('--source', help='how the report names the checkout (e.g. its '
                        'commit); default: its path')
    return parser


def run_corpus(names, args, run_one, skip_tf_timeouts=False):
    """Runs each of `names` on the sides `args.side` asks for, one run at a time, and
    records and prints each result.

    # Arguments
        names: the scripts to run.
        args: `argument_parser`'s parsed arguments.
        run_one: `run_one(side, name)` runs one and returns its result dict.
        skip_tf_timeouts: whether torchk skips what TensorFlow timed out on (the corpus
            leaves those out as too slow for the machine).
    """
    sides = ('tf', 'torchk') if args.side == 'both' else (args.side,)
    for name in names:
        for side in sides:
            tf_result = load_results(args.out, 'tf').get(name)
            if side == 'tf' and tf_result and not args.rerun_tf and args.side == 'both':
                continue
            if (side == 'torchk' and skip_tf_timeouts and tf_result
                    and tf_result['outcome'] == 'timeout'):
                continue
            result = run_one(side, name)
            save_result(args.out, side, name, result)
            print('%-6s %-64s %-7s %6.0fs  %s' % (side, name, result['outcome'],
                                                   result['seconds'], result['error'][:120]),
                  flush=True)


def load_results(out, side):
    """`OUT/<side>.json`'s results ({} if none yet)."""
    path = os.path.join(out, side + '.json')
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def save_result(out, side, name, result):
    """Records `result` under `name` in `OUT/<side>.json` (rewritten at once, so an
    interrupted run keeps what it has done)."""
    results = load_results(out, side)
    results[name] = result
    with open(os.path.join(out, side + '.json'), 'w') as f:
        json.dump(results, f, indent=1, sort_keys=True)
