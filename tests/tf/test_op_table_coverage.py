"""Every name torchk.tf provides is an op of the one op table (so a functional model that
records it loads as a saved op layer) or is listed in `op_table.NOT_RECORDABLE` with why."""
import pytest

import keras

from torchk.layers import TFOpLambda
from torchk import op_table
from torchk.tf import namespaces


def _table_paths():
    paths = set()
    for key in op_table.OPS:
        paths.add(key)
        paths.update(op_table.ALIASES.get(key, ()))
    return paths


def _provided_names():
    """`(path, namespace)` of every name torchk.tf provides, without the `tf.` prefix."""
    found = []
    for namespace, names in namespaces.provided().items():
        prefix = namespace[len('tf.'):] + '.' if namespace != 'tf' else ''
        found += [(prefix + name, namespace[len('tf.'):]) for name in names
                  if not name.endswith('.*')]
    return found


@pytest.mark.parametrize('path, namespace', _provided_names())
def test_each_name_is_an_op_or_listed_with_why(path, namespace):
    in_table = path in _table_paths()
    parts = namespace.split('.') if namespace else []
    enclosing = ['.'.join(parts[:i]) + '.*' for i in range(1, len(parts) + 1)]
    listed = path in op_table.NOT_RECORDABLE or any(
        name in op_table.NOT_RECORDABLE for name in enclosing)
    assert in_table != listed, (
        'tf.%s: %s' % (path, 'both an op of the table and listed as not recordable'
                       if in_table else 'neither an op of the table nor listed in '
                       'op_table.NOT_RECORDABLE'))


def test_the_not_recordable_list_names_only_provided_names():
    provided = {path for path, _ in _provided_names()}
    namespaces_provided = {n[len('tf.'):] + '.*' for n in namespaces.provided()}
    for path, reason in op_table.NOT_RECORDABLE.items():
        assert path in provided or path in namespaces_provided, path
        assert len(reason) > 20


@pytest.mark.parametrize('key', sorted(op_table.OPS))
def test_each_op_is_a_loadable_op_layer(key):
    layer = TFOpLambda.from_config({'name': 'op', 'function': key, 'trainable': True,
                                    'dtype': 'float32'})
    assert layer.function == key
    assert keras.layers.deserialize({'class_name': 'TFOpLambda',
                                     'config': layer.get_config()}).function == key
