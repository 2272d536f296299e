"""`tf.Module` as TF 2.15 defines it, against TF's answers for the same module
(tests/fixtures/tf_core/module.json, made by tests/fixtures/make_tf_core_api.py from
tests/core_api_cases.py): variables, trainable or not, submodules and `_flatten` in TF's
order, name scopes, `with_name_scope`, and Keras layers as modules."""
import json
import os
import re

import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf
from core_api_cases import X, module_structure, module_tree

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       'fixtures', 'tf_core', 'module.json')


def _without_unique_suffixes(structure):
    """Variable names without the `_<n>` torchk adds to a name already taken (TF's eager
    variables share names)."""
    def plain(name):
        return '/'.join(re.sub(r'_\d+$', '', part) for part in name.split('/'))
    return {key: ([plain(v) for v in value] if key in ('variables', 'trainable',
                                                        'non_trainable') else value)
            for key, value in structure.items()}


@pytest.fixture(scope='module')
def expected():
    with open(FIXTURE) as f:
        return json.load(f)


def test_module_tree_shows_what_tf_shows(expected):
    tree = module_tree(tf)
    assert _without_unique_suffixes(module_structure(tf, tree)) == expected['before']
    output = tree(tf.constant(X[:, :2]))
    assert _without_unique_suffixes(module_structure(tf, tree)) == expected['after']
    np.testing.assert_allclose(output.numpy(), expected['output'], rtol=1e-6)


def test_lists_and_dicts_are_wrapped_and_keep_their_contents():
    tree = module_tree(tf)
    assert repr(tree.blocks).startswith('ListWrapper([')
    assert isinstance(tree.blocks, list) and isinstance(tree.blocks[1], dict)
    tree.blocks.append(tf.Variable(5.))
    assert tree.variables[-1] is tree.blocks[-1] or tree.blocks[-1] in tree.variables


def test_name_scope_names_variables_made_inside():
    class Scoped(tf.Module):
        @tf.Module.with_name_scope
        def make(self):
            return tf.Variable(1., name='inner')
    module = Scoped(name='outer_module')
    with tf.name_scope('enclosing') as scope:
        assert scope == 'enclosing/'
        assert module.make().name.startswith('outer_module/inner')
        assert tf.Variable(1., name='v').name.startswith('enclosing/v')
    assert module.name_scope.name == 'outer_module/'


def test_keras_layers_are_modules():
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = keras.layers.Dense(2)
            self.extra = [keras.layers.Dense(3)]

        def call(self, x):
            return self.extra[0](self.inner(x))

    block = Block()
    block(tf.constant(X))
    assert isinstance(block, tf.Module) and issubclass(keras.layers.Dense, tf.Module)
    assert not isinstance(object(), tf.Module)
    assert block.submodules == (block.inner, block.extra[0])
    assert [id(v) for v in block.variables] == [id(v) for v in block.weights]
    assert block.name_scope.name == block.name + '/'


@pytest.mark.parametrize('name', ['2x', '-a', 'a b'])
def test_invalid_module_names_are_refused(name):
    with pytest.raises(ValueError, match='is not valid'):
        tf.Module(name=name)
