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
The download rules (shell cell, `get_file`, URL) do not apply to the scripts of `SERVED`,
whose downloads all have stand-ins (`standins`; the runner runs their shell cells with
`shell.py`). What remains takes its data from `keras.datasets` (replaced offline by
`synthetic_datasets.py`), from stand-ins, or makes them itself.
"""
import ast
import os
import re
import sys

# Packages that compute on numpy arrays (plots, metrics, tables, images) or serve general
# needs (HTTP, Python 2 compatibility) and never touch a tensor: a script importing them
# stays in (the runner puts them on the path of both sides; `offline.py` serves `requests`).
GENERAL_PACKAGES = frozenset({'numpy', 'scipy', 'sklearn', 'matplotlib', 'mpl_toolkits',
                              'pandas', 'seaborn', 'PIL', 'IPython', 'tqdm', 'requests',
                              'six'})
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

# The scripts that download their data, all of it served by stand-ins: {script: its URLs}.
SERVED = {
    'examples/structured_data/structured_data_classification_from_scratch.py':
        ('http://storage.googleapis.com/download.tensorflow.org/data/heart.csv',),
    'examples/structured_data/structured_data_classification_with_feature_space.py':
        ('http://storage.googleapis.com/download.tensorflow.org/data/heart.csv',),
    'examples/structured_data/collaborative_filtering_movielens.py':
        ('http://files.grouplens.org/datasets/movielens/ml-latest-small.zip',),
    'examples/timeseries/timeseries_weather_forecasting.py':
        ('https://storage.googleapis.com/tensorflow/tf-keras-datasets/'
         'jena_climate_2009_2016.csv.zip',),
    'examples/timeseries/timeseries_classification_from_scratch.py':
        ('https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/FordA_TRAIN.tsv',
         'https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/FordA_TEST.tsv'),
    'examples/timeseries/timeseries_classification_transformer.py':
        ('https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/FordA_TRAIN.tsv',
         'https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/FordA_TEST.tsv'),
    'examples/timeseries/timeseries_anomaly_detection.py':
        ('https://raw.githubusercontent.com/numenta/NAB/master/data/artificialNoAnomaly/'
         'art_daily_small_noise.csv',
         'https://raw.githubusercontent.com/numenta/NAB/master/data/artificialWithAnomaly/'
         'art_daily_jumpsup.csv'),
    'examples/nlp/text_classification_from_scratch.py':
        ('https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz',),
    'examples/nlp/neural_machine_translation_with_transformer.py':
        ('http://storage.googleapis.com/download.tensorflow.org/data/spa-eng.zip',),
    'examples/nlp/multi_label_classification.py':
        ('https://github.com/soumik12345/multi-label-text-classification/releases/download/'
         'v0.2/arxiv_data.csv',),
    'examples/vision/image_classification_from_scratch.py':
        ('https://download.microsoft.com/download/3/E/1/3E1C3F21-ECDB-4869-8368-6DEBA77B919F/'
         'kagglecatsanddogs_5340.zip',),
    'examples/vision/captcha_ocr.py':
        ('https://github.com/AakashKumarNain/CaptchaCracker/raw/master/'
         'captcha_images_v2.zip',),
}


def _docstrings(tree):
    """The string statements of a module: keras-io's Markdown cells."""
    return [node for node in tree.body
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)]


def imported_modules(tree):
    """The absolute module names a parsed script imports, in order of first import."""
    modules = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        modules += [name for name in names if name not in modules]
    return modules


def imported_packages(tree):
    """The top-level packages a parsed script imports, in order of first import."""
    packages = []
    for module in imported_modules(tree):
        top = module.split('.')[0]
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
    outside = [p for p in imported_packages(tree)
               if p not in KERAS_PACKAGES and p not in GENERAL_PACKAGES
               and p not in sys.stdlib_module_names]
    if outside:
        return 'imports %s (outside the Keras API)' % ', '.join(outside)
    if relative_path in SERVED:
        return BY_HAND.get(relative_path)
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
