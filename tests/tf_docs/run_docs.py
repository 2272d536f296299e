"""Run TensorFlow's guides and tutorials (tensorflow/docs notebooks) unmodified on TensorFlow
and on torchk.

Usage:
    python tests/tf_docs/run_docs.py --docs /tmp/tf-docs --out /tmp/tf_docs_run \
        [--side tf|torchk|both] [--only NAME ...] [--timeout 600] [--pythonpath DIR] \
        [--tf-python PYTHON] [--report docs/TF_DOCS.md --source 'tensorflow/docs at ...']

`--docs` is a checkout of tensorflow/docs from the TF 2.15 era (before Keras 3); its
`site/en/guide` and `site/en/tutorials` notebooks are converted to scripts (`convert.py`,
written to `OUT/scripts/`) and `notebook_selection.py` picks the ones to run. Each runs once
per side, one process at a time, through `tests/keras_io/harness.py` (offline: its downloads
answered by `tests/keras_io/standins`, `keras.datasets` by `synthetic_datasets`; `import
keras` on TensorFlow's side is tf_keras, as `keras` 2.15 was `tf.keras`), in a fresh scratch
directory holding its `%%writefile` files, under `nice`, after waiting while `/tmp/QUIET`
exists (`tests/keras_io/runs.py`):
- TensorFlow: `TF_PYTHON harness.py SCRIPT` with `TF_USE_LEGACY_KERAS=1` (tf_keras);
- torchk: `python -m torchk run harness.py SCRIPT`, this checkout (or `--torchk DIR`) first
  on PYTHONPATH.
Results go to `OUT/tf.json` and `OUT/torchk.json`, logs to `OUT/logs/<side>/<name>.log`.
TensorFlow's results are the reference and are kept: `--side both` runs TensorFlow only for
notebooks missing from `tf.json` (`--rerun-tf` runs it again); torchk does not run the
notebooks TensorFlow timed out on (too slow for the machine: left out). `--report` rewrites
the generated part of the Markdown report from both JSON files. `--pythonpath` adds a directory
of the general packages some notebooks import (matplotlib, pandas, seaborn, pillow,
scikit-learn, IPython) to both sides.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), 'keras_io'))
import notebook_selection  # noqa: E402
import report  # noqa: E402
import runs  # noqa: E402

# Notebooks that hard-code a data set's real sample counts get them (KERAS_IO_DATA=real).
REAL_COUNTS = {
    'guide/mixed_precision.ipynb': 'x_train.reshape(60000, 784)',
}


def script_name(relative):
    """`'tutorials/keras/regression.ipynb'` -> `'tutorials__keras__regression'`."""
    return relative[:-len('.ipynb')].replace('/', '__')


def write_script(out, relative, script):
    """Writes the converted notebook to `OUT/scripts/<name>.py`; returns its path."""
    directory = os.path.join(out, 'scripts')
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, script_name(relative) + '.py')
    with open(path, 'w') as f:
        f.write(script.code)
    return path


def run_notebook(side, relative, script, out, timeout, tf_python, extra_paths,
                 torchk_root=REPO, nice=15, wait_quiet=True):
    """Runs one converted notebook on one side; returns its result dict."""
    return runs.run_script(
        side, write_script(out, relative, script), script_name(relative), out, timeout,
        tf_python, extra_paths, torchk_root,
        variables=dict(KERAS_IO_DATA='real' if relative in REAL_COUNTS else 'small',
                       HARNESS_KERAS='tf_keras',
                       MPLCONFIGDIR=os.path.join(out, 'mplconfig')),
        files=script.files, nice=nice, wait_quiet=wait_quiet)


def main():
    args = runs.argument_parser(__doc__.splitlines()[0], 'docs', 'a tensorflow/docs checkout',
                                '/tmp/tf_docs_run', 600, 'notebooks', REPO).parse_args()
    docs = os.path.abspath(args.docs)
    os.makedirs(args.out, exist_ok=True)
    notebooks = notebook_selection.notebooks(docs)
    scripts = {relative: script for relative, script, reason in notebooks if reason is None
               and (not args.only or any(s in relative for s in args.only))}
    runs.run_corpus(sorted(scripts), args, lambda side, relative: run_notebook(
        side, relative, scripts[relative], args.out, args.timeout, args.tf_python,
        args.pythonpath, os.path.abspath(args.torchk), args.nice, args.wait_quiet),
        skip_tf_timeouts=True)
    if args.report:
        items = [(relative, reason) for relative, _, reason in notebooks]
        report.write(args.report, report.generated(args.out, items, args.source or docs,
                                                   REAL_COUNTS, unit='notebooks',
                                                   slow_left_out=True),
                     'tests/tf_docs/run_docs.py')


if __name__ == '__main__':
    main()
