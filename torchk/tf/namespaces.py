"""How `torchk.tf`'s namespaces are built from the op table, and what a missing name raises.

Every `tf.*` namespace (`tf`, `tf.math`, `tf.nn`, ...) is a module whose `__getattr__`
raises an `AttributeError` naming the missing `tf.X`, saying torchk does not provide it and
pointing at docs/TF_SUBSET.md, the list of what it provides (made by `subset_document`).
"""
import functools
import inspect
import sys
import types

import torch

from .. import graph
from . import op_table
from .tensors import eager

DOCUMENT = 'docs/TF_SUBSET.md'
# Ops whose first argument is a list of tensors, and ops whose first argument is no tensor.
_LIST_FIRST = ('concat', 'stack', 'math.add_n')
_NOT_TENSOR_FIRST = ('einsum',)


def missing(path):
    """The AttributeError for `path` (e.g. `'tf.compat'`), which torchk does not provide."""
    return AttributeError(
        '%s: torchk does not provide it. torchk.tf implements the part of TensorFlow that '
        'tf.keras 2 scripts use, on torch tensors; %s lists what it provides.'
        % (path, DOCUMENT))


def module_getattr(path):
    """A module-level `__getattr__` for the namespace `path` (`'tf.math'`)."""
    def __getattr__(name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise missing('%s.%s' % (path, name))
    return __getattr__


class Namespace(types.ModuleType):
    """A small namespace (`tf.config.experimental`) holding the given members.

    # Arguments
        path: its TF path, e.g. `'tf.config.experimental'`.
        members: a dict of its names.
    """

    def __init__(self, path, members):
        super().__init__(path, 'torchk: %s' % path)
        self._tf_path = path
        self.__dict__.update(members)

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise missing('%s.%s' % (self._tf_path, name))


def _tensor_argument(value, takes_list):
    if isinstance(value, torch.Tensor) or graph.is_symbol(value):
        return value
    if takes_list and isinstance(value, (list, tuple)):
        return [_tensor_argument(item, False) for item in value]
    return op_table._tensor(value)


def tf_op(key, path):
    """The public `tf.*` function of the table's op `key`, exported at `path`.

    It takes TF's arguments (and `name`, ignored), converts its first argument (arrays,
    lists, numbers) to a tensor, and computes torchk variables eagerly (`tensors.eager`).
    """
    function = op_table.OPS[key]
    parameters = list(inspect.signature(function).parameters)
    first = parameters[0] if parameters else None
    takes_list = key in _LIST_FIRST
    converts = key not in _NOT_TENSOR_FIRST

    def op(*args, name=None, **kwargs):
        args, kwargs = eager(args), eager(kwargs)
        if converts:
            if args:
                args = (_tensor_argument(args[0], takes_list),) + tuple(args[1:])
            elif first in kwargs:
                kwargs[first] = _tensor_argument(kwargs[first], takes_list)
        return function(*args, **kwargs)
    op.__name__ = op.__qualname__ = path.rsplit('.', 1)[-1]
    op.__doc__ = ('`tf.%s` on torch tensors (torchk.tf.op_table: %r).\n\nArguments as TF '
                  'names them: %s.' % (path, key, ', '.join(parameters) or 'none'))
    op.__signature__ = inspect.signature(function)
    return functools.update_wrapper(op, op, assigned=())


def ops_under(prefix):
    """`{name: function}` of the table's ops TF exports directly under `tf.<prefix>`
    (`prefix` `''` for `tf` itself), by their keys and `ALIASES`."""
    paths = {}
    for key in op_table.OPS:
        if key.startswith(('__operators__', 'compat.')):
            continue
        for path in (key,) + op_table.ALIASES.get(key, ()):
            paths.setdefault(path, key)
    found = {}
    for path, key in paths.items():
        namespace, _, name = path.rpartition('.')
        if namespace == prefix:
            found[name] = tf_op(key, path)
    return found


def provided(module=None, path='tf'):
    """`{tf_path: sorted names}` of `module` (default `torchk.tf`) and of the namespaces in
    it: a module's `__all__`, a `Namespace`'s members; a namespace is listed as `name.*`."""
    module = module if module is not None else sys.modules['torchk.tf']
    names = getattr(module, '__all__', None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith('_')]
    listing = {path: []}
    for name in sorted(names):
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            listing[path].append(name + '.*')
            listing.update(provided(value, '%s.%s' % (path, name)))
        else:
            listing[path].append(name)
    return listing
