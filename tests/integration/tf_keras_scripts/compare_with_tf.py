"""Runs every script here under `python -m torchk run` and under TensorFlow's Keras 2, and
prints a table of result and wall time (start-up included). Run by hand; CI never runs TF.

Usage:
    python tests/integration/tf_keras_scripts/compare_with_tf.py --tf-python /tmp/tf215/bin/python
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(command, environment):
    start = time.time()
    completed = subprocess.run(command, capture_output=True, text=True, env=environment,
                               timeout=900)
    seconds = time.time() - start
    found = re.findall(r'^RESULT (\w+)=([-0-9.e]+)$', completed.stdout, re.M)
    if completed.returncode or not found:
        lines = (completed.stderr or completed.stdout).strip().splitlines()
        return 'error: %s' % (lines[-1][:80] if lines else completed.returncode), seconds
    return '%s=%s' % found[-1], seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tf-python', required=True, help='a Python with TensorFlow 2.x')
    parser.add_argument('--only', nargs='*', default=[])
    parser.add_argument('--threads', default='1', help='intra-op threads of both (default 1)')
    args = parser.parse_args()
    threads = dict(OMP_NUM_THREADS=args.threads, TF_NUM_INTRAOP_THREADS=args.threads,
                   TF_NUM_INTEROP_THREADS=args.threads)
    torchk_environment = dict(os.environ, **threads)
    torchk_environment.pop('KERAS_BACKEND', None)
    tf_environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', CUDA_VISIBLE_DEVICES='',
                          **threads)
    tf_environment.pop('PYTHONPATH', None)
    print('| script | torchk run | torchk s | TF | TF s |')
    print('|---|---|---|---|---|')
    for path in sorted(glob.glob(os.path.join(HERE, '*.py'))):
        name = os.path.basename(path)[:-3]
        if name == 'compare_with_tf' or args.only and name not in args.only:
            continue
        ours, our_seconds = run([sys.executable, '-m', 'torchk', 'run', path],
                                torchk_environment)
        theirs, their_seconds = run([args.tf_python, path], tf_environment)
        print('| %s | %s | %.1f | %s | %.1f |' % (name, ours, our_seconds, theirs,
                                                   their_seconds), flush=True)


if __name__ == '__main__':
    main()
