"""Run keras-io's tf.keras 2 guides and examples unmodified on TensorFlow and on torchk.

Usage:
    python tests/keras_io/run_canon.py --keras-io /tmp/keras-io --out /tmp/keras_io_canon \
        [--side tf|torchk|both] [--only NAME ...] [--timeout 900] [--pythonpath DIR] \
        [--report docs/KERAS_IO.md]

`--keras-io` is a checkout of keras-io from its TF 2.x era (before its move to Keras 3);
`selection.py` picks the scripts to run and gives the others' reasons. Each script runs once
per side, one process at a time, in a fresh scratch directory `OUT/<side>/<name>/`, after
its shell cells (`shell.py`: the `curl`/`wget` of a download served by `standins`), through
`harness.py` (offline: downloads answered by `standins`, `keras.datasets` replaced by
`synthetic_datasets.py`), under `nice`, after waiting while `/tmp/QUIET` exists (`runs.py`):
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
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import report  # noqa: E402
import runs  # noqa: E402
import selection  # noqa: E402
import shell  # noqa: E402

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


def run_script(side, keras_io, relative, out, timeout, tf_python, extra_paths,
               torchk_root=REPO, nice=15, wait_quiet=True):
    """Runs one script on one side (`runs.run_script`), after its shell cells
    (`shell.py`); returns its result dict."""
    script = os.path.join(keras_io, relative)
    with open(script, encoding='utf-8') as f:
        cells = shell.shell_cells(f.read())
    return runs.run_script(
        side, script, relative[:-3].replace('/', '__'), out, timeout, tf_python, extra_paths,
        torchk_root,
        variables=dict(KERAS_IO_DATA='real' if relative in REAL_COUNTS else 'small',
                       MPLCONFIGDIR=os.path.join(out, 'mplconfig')),
        prepare=(lambda scratch: shell.run_cells(cells, scratch, extra_paths)) if cells
        else None,
        nice=nice, wait_quiet=wait_quiet)


def main():
    args = runs.argument_parser(__doc__.splitlines()[0], 'keras-io',
                                'a keras-io checkout of its TF 2.x era', '/tmp/keras_io_canon',
                                900, 'scripts', REPO).parse_args()
    keras_io = os.path.abspath(args.keras_io)
    os.makedirs(args.out, exist_ok=True)
    scripts = selection.scripts(keras_io)
    to_run = [relative for relative, reason in scripts if reason is None
              and (not args.only or any(s in relative for s in args.only))]
    runs.run_corpus(to_run, args, lambda side, relative: run_script(
        side, keras_io, relative, args.out, args.timeout, args.tf_python, args.pythonpath,
        os.path.abspath(args.torchk), args.nice, args.wait_quiet))
    if args.report:
        report.write(args.report, report.generated(args.out, scripts, args.source or keras_io,
                                                   REAL_COUNTS), 'tests/keras_io/run_canon.py')


if __name__ == '__main__':
    main()
