"""Which of Keras 2.3.1's backend functions the oracle tests compare with TensorFlow.

The functions are those keras/backend/__init__.py imports from the backend, less the ones
Keras itself implements in keras/backend/common.py (epsilon, floatx, image_data_format...) and
Theano's `pattern_broadcast`. A test covers the names it lists in `@covers(...)`; this reads
them from the test modules' source, so it runs without TensorFlow:

    python tests/oracle/oracle_coverage.py     # prints {"covered": N, "total": M, "missing": [...]}
"""
import ast
import glob
import importlib.util
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
KERAS_OWNED = {'epsilon', 'set_epsilon', 'floatx', 'set_floatx', 'cast_to_floatx',
               'image_data_format', 'set_image_data_format', 'normalize_data_format',
               'symbolic', 'eager', 'backend', 'pattern_broadcast'}


def backend_functions():
    spec = importlib.util.find_spec('keras')
    path = os.path.join(list(spec.submodule_search_locations)[0], 'backend', '__init__.py')
    with open(path) as f:
        names = set(re.findall(r'from \.load_backend import (\w+)', f.read()))
    return sorted(names - KERAS_OWNED)


def _strings(node):
    """The string constants of a list, tuple or dict (its keys) literal."""
    items = node.keys if isinstance(node, ast.Dict) else getattr(node, 'elts', [])
    return [item.value for item in items
            if isinstance(item, ast.Constant) and isinstance(item.value, str)]


def covered_functions():
    """The names the test modules pass to `covers`: string arguments, and starred module
    constants (`covers(*REDUCTIONS)`, a list or a dict of names)."""
    names = set()
    for path in glob.glob(os.path.join(HERE, 'test_*.py')):
        with open(path) as f:
            tree = ast.parse(f.read())
        constants = {target.id: _strings(node.value) for node in tree.body
                     if isinstance(node, ast.Assign) for target in node.targets
                     if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == 'covers'):
                for arg in node.args:
                    if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
                        names.update(constants.get(arg.value.id, []))
                    elif isinstance(arg, ast.Constant):
                        names.add(arg.value)
    return names


def report():
    functions = backend_functions()
    covered = covered_functions()
    return {'covered': len(covered & set(functions)), 'total': len(functions),
            'missing': sorted(set(functions) - covered),
            'unknown': sorted(covered - set(functions))}


if __name__ == '__main__':
    print(json.dumps(report()))
