"""Objects built and trained the same way with TensorFlow and with torchk (`tf` is either
module), for the fixtures of tests/fixtures/make_tf_core_api.py and the tests that read them
(tests/tf/test_module.py, test_checkpoint.py, test_saved_model.py)."""
import numpy as np

X = np.random.RandomState(1).uniform(-1, 1, (6, 4)).astype('float32')
Y = np.random.RandomState(2).uniform(-1, 1, (6, 2)).astype('float32')


def set_values(variables, seed):
    """Gives each (float32) variable of `variables` values of a seeded uniform draw."""
    rng = np.random.RandomState(seed)
    for variable in variables:
        variable.assign(rng.uniform(-1, 1, tuple(variable.shape)).astype('float32'))


def module_tree(tf):
    """A `tf.Module` of modules, variables, a Keras layer, lists, dicts and a tuple; its
    `Dense.__call__` makes a variable in its name scope on the first call."""

    class Dense(tf.Module):
        def __init__(self, in_features, out_features, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(tf.ones([in_features, out_features]), name='w')
            self.b = tf.Variable(tf.zeros([out_features]), trainable=False, name='b')

        @tf.Module.with_name_scope
        def __call__(self, x):
            if not hasattr(self, 'scale'):
                self.scale = tf.Variable(2., name='scale')
            return tf.matmul(x, self.w) * self.scale + self.b

    class Tree(tf.Module):
        def __init__(self):
            super().__init__(name='tree')
            with self.name_scope:
                self.first = Dense(2, 3, name='first')
            self.blocks = [Dense(3, 3, name='block_a'),
                           {'z': Dense(3, 1, name='block_z'), 'y': tf.Variable(1., name='y')}]
            self.pair = (tf.Variable([1., 2.], name='pair'), self.first)
            self.keras_layer = tf.keras.layers.Dense(2, name='keras_dense',
                                                     kernel_initializer='ones')
            self.keras_layer.build((None, 3))

        def __call__(self, x):
            x = self.first(x)
            x = self.blocks[0](x)
            return self.blocks[1]['z'](x) + self.keras_layer(x)
    return Tree()


def module_structure(tf, tree):
    """What a `module_tree` shows of itself, in TF's terms (names without `:0`)."""
    def names(values):
        return [v.name.split(':')[0] for v in values]
    return {
        'name_scope': tree.name_scope.name,
        'first_scope': tree.first.name_scope.name,
        'variables': names(tree.variables),
        'trainable': names(tree.trainable_variables),
        'non_trainable': names(tree.non_trainable_variables),
        'submodules': [m.name for m in tree.submodules],
        'paths': ['/'.join(str(p) for p in path)
                  for path, _ in tree._flatten(predicate=lambda v: hasattr(v, 'assign'),
                                               with_path=True)],
        'non_recursive': [m.name for m in tree._flatten(
            recursive=False, predicate=lambda m: isinstance(m, type(tree.first)))],
        'keras_layer_is_module': isinstance(tree.keras_layer, tf.Module),
    }


def subclassed_net(tf):
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.l1 = tf.keras.layers.Dense(5, activation='relu')
            self.l2 = tf.keras.layers.Dense(2)

        def call(self, x):
            return self.l2(self.l1(x))
    return Net()


def stats_module(tf):
    class Stats(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable([0.5, 1.5], name='v')
            self.items = [tf.Variable(3.), {'count': tf.Variable(7, dtype=tf.int64)}]
    return Stats()


def checkpoint_objects(tf):
    """The keyword arguments of the `tf.train.Checkpoint` of the fixtures: a step counter,
    an Adam optimizer, a subclassed model (built, its weights seeded) and a module."""
    net = subclassed_net(tf)
    net(tf.constant(X))
    set_values(net.trainable_variables, 3)
    return {'step': tf.Variable(1, dtype=tf.int64), 'optimizer': tf.keras.optimizers.Adam(0.05),
            'net': net, 'stats': stats_module(tf)}


def train_step(tf, objects):
    """One step of a `GradientTape` loop on (X, Y)."""
    net, optimizer = objects['net'], objects['optimizer']
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(net(tf.constant(X)) - tf.constant(Y)))
    gradients = tape.gradient(loss, net.trainable_variables)
    optimizer.apply_gradients(zip(gradients, net.trainable_variables))
    objects['step'].assign_add(1)
    objects['stats'].v.assign_add([1., -1.])


def keras_models(tf):
    """{name: function of `tf` making a compiled model} of the TF-format weights fixtures."""
    layers = tf.keras.layers

    def sequential():
        model = tf.keras.Sequential([layers.Dense(5, activation='relu', input_shape=(4,)),
                                     layers.BatchNormalization(), layers.Activation('tanh'),
                                     layers.Dense(2)])
        model.compile(tf.keras.optimizers.Adam(0.05), 'mse')
        return model

    def functional():
        inputs = tf.keras.Input((4,))
        hidden = layers.Dense(5, activation='tanh')(inputs)
        outputs = layers.Dense(2)(layers.Concatenate()([hidden, inputs]))
        model = tf.keras.Model(inputs, outputs)
        model.compile(tf.keras.optimizers.RMSprop(0.01, momentum=0.5), 'mse')
        return model

    def subclassed():
        model = subclassed_net(tf)
        model.compile(tf.keras.optimizers.SGD(0.1, momentum=0.9), 'mse')
        return model

    def legacy_optimizer():
        model = functional()
        model.compile(tf.keras.optimizers.legacy.SGD(0.1, momentum=0.9), 'mse')
        return model
    return {'sequential': sequential, 'functional': functional, 'subclassed': subclassed,
            'legacy_optimizer': legacy_optimizer}


def trained_keras_model(tf, name):
    """A model of `keras_models`, its weights seeded, after one `train_on_batch`."""
    model = keras_models(tf)[name]()
    model(tf.constant(X))
    set_values(model.trainable_variables, 4)
    model.train_on_batch(X, Y)
    return model
