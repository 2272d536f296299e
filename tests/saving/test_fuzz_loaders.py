"""Fuzzing the loaders with real model files, mutated: every outcome is a loaded model or a
clean error (a ModelFileError, so a ValueError and an OSError) whose message starts with the
file's name, or 'the configuration'; no hang, no other exception.

CI runs a fixed, derandomized budget (`TORCHK_FUZZ_EXAMPLES`, 50 by default, shared by the
three fuzzers). For a bigger run and the table of outcomes:

    TORCHK_FUZZ_EXAMPLES=600 PYTHONPATH=$PWD python -m tests.saving.test_fuzz_loaders
"""
import collections
import copy
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault('KERAS_BACKEND', 'torchk.core')

import h5py  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import keras  # noqa: E402

from torchk.saving import ModelFileError  # noqa: E402

from .load_timeout import within  # noqa: E402

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures',
                      'tf_keras', 'models')
FILES = [os.path.join(MODELS, 'tf_keras-2.21.0', 'mlp.h5'),
         os.path.join(MODELS, 'tf.keras-2.15.1', 'mlp_sgd_nested.h5')]
CONFIG_FILE = os.path.join(MODELS, 'tf_keras-2.21.0', 'text_birnn_masked.h5')
SECONDS_PER_CASE = 20
EXAMPLES = int(os.environ.get('TORCHK_FUZZ_EXAMPLES', '50'))

OUTCOMES = collections.Counter()


def _fuzz_settings(share):
    return settings(max_examples=max(1, EXAMPLES * share // 100), derandomize=True,
                    deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(load, source):
    """Runs one case; records and checks its outcome."""
    try:
        with within(SECONDS_PER_CASE):
            load()
    except ModelFileError as e:
        OUTCOMES['ModelFileError'] += 1
        OUTCOMES['  caused by %s' % type(e.__cause__).__name__
                 if e.__cause__ is not None else '  raised by torchk'] += 1
        assert str(e).startswith(source + ': '), str(e)
        return
    except Exception as e:
        OUTCOMES['crash: %s' % type(e).__name__] += 1
        raise
    OUTCOMES['loaded'] += 1


def _with_bytes(data, load):
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, 'fuzzed.h5')
    try:
        with open(path, 'wb') as f:
            f.write(data)
        _check(lambda: load(path), path)
    finally:
        shutil.rmtree(directory)


def _read(path):
    with open(path, 'rb') as f:
        return f.read()


_DATA = [_read(path) for path in FILES]


@st.composite
def damaged_files(draw):
    data = bytearray(draw(st.sampled_from(_DATA)))
    if draw(st.booleans()):
        return bytes(data[:draw(st.integers(0, len(data) - 1))])
    for _ in range(draw(st.integers(1, 8))):
        data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
    return bytes(data)


@_fuzz_settings(share=40)
@given(damaged_files())
def test_truncated_and_byte_flipped_hdf5_files(data):
    _with_bytes(data, lambda path: keras.models.load_model(path))


with h5py.File(CONFIG_FILE, 'r') as _f:
    _CONFIG = json.loads(_f.attrs['model_config'])


def _paths(value, path=()):
    """Every place in a configuration: the key path to each dict value and list item."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, path + (index,))


_PLACES = [p for p in _paths(_CONFIG) if p]
_VALUES = [None, True, -1, 0, 1, 10 ** 12, 1e308, float('nan'), 'x', 'Dense', [], {},
           [[['embedding', 0, 0, {}]]], ['embedding', 7, 0], {'class_name': 'Dense'}]


def _layers(config):
    return config['config']['layers']


def _set(config, path, value):
    target = config
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DELETE = object()


@st.composite
def mutated_configurations(draw):
    """The configuration with a layer renamed as another, a layer rewired (maybe into a
    cycle), values set or deleted anywhere, and maybe one value nested deeply."""
    config = copy.deepcopy(_CONFIG)
    layers = _layers(config)
    if draw(st.booleans()):  # two layers of one name
        a, b = draw(st.lists(st.integers(0, len(layers) - 1), min_size=2, max_size=2))
        layers[a]['name'] = layers[b]['name']
    if draw(st.booleans()):  # a node on any layer, maybe a later one (a cycle)
        layer = layers[draw(st.integers(1, len(layers) - 1))]
        source = layers[draw(st.integers(0, len(layers) - 1))]['name']
        layer['inbound_nodes'] = [[[source, draw(st.integers(0, 2)), 0, {}]]]
    for _ in range(draw(st.integers(0, 3))):
        delete = draw(st.booleans())
        _set_somewhere(draw, config, _DELETE if delete else draw(st.sampled_from(_VALUES)))
    if draw(st.booleans()):
        value = draw(st.sampled_from(_VALUES))
        for _ in range(draw(st.sampled_from([50, 150, 5000]))):
            value = [value]
        _set_somewhere(draw, config, value)
    return config


def _set_somewhere(draw, config, value):
    places = [p for p in _paths(config) if p]
    _set(config, draw(st.sampled_from(places)), value)


def _json(config):
    """The configuration as JSON text; one nested too deeply for `json.dumps` becomes 5000
    nested lists, a text as deep."""
    try:
        return json.dumps(config, allow_nan=True)
    except RecursionError:
        return '[' * 5000 + ']' * 5000


@_fuzz_settings(share=30)
@given(mutated_configurations())
def test_mutated_json_configurations(config):
    text = _json(config)
    _check(lambda: keras.models.model_from_json(text), 'the configuration')


@_fuzz_settings(share=30)
@given(mutated_configurations())
def test_mutated_configurations_in_hdf5_files(config):
    text = _json(config)
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, 'fuzzed.h5')
    try:
        shutil.copyfile(CONFIG_FILE, path)
        with h5py.File(path, 'r+') as f:
            f.attrs['model_config'] = text
        _check(lambda: keras.models.load_model(path), path)
    finally:
        shutil.rmtree(directory)


def main():
    failures = 0
    for test in (test_truncated_and_byte_flipped_hdf5_files, test_mutated_json_configurations,
                 test_mutated_configurations_in_hdf5_files):
        try:
            test()
        except Exception as e:  # a crash or a hang: report it with the table
            failures += 1
            print('%s failed: %s: %s' % (test.__name__, type(e).__name__, e))
    cases = OUTCOMES['loaded'] + OUTCOMES['ModelFileError'] + sum(
        n for k, n in OUTCOMES.items() if k.startswith('crash'))
    print('cases run: %d' % cases)
    causes = sorted(k for k in OUTCOMES if k.startswith('  '))
    for outcome in ['loaded', 'ModelFileError'] + causes:
        print('%-40s %d' % (outcome, OUTCOMES[outcome]))
    print('crashes: %d' % sum(n for k, n in OUTCOMES.items() if k.startswith('crash')))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
