"""Run Keras 2.3.1's own test suite (from its PyPI sdist) on torchk, one pytest process per file.

The sdist's `tests/` are run against the installed `keras` package (not the sdist's `keras/`
copy): pytest runs from a scratch directory, so the sdist root is not on `sys.path`.

Usage:
    pip download --no-deps --no-binary :all: keras==2.3.1 -d /tmp/ksdist
    python tests/keras_sdist/run_suite.py --sdist /tmp/ksdist/Keras-2.3.1.tar.gz \
        --out /tmp/keras_suite [--only SUBSTRING ...] [--file-timeout 900]

Each file's results go to `OUT/junit/<file>.xml`; `OUT/summary.json` and the printed table
give passed/failed/skipped per file. With pytest-timeout importable, each test also gets
`--timeout` (default 300 s).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# backend_test.py compares the TF backend module with numpy; it runs once as it is (every
# such test fails on `KTF = None`) and once with torchk in the place of the TF module.
KTF_ALIAS = ('tests/keras/backend/backend_test.py', ['-p', 'torchk_as_tf_backend'])


def unpack(sdist, into):
    """Return the unpacked sdist root (unpacking a .tar.gz under `into` if needed)."""
    if os.path.isdir(sdist):
        return sdist
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split('/')[0]
        root = os.path.join(into, top)
        if not os.path.isdir(root):
            archive.extractall(into, filter='data')
    return root


def test_files(root):
    files = []
    for base, _, names in os.walk(os.path.join(root, 'tests')):
        files += [os.path.join(base, n) for n in names
                  if n.endswith('.py') and n not in ('conftest.py', '__init__.py')]
    return sorted(files)


def parse_junit(path):
    """Return {'passed','failed','skipped','error'} counts and the non-passing cases."""
    counts = dict(passed=0, failed=0, skipped=0, error=0)
    cases = []
    if not os.path.exists(path):
        return counts, cases
    for case in ET.parse(path).getroot().iter('testcase'):
        name = case.get('classname', '') + '::' + case.get('name', '')
        outcome, message = 'passed', ''
        for child in case:
            if child.tag in ('failure', 'error', 'skipped'):
                outcome = {'failure': 'failed'}.get(child.tag, child.tag)
                message = (child.get('message') or '').strip().splitlines()
                message = message[0][:300] if message else ''
                break
        counts[outcome] += 1
        if outcome != 'passed':
            cases.append(dict(test=name, outcome=outcome, message=message))
    return counts, cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sdist', required=True)
    parser.add_argument('--out', default='/tmp/keras_suite')
    parser.add_argument('--only', nargs='*', default=[])
    parser.add_argument('--file-timeout', type=int, default=900)
    parser.add_argument('--test-timeout', type=int, default=300)
    args = parser.parse_args()

    os.makedirs(os.path.join(args.out, 'junit'), exist_ok=True)
    root = unpack(args.sdist, args.out)
    scratch = os.path.join(args.out, 'cwd')
    os.makedirs(scratch, exist_ok=True)
    # Keras' own suite is trusted code: it saves and reloads models with Lambda layers,
    # whose bytecode torchk refuses to run by default (torchk/saving/safe_mode.py).
    env = dict(os.environ, KERAS_BACKEND='torchk.core', TORCHK_UNSAFE_DESERIALIZATION='1',
               PYTHONPATH=os.pathsep.join([REPO, HERE] + [p for p in [
                   os.environ.get('PYTHONPATH')] if p]))
    extra = []
    if importlib.util.find_spec('pytest_timeout') is not None:
        extra = ['--timeout', str(args.test_timeout)]

    summary_path = os.path.join(args.out, 'summary.json')
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    jobs = []
    for path in test_files(root):
        rel = os.path.relpath(path, root)
        jobs.append((rel, path, []))
        if rel == KTF_ALIAS[0]:
            jobs.append((rel + ' [KTF=torchk]', path, KTF_ALIAS[1]))
    for rel, path, plugins in jobs:
        if args.only and not any(s in rel for s in args.only):
            continue
        xml = os.path.join(args.out, 'junit',
                           rel.replace('/', '__').replace(' [KTF=torchk]', '.ktf') + '.xml')
        if os.path.exists(xml):
            os.remove(xml)
        start = time.time()
        proc = subprocess.run(
            ['timeout', str(args.file_timeout), sys.executable, '-m', 'pytest', '-q',
             '-p', 'no:cacheprovider', '-rfEs', '--junitxml', xml] + extra + plugins + [path],
            cwd=scratch, env=env, capture_output=True, text=True)
        with open(xml[:-4] + '.log', 'w') as log:
            log.write(proc.stdout + proc.stderr)
        counts, cases = parse_junit(xml)
        summary[rel] = dict(counts, returncode=proc.returncode,
                            seconds=round(time.time() - start, 1), cases=cases)
        print('%-55s %4d passed %3d failed %3d error %3d skipped  rc=%d  %.0fs' % (
            rel, counts['passed'], counts['failed'], counts['error'], counts['skipped'],
            proc.returncode, time.time() - start), flush=True)
        with open(summary_path, 'w') as f:
            json.dump(summary, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
