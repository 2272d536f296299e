"""Which notebooks of TensorFlow's docs the runner runs, and why the others are left out.

A notebook is read, not run: converted (`convert.py`), its code parsed, and left out, with
the first reason found, when it
- is one of `BY_HAND`'s (a reason its code does not show: a cluster of processes started
  from shell cells, a command-line tool, a size beyond a 2-core CPU);
- needs a TPU (`TPUClusterResolver`, `TPUStrategy`);
- imports a package other than the standard library, TensorFlow/Keras, numpy, protobuf
  (TensorFlow's own `google.protobuf`) and the general packages of
  `keras_io/selection.GENERAL_PACKAGES` (plots, tables, images, metrics on numpy arrays):
  TF Hub, tensorflow_datasets, tensorflow_probability, ...;
- uses `tf.estimator` (removed in TF 2.16: the reference TensorFlow has none);
- uses TF 1's graph API (`tf.compat.v1`: sessions, placeholders, variable scopes), the
  subject of the migration guides;
- builds a `tf.keras.applications` model with its pretrained ImageNet weights (a download
  of real weights; no stand-in).
The rest use Keras or TF's core API and get their downloads from `standins` (see
`keras_io/standins`). A notebook that TensorFlow cannot finish within the runner's time
limit on this 2-core CPU is left out too (the report says so, from TensorFlow's results).
"""
import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'keras_io'))
import convert  # noqa: E402
from selection import (GENERAL_PACKAGES, KERAS_PACKAGES,  # noqa: E402
                       imported_modules)

NOTEBOOK_DIRS = ('site/en/guide', 'site/en/tutorials')
ROOT = 'site/en'
BY_HAND = {
    'guide/migrate/upgrade.ipynb':
        'runs the tf_upgrade_v2 command-line tool (shell cells only)',
    'tutorials/distribute/multi_worker_with_ctl.ipynb':
        'trains in worker processes its shell cells start (a cluster of TF servers)',
    'tutorials/distribute/multi_worker_with_keras.ipynb':
        'trains in worker processes its shell cells start (a cluster of TF servers)',
    'tutorials/generative/pix2pix.ipynb':
        'too big for a 2-core CPU: a 256x256 U-Net GAN trained for 40000 steps',
}
_TPU = re.compile(r'\b(TPUClusterResolver|TPUStrategy)\b')
_ESTIMATOR = re.compile(r'\btf\.estimator\b|\bestimator\.\w+\(')
_TF1 = re.compile(r'\btf\.compat\.v1\b|\btf1\.')


def _outside_packages(tree, local_modules):
    outside = []
    for module in imported_modules(tree):
        top = module.split('.')[0]
        if (top in KERAS_PACKAGES or top in GENERAL_PACKAGES or top in local_modules
                or top in sys.stdlib_module_names or module.startswith('google.protobuf')):
            continue
        name = module if top == 'google' else top
        if name not in outside:
            outside.append(name)
    return outside


def _pretrained_models(tree):
    """The `applications` models built with their default (ImageNet) or 'imagenet'
    weights."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Attribute) and owner.attr == 'applications'
                and node.func.attr[:1].isupper()):
            continue
        weights = [k.value for k in node.keywords if k.arg == 'weights']
        if not weights or (isinstance(weights[0], ast.Constant)
                           and weights[0].value == 'imagenet'):
            found.append(node.func.attr)
    return found


def left_out_reason(relative_path, script):
    """Why the notebook at `relative_path` (under `site/en`) is not run, or None.

    # Arguments
        relative_path: e.g. `'tutorials/keras/classification.ipynb'`.
        script: its `convert.Script`.

    # Returns
        A short reason (str), or None if the runner runs the notebook.
    """
    if relative_path in BY_HAND:
        return BY_HAND[relative_path]
    code = script.code
    if _TPU.search(code):
        return 'needs a TPU (%s)' % _TPU.search(code).group(1)
    tree = ast.parse(code)
    local = {os.path.splitext(name)[0] for name in script.files if name.endswith('.py')}
    outside = _outside_packages(tree, local)
    if outside:
        return 'imports %s (outside TensorFlow and the general packages)' % ', '.join(outside)
    if _ESTIMATOR.search(code):
        return 'uses tf.estimator (removed in TF 2.16; the reference TensorFlow has none)'
    if _TF1.search(code):
        return "uses TF 1's graph API (tf.compat.v1)"
    pretrained = _pretrained_models(tree)
    if pretrained:
        return ('downloads pretrained ImageNet weights (tf.keras.applications.%s)'
                % pretrained[0])
    return None


def notebooks(docs):
    """Every notebook of the guide and the tutorials, with its script and its reason to be
    left out.

    # Arguments
        docs: the root of a tensorflow/docs checkout (holding `site/en`).

    # Returns
        A sorted list of `(relative_path, script, reason)`, `relative_path` under
        `site/en`, `reason` None for the notebooks to run.
    """
    found = []
    for top in NOTEBOOK_DIRS:
        for directory, _, names in os.walk(os.path.join(docs, top)):
            for name in names:
                if name.endswith('.ipynb'):
                    path = os.path.join(directory, name)
                    relative = os.path.relpath(path, os.path.join(docs, ROOT))
                    script = convert.convert_file(path)
                    found.append((relative, script, left_out_reason(relative, script)))
    return sorted(found, key=lambda item: item[0])
