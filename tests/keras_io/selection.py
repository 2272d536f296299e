"""Which keras-io guides and examples the canon runner runs, and why the others are left out.

A script is read, not run: its code (the module's statements, without the Markdown of its
docstrings) is parsed, and it is left out, with the first reason found, when it
- is a guide of a package outside the Keras API (`guides/keras_cv`, `keras_nlp`,
  `keras_tuner`);
- says `Accelerator: TPU` in its header;
- imports a package other than the standard library, TensorFlow/Keras, numpy and the
  general-purpose scientific packages of `GENERAL_PACKAGES` (which compute on numpy arrays and
  never see a tensor): `keras_cv`, `tensorflow_addons`, `tensorflow_datasets`, ...;
- fetches data in a shell cell (a docstring that starts with `shell`, keras-io's notation
  for a notebook's shell commands, running `curl`, `wget`, `gdown`, `git clone`, `pip`, ...);
- calls `get_file` (a download), names a URL in its code, or asks for pretrained weights
  (`weights="imagenet"`);
- reads a data set downloaded by hand (`BY_HAND`: said in its prose, not visible in code).
What remains takes its data from `keras.datasets` (replaced offline by
`synthetic_datasets.py`) or makes them itself.
"""
import ast
import os
import re
import sys

# Packages that compute on numpy arrays (plots, metrics, tables, images) and never touch a
# tensor: a script importing them stays in (the runner puts them on the path of both sides).
GENERAL_PACKAGES = frozenset({'numpy', 'scipy', 'sklearn', 'matplotlib', 'mpl_toolkits',
                              'pandas', 'PIL', 'IPython', 'tqdm'})
KERAS_PACKAGES = frozenset({'tensorflow', 'keras', 'tf_keras'})
GUIDE_PACKAGES = ('keras_cv', 'keras_nlp', 'keras_tuner')
_URL = re.compile(r'\b(https?|gs|ftp)://')
_FETCH_COMMAND = re.compile(r'\b(curl|wget|gdown|git|pip|kaggle|unzip|tar)\b')
BY_HAND = {
    'examples/audio/speaker_recognition_using_cnn.py':
        'reads a Kaggle data set downloaded by hand (~/Downloads/16000_pcm_speeches)',
    'examples/structured_data/imbalanced_classification.py':
        'reads a Kaggle data set downloaded by hand (creditcard.csv)',
}


def _docstrings(tree):
    """The string statements of a module: keras-io's Markdown cells."""
    return [node for node in tree.body
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)]


def _imported_packages(tree):
    packages = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split('.')[0]
            if top not in packages:
                packages.append(top)
    return packages


def _code_strings(tree, docstrings):
    cells = {id(node.value) for node in docstrings}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in cells]


def _calls_named(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(
                function, 'id', None)
            if called == name:
                return True
    return False


def _pretrained_weights(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == 'weights' and isinstance(
                node.value, ast.Constant) and node.value.value == 'imagenet':
            return True
    return False


def left_out_reason(relative_path, source):
    """Why the script at `relative_path` (under the keras-io checkout) is not run, or None.

    # Arguments
        relative_path: e.g. `'examples/vision/mnist_convnet.py'`.
        source: the script's text.

    # Returns
        A short reason (str), or None if the runner runs the script.
    """
    parts = relative_path.split('/')
    if parts[0] == 'guides' and len(parts) > 2:
        return 'a guide of %s, a package outside the Keras API' % parts[1]
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    header = docstrings[0].value.value if docstrings else ''
    if re.search(r'^Accelerator:\s*TPU', header, re.M):
        return 'needs a TPU (Accelerator: TPU)'
    outside = [p for p in _imported_packages(tree)
               if p not in KERAS_PACKAGES and p not in GENERAL_PACKAGES
               and p not in sys.stdlib_module_names]
    if outside:
        return 'imports %s (outside the Keras API)' % ', '.join(outside)
    for cell in docstrings:
        text = cell.value.value
        if text.startswith('shell'):
            fetching = [line.strip() for line in text.splitlines()[1:]
                        if _FETCH_COMMAND.search(line)]
            if fetching:
                return 'fetches its data in a shell cell (`%s`)' % fetching[0][:70]
    if _calls_named(tree, 'get_file'):
        return 'downloads its data (keras.utils.get_file)'
    urls = [s for s in _code_strings(tree, docstrings) if _URL.search(s)]
    if urls:
        return 'reads a URL (`%s`)' % urls[0][:70]
    if _pretrained_weights(tree):
        return 'downloads pretrained weights (weights="imagenet")'
    return BY_HAND.get(relative_path)


def scripts(keras_io):
    """Every guide and example of a keras-io checkout, with its reason to be left out.

    # Arguments
        keras_io: the checkout's root directory (holding `guides/` and `examples/`).

    # Returns
        A sorted list of `(relative_path, reason)`, `reason` None for the scripts to run.
    """
    found = []
    for top in ('guides', 'examples'):
        for directory, _, names in os.walk(os.path.join(keras_io, top)):
            for name in names:
                if name.endswith('.py'):
                    path = os.path.join(directory, name)
                    relative = os.path.relpath(path, keras_io)
                    with open(path, encoding='utf-8') as f:
                        found.append((relative, left_out_reason(relative, f.read())))
    return sorted(found)
