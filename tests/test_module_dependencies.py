"""torchk's imports point one way: no module imports, even lazily inside a function, one that
imports it back; no folder (`layers/`, `tf/`, `passes/`, ...; each module of the package's top
level counts alone) imports one that imports it back; and the graph, the ops and the
variables never reach programs, passes or `function` (docs/ARCHITECTURE.md, "Modules").

`torchk.overrides` names the code of each override as a string, resolved when Keras imports
the module it changes: the backend installs the registry without importing what registers
torchk into Keras (`tests/test_overrides.py` checks that the registry imports nothing)."""
import ast
import pathlib

import pytest

import torchk

PACKAGE = pathlib.Path(torchk.__file__).parent
LOW_LEVEL = ['graph', 'variables', 'validation', 'math_ops', 'array_ops', 'nn_ops', 'conv_ops',
             'random_ops', 'ctc', 'rnn_kernels', 'rnn_scan', 'structure']
HIGH_LEVEL = ('torchk.function', 'torchk.program', 'torchk.passes')


def _module_name(path):
    parts = ('torchk',) + path.relative_to(PACKAGE).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _imported(tree, module, is_package):
    """The torchk modules that `module`'s source imports anywhere in it."""
    package = module if is_package else module.rpartition('.')[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split('.')[0] == 'torchk')
        elif isinstance(node, ast.ImportFrom):
            base = package.split('.')[:len(package.split('.')) - node.level + 1] \
                if node.level else []
            target = '.'.join(base + ([node.module] if node.module else []))
            if target.split('.')[0] != 'torchk':
                continue
            for alias in node.names:
                name = target + '.' + alias.name
                path = PACKAGE.parent / name.replace('.', '/')
                yield name if path.with_suffix('.py').exists() or path.is_dir() else target


def _import_graph():
    graph = {}
    for path in PACKAGE.rglob('*.py'):
        module = _module_name(path)
        graph[module] = set(_imported(ast.parse(path.read_text()), module,
                                      path.name == '__init__.py'))
    return graph


def _reachable(graph, start):
    seen, stack = set(), [start]
    while stack:
        for name in graph.get(stack.pop(), ()):
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return seen


def test_no_import_circle():
    graph = _import_graph()
    circular = sorted(m for m in graph if m in _reachable(graph, m))
    assert circular == []


def _folder(module):
    """`torchk.layers` for every module of `torchk/layers/`; a top-level module is its own."""
    parts = module.split('.')
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return '.'.join(parts[:2]) + '/'
    return module


def test_no_import_circle_between_folders():
    folders = {}
    for module, imported in _import_graph().items():
        folders.setdefault(_folder(module), set()).update(
            _folder(name) for name in imported if _folder(name) != _folder(module))
    circular = sorted(f for f in folders if f in _reachable(folders, f))
    assert circular == []


@pytest.mark.parametrize('module', LOW_LEVEL)
def test_low_level_modules_never_import_programs(module):
    reached = _reachable(_import_graph(), 'torchk.' + module)
    assert sorted(m for m in reached if m.startswith(HIGH_LEVEL)) == []
