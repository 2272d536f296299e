"""The override registry (`torchk.overrides`): every entry names a test that exists, the
chains installed are the ones declared, in the declared order, and every change torchk makes
to Keras is an entry's (`tests/override_chains.py` observes them)."""
import ast
import json
import os
import subprocess
import sys

import pytest

from torchk import overrides

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVERRIDES = overrides.OVERRIDES


def _defined_tests(path):
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize('override', OVERRIDES, ids=lambda o: o.implementation)
def test_each_override_names_a_test_that_exists(override):
    path, _, name = override.test.partition('::')
    assert path.startswith('tests/') and os.path.isfile(os.path.join(ROOT, path)), override.test
    assert name in _defined_tests(path), override.test


@pytest.mark.parametrize('override', OVERRIDES, ids=lambda o: o.implementation)
def test_each_override_is_declared_completely(override):
    assert override.kind in (overrides.WRAP, overrides.SET, overrides.REGISTER,
                             overrides.SUBCLASSES)
    assert override.scope in (overrides.BACKEND, overrides.FACADE)
    assert override.targets and all(':' in target for target in override.targets)
    assert set(override.when) <= set(overrides.CONDITIONS)
    assert override.reference
    assert override.after is None or override.scope == overrides.BACKEND
    if override.kind == overrides.REGISTER:
        assert len({target.partition(':')[0] for target in override.targets}) == 1


def test_implementations_are_unique():
    names = [override.implementation for override in OVERRIDES]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_facade_overrides_follow_the_backend_overrides():
    """The table's order is each attribute's chain order: the facade's come last, as they
    are applied last."""
    scopes = [override.scope for override in OVERRIDES]
    assert scopes == sorted(scopes, key=lambda scope: scope == overrides.FACADE)


def test_the_registry_imports_nothing_of_torchk_or_keras():
    """The backend installs it before Keras (and before most of torchk) is imported; the
    implementations are resolved by name when applied."""
    tree = ast.parse(open(overrides.__file__).read())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module or '.' for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert imported == {'importlib', 'sys', 'typing'}


def _installed(scenario, **environment):
    run = subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'overrides_installed.py'),
                          scenario], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYTHONPATH=ROOT, **environment))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope='module', params=['backend', 'facade'])
def installed(request):
    return request.param, _installed(request.param)


def _subclasses_override(target, found):
    """The `SUBCLASSES` overrides whose class `target`'s owner derives from and whose
    attribute it defines itself."""
    attribute = target.rpartition('.')[2]
    for override in OVERRIDES:
        if override.kind != overrides.SUBCLASSES:
            continue
        base = override.targets[0]
        base_class = found[base]['observed'].rpartition('.')[0]
        if (attribute == base.rpartition('.')[2] and found[target]['own']
                and base_class in found[target]['classes']):
            yield override


def _declared_chain(target, scenario, found):
    """`target`'s chain as `OVERRIDES` declares it: the overrides of it in the table's order
    whose conditions hold (a SET starting a new chain, after which the SUBCLASSES overrides
    already applied wrap the new value)."""
    chain, inherited = [], list(_subclasses_override(target, found))
    for override in OVERRIDES:
        if override.scope == overrides.FACADE and scenario == 'backend':
            continue
        if override in inherited:
            chain.append(override.implementation)
            continue
        if target not in override.targets:
            continue
        if not found[target]['conditions'][override.implementation]:
            continue
        if override.kind in (overrides.SET, overrides.REGISTER):
            chain = [override.implementation] + [
                o.implementation for o in inherited
                if OVERRIDES.index(o) < OVERRIDES.index(override)]
        else:
            chain.append(override.implementation)
    return chain


def test_installed_chains_are_the_declared_ones(installed):
    scenario, found = installed
    targets = found['targets']
    mismatched = {target: (targets[target]['chain'], _declared_chain(target, scenario, targets))
                  for target in targets
                  if targets[target]['chain'] != _declared_chain(target, scenario, targets)}
    assert mismatched == {}


def test_every_layer_call_runs_in_its_policy(installed):
    """The `SUBCLASSES` override of `Layer.call` reached every layer class defining `call`."""
    _, found = installed
    missing = sorted(name for name, chain in found['subclass_calls'].items()
                     if 'torchk.mixed_precision:in_policy' not in chain)
    assert missing == []


def _covered(change, found):
    """Whether an observed change of Keras is an override's."""
    if '_GLOBAL_CUSTOM_OBJECTS[' in change:  # Keras' registry of custom objects, by its API
        return True
    if change in found['subclass_calls'] or change == 'keras.engine.base_layer.Layer.' \
            '__init_subclass__':
        return True
    if change in {entry['observed'] for entry in found['targets'].values()}:
        return True
    registered = [target.partition(':')[0] for override in OVERRIDES
                  for target in override.targets if target.endswith(':*')]
    return any(change.startswith(module + '.') for module in registered)


def test_every_change_to_keras_is_an_override(installed):
    _, found = installed
    assert [change for change in found['changes'] if not _covered(change, found)] == []


def test_the_facade_adds_only_facade_overrides():
    backend, facade = _installed('backend'), _installed('facade')
    added = {target for target, entry in facade['targets'].items()
             if entry['chain'] != backend['targets'].get(target, {}).get('chain')}
    declared = {target for override in OVERRIDES if override.scope == overrides.FACADE
                for target in override.targets}
    assert added <= declared
