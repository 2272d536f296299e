"""Print the Markdown tables of docs/KERAS_SUITE.md from run_suite.py / run_examples.py results.

Usage:
    python tests/keras_sdist/report.py OUT [OUT ...]

Each OUT is a `--out` directory of run_suite.py (its `summary.json`) or of run_examples.py
(its `examples.json`); later directories override earlier ones file by file.
"""
import json
import os
import sys


def main(outs):
    suite, examples = {}, {}
    for out in outs:
        for name, into in (('summary.json', suite), ('examples.json', examples)):
            path = os.path.join(out, name)
            if os.path.exists(path):
                into.update(json.load(open(path)))
    if suite:
        total = dict(passed=0, failed=0, error=0, skipped=0)
        print('| file | passed | failed | error | skipped |\n|---|---:|---:|---:|---:|')
        for rel in sorted(suite):
            row = suite[rel]
            print('| %s | %d | %d | %d | %d |' % (
                rel.replace('tests/', '', 1), row['passed'], row['failed'], row['error'],
                row['skipped']))
            if not rel.endswith('[KTF=torchk]'):
                for key in total:
                    total[key] += row[key]
        print('| **total** (without the KTF=torchk row) | %(passed)d | %(failed)d | %(error)d '
              '| %(skipped)d |' % total)
        print('\nNon-passing tests:\n')
        for rel in sorted(suite):
            for case in suite[rel]['cases']:
                if case['outcome'] != 'skipped':
                    print('- %s `%s`: %s' % (case['outcome'], case['test'].split('::', 1)[-1]
                                             if '::' in case['test'] else case['test'],
                                             case['message'][:160]))
    if examples:
        print('\n| example | result | seconds | error |\n|---|---|---:|---|')
        for name in sorted(examples):
            row = examples[name]
            print('| %s | %s | %.0f | %s |' % (name, 'pass' if row['passed'] else 'FAIL',
                                              row['seconds'], row['error'][:120]))


if __name__ == '__main__':
    main(sys.argv[1:])
