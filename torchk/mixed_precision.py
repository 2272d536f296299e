"""Mixed precision for Keras 2.3.1 on torchk: tf.keras' policy API, loss scaling, and the one
list of what stays float32.

    from torchk import mixed_precision
    mixed_precision.set_global_policy('mixed_bfloat16')   # before building the model

A policy is not a second set of ops. Under `mixed_float16` or `mixed_bfloat16`, every Keras
layer created afterwards keeps float32 variables and computes in the low precision: its
`call` gets its floating inputs cast to the compute dtype, and reads its float32 variables as
casts to it (`graph.reading_variables_as`); the casts are recorded into the graph, so
`K.function` programs (fit, predict, evaluate, `to_torch`, export) compute in the low
precision and gradients arrive float32 at the variables. A layer given `dtype='float32'` (or
`dtype=Policy('float32')`) computes in float32, so tf.keras' float32 output layer
(`Activation('softmax', dtype='float32')`) works as written; layers created before the policy
was set keep their own. Networks (`Model`, `Sequential`) cast nothing: their layers do.

What stays float32 (as TF keeps it), in one place here:
- the layers of `FLOAT32_LAYERS` (layer and group normalization: their statistics; the
  recurrent layers, except an LSTM that torch's fused kernel runs natively in the compute
  dtype (`native_recurrence`); `Embedding`), and any layer they call: they compute in
  float32 and their outputs stay float32 (the next layer casts them; TF's normalization
  casts its outputs itself: the same casts, one layer earlier);
- the variables of `FLOAT32_VARIABLE_LAYERS` (batch normalization), read as they are by a
  layer computing in the compute dtype: torch's batch norm takes low-precision inputs with
  float32 statistics and parameters, computes the statistics in float32 and returns the
  input's dtype, as TF's fused batch norm does;
- losses: a loss gets `y_pred` (and a floating `y_true`) cast to float32 (softmax and
  log-softmax inside losses included); CTC computes in float32 (`ctc.py`);
- variables, so the optimizer updates float32 values; Keras metrics keep float32 state.

Under `mixed_float16`, `model.compile` wraps the optimizer in a `LossScaleOptimizer` (dynamic
loss scaling, as tf.keras does); bfloat16 has float32's range and needs none.

Unmodified scripts choose a policy with the environment variable `TORCHK_MIXED_PRECISION`
(e.g. `TORCHK_MIXED_PRECISION=mixed_bfloat16 python train.py`) or the keras.json key
`"torchk_mixed_precision": "mixed_bfloat16"`; the variable wins. `python -m torchk info`
shows the policy in effect. It helps where the hardware computes the low precision natively:
GPUs, and CPUs with AMX or AVX512-BF16 (oneDNN's bfloat16 kernels); elsewhere bfloat16 is
emulated, slowly, and a warning says so once, as it does for float16 on the CPU.

`LossScaleOptimizer` needs Keras (it is a `keras.optimizers.Optimizer`); it is defined on first
access, so the policy functions work without Keras.
"""
import functools
import importlib
import sys
import warnings

import torch

from . import config
from . import dtypes
from . import graph
from . import loss_scaling

# Policy name: (compute dtype, variable dtype).
_POLICIES = {
    'float32': ('float32', 'float32'),
    'mixed_float16': ('float16', 'float32'),
    'mixed_bfloat16': ('bfloat16', 'float32'),
}

# Layers that compute in float32 under a mixed policy (a subclass counts), with every layer
# they call; their outputs stay float32 (the next layer casts them, as any input):
# normalization, whose statistics and moving averages TF keeps float32; the recurrent layers,
# whose loops (`rnn_kernels`) gain nothing in half precision (`native_recurrence` names
# the exception: `torch.lstm` where the device has it in the compute dtype); and
# `Embedding`, a gather, whose rows cast by the next layer equal the rows of a cast table
# (casting the rows instead of the whole table is cheaper, and its gradient accumulates in
# float32).
FLOAT32_LAYERS = ('LayerNormalization', 'GroupNormalization', 'RNN', 'Embedding')

# Layers that compute in the compute dtype but read their variables as they are (float32):
# batch normalization, whose torch kernels take float16 and bfloat16 inputs with float32
# statistics and parameters, compute the batch statistics in float32 and return the input's
# dtype, as TF's fused batch norm does. Its moving statistics stay float32, and no casts
# surround it: under mixed_bfloat16 on a CPU with native bfloat16, MobileNetV2's training
# step casted float32 batch norms spent a sixth of its time in those casts.
FLOAT32_VARIABLE_LAYERS = ('BatchNormalization',)

# The attribute holding a layer's policy (None: the layer computes as Keras 2.3.1 does).
_POLICY_ATTRIBUTE = '_torchk_policy'


class Policy(object):
    """A dtype policy: the dtype a layer computes in and the dtype of its variables.

    # Arguments
        name: `'float32'`, `'mixed_float16'` or `'mixed_bfloat16'`.

    # Attributes
        name: the policy's name.
        compute_dtype: the dtype layers compute in (`'float16'`, `'bfloat16'`, `'float32'`).
        variable_dtype: the dtype of layers' variables (`'float32'`).

    # Raises
        ValueError: for any other name.
    """

    def __init__(self, name):
        if isinstance(name, Policy):
            name = name.name
        if name not in _POLICIES:
            raise ValueError('Unknown mixed precision policy %r; expected one of %s.'
                             % (name, ', '.join(repr(n) for n in _POLICIES)))
        self._name = name

    @property
    def name(self):
        return self._name

    @property
    def compute_dtype(self):
        return _POLICIES[self._name][0]

    @property
    def variable_dtype(self):
        return _POLICIES[self._name][1]

    @property
    def is_mixed(self):
        """True when layers compute in a lower precision than their variables."""
        return self.compute_dtype != self.variable_dtype

    def __eq__(self, other):
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return '<Policy "%s">' % self._name

    def get_config(self):
        return {'name': self._name}

    @classmethod
    def from_config(cls, config):
        return cls(config['name'])


_global_policy = None


def global_policy():
    """Returns the global `Policy`: the one last set, else the one `TORCHK_MIXED_PRECISION` or
    keras.json's `"torchk_mixed_precision"` names, else `Policy('float32')`.

    # Raises
        ValueError: if the environment variable or keras.json names an unknown policy.
    """
    global _global_policy
    if _global_policy is None:
        name, source = config.mixed_precision_setting()
        if name is None:
            _global_policy = Policy('float32')
        else:
            try:
                set_global_policy(name)
            except ValueError as e:
                raise ValueError('%s (from %s)' % (e, source)) from None
    return _global_policy


def set_global_policy(policy):
    """Sets the policy of the layers created from now on.

    # Arguments
        policy: a `Policy`, a policy name (`'float32'`, `'mixed_float16'`,
            `'mixed_bfloat16'`), or None for `'float32'`.

    # Raises
        ValueError: for an unknown policy name.
    """
    global _global_policy
    policy = Policy('float32' if policy is None else policy)
    _warn_if_slow(policy.compute_dtype)
    _global_policy = policy


_warned_slow = set()


def native_bfloat16():
    """True if the device computes bfloat16 convolutions and matmuls natively (a CUDA GPU
    with bfloat16 support, or a CPU with AVX512-BF16 or AMX for oneDNN)."""
    device = config.device()
    if device.type == 'cuda':
        return torch.cuda.is_bf16_supported()
    if device.type == 'cpu':
        return torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    return True


def _warn_if_slow(compute_dtype):
    """Warns once per dtype where the device computes it slower than float32: bfloat16
    without native kernels, float16 on the CPU (torch's CPU float16 convolution backward is
    a reference loop: the scoreboard's cnn step measured 150x float32's)."""
    if compute_dtype in _warned_slow:
        return
    device = config.device().type
    if compute_dtype == 'bfloat16' and not native_bfloat16():
        reason = ('this %s has no native bfloat16 kernels (no AVX512-BF16 or AMX), so '
                  'bfloat16 is emulated' % device)
    elif compute_dtype == 'float16' and device == 'cpu':
        reason = 'float16 training on the CPU runs reference kernels (use mixed_bfloat16)'
    else:
        return
    _warned_slow.add(compute_dtype)
    warnings.warn('mixed_%s: %s, slower than float32.' % (compute_dtype, reason),
                  RuntimeWarning, stacklevel=3)


def _policy_from_dtype_argument(dtype):
    """The policy a layer's `dtype` argument names: a `Policy`, a policy name, tf.keras'
    serialized policy (`{'class_name': 'Policy', 'config': {'name': ...}}`); None for any
    other dtype (the layer computes in it, as Keras 2.3.1 does)."""
    if isinstance(dtype, Policy):
        return dtype
    if isinstance(dtype, dict) and dtype.get('class_name') == 'Policy':
        return Policy(dtype['config']['name'])
    if isinstance(dtype, str) and dtype in _POLICIES:
        return Policy(dtype)
    return None


def layer_policy(layer):
    """The `Policy` a Keras layer computes in, or None (it computes as Keras 2.3.1 does)."""
    return getattr(layer, _POLICY_ATTRIBUTE, None)


def computes_in_float32(layer, compute_dtype):
    """True if `layer` is in `FLOAT32_LAYERS` (a Keras or torchk class of that name, or a
    subclass of one), unless it is a recurrent layer that torch's fused LSTM kernel runs
    natively in `compute_dtype` (`native_recurrence`)."""
    if not _is_one_of(layer, FLOAT32_LAYERS):
        return False
    return not (_is_one_of(layer, ('RNN',)) and native_recurrence(layer, compute_dtype))


def _is_one_of(layer, class_names):
    """True if `layer`'s class or a base class of it has one of `class_names`."""
    return any(cls.__name__ in class_names for cls in type(layer).__mro__)


def native_recurrence(layer, compute_dtype):
    """True if the recurrent `layer` runs `torch.lstm` (`rnn.runs_torch_lstm`) and the device
    has that kernel in `compute_dtype`: cuDNN's float16 and bfloat16 on a GPU, oneDNN's bfloat16
    on a CPU with AVX512-BF16 or AMX. Measured on such a CPU (the scoreboard's lstm step:
    Embedding-LSTM(64)-Dense), oneDNN's bfloat16 `torch.lstm` step took 11 ms where float32's
    took 15 ms; the other recurrences (`rnn_kernels`) gain nothing in half precision there."""
    from . import rnn
    device = config.device().type
    if compute_dtype == 'bfloat16':
        native = native_bfloat16()
    else:
        native = compute_dtype == 'float16' and device == 'cuda'
    return native and rnn.runs_torch_lstm(layer)


def cast_floats(structure, dtype):
    """`structure` (a tensor or nested lists, tuples, namedtuples and dicts) with its floating
    tensors of another dtype cast to `dtype` (a dtype name); variables, integer tensors and
    other values as they are."""
    from . import math_ops
    target = dtypes.to_torch(dtype)

    def cast(value):
        if isinstance(value, graph.KerasTensor):
            current = value._torch_dtype
        elif isinstance(value, torch.Tensor) and not graph.is_symbol(value):
            current = value.dtype
        else:
            return value
        if current.is_floating_point and current != target:
            return math_ops.cast(value, target)
        return value
    if isinstance(structure, dict):
        items = {k: cast_floats(v, dtype) for k, v in structure.items()}
        if all(items[k] is v for k, v in structure.items()):
            return structure
        return type(structure)(items)
    if isinstance(structure, (list, tuple)):
        items = [cast_floats(v, dtype) for v in structure]
        if all(a is b for a, b in zip(items, structure)):
            return structure
        return type(structure)(*items) if hasattr(structure, '_fields') else type(structure)(items)
    return cast(structure)


# The layers whose `call` runs now, innermost last, with whether they compute in float32
# because of `FLOAT32_LAYERS`.
_calls = []


def in_policy(call):
    """Override of `Layer.call` and of the `call` of each subclass: `call` (a Keras layer's)
    run in the layer's policy: floating inputs cast to the compute dtype (float32 for
    `FLOAT32_LAYERS`), float32 variables read in it."""
    @functools.wraps(call)
    def call_in_policy(self, inputs, *args, **kwargs):
        policy = layer_policy(self)
        if policy is None or (_calls and _calls[-1][0] is self):
            return call(self, inputs, *args, **kwargs)
        float32 = (bool(_calls) and _calls[-1][1]) or computes_in_float32(
            self, policy.compute_dtype)
        compute = 'float32' if float32 else policy.compute_dtype
        cast = cast_floats(inputs, compute)
        variables = 'float32' if _is_one_of(self, FLOAT32_VARIABLE_LAYERS) else compute
        _calls.append((self, float32))
        try:
            with graph.reading_variables_as(dtypes.to_torch(variables)):
                outputs = call(self, cast, *args, **kwargs)
        finally:
            _calls.pop()
        if cast is not inputs:
            _rekey_conditional_updates(self, cast, inputs)
        return outputs
    return call_in_policy


def _rekey_conditional_updates(layer, cast, inputs):
    """Files the updates and losses that `layer.call` conditioned on its `cast` inputs
    (`add_update(updates, inputs)`, as BatchNormalization's moving averages) under the
    inputs it was given, which is what Keras' `get_updates_for` looks them up by."""
    uid = sys.modules['keras.engine.base_layer'].object_list_uid
    old, new = uid(cast), uid(inputs)
    for attribute in ('_per_input_updates', '_per_input_losses'):
        table = getattr(layer, attribute, None)
        if table and old in table:
            table.setdefault(new, []).extend(table.pop(old))


def layer_init_with_policy(keras_init):
    """Override of `Layer.__init__`: a policy given as `dtype` becomes the layer's policy (its
    variables take the policy's variable dtype); no `dtype` takes the global policy when it
    is mixed."""
    @functools.wraps(keras_init)
    def __init__(self, *args, **kwargs):
        policy = _policy_from_dtype_argument(kwargs.get('dtype'))
        if policy is not None:
            kwargs['dtype'] = policy.variable_dtype
        elif kwargs.get('dtype') is None and kwargs.get('input_dtype') is None:
            current = global_policy()
            policy = current if current.is_mixed else None
        keras_init(self, *args, **kwargs)
        object.__setattr__(self, _POLICY_ATTRIBUTE, policy)
    return __init__


def layer_config_with_policy(keras_get_config):
    """Override of `Layer.get_config`: a mixed layer saves its policy's name as its `dtype`
    (`Layer.__init__` takes it back; tf.keras' serialized `Policy` is read too)."""
    @functools.wraps(keras_get_config)
    def get_config(self):
        configuration = keras_get_config(self)
        policy = layer_policy(self)
        if policy is not None and policy.is_mixed and 'dtype' in configuration:
            configuration['dtype'] = policy.name
        return configuration
    return get_config


def loss_in_float32(keras_loss_call):
    """Override of `keras.losses.Loss.__call__`: with floatx float32, float16 and bfloat16 `y_true`
    and `y_pred` (a mixed model's) are cast to float32 first. A float16 floatx model computes
    its loss as Keras 2.3.1 does."""
    @functools.wraps(keras_loss_call)
    def __call__(self, y_true, y_pred, sample_weight=None):
        if config.floatx() == 'float32':
            y_true, y_pred = _low_to_float32(y_true), _low_to_float32(y_pred)
        return keras_loss_call(self, y_true, y_pred, sample_weight)
    return __call__


def objective_in_float32(weighted_masked_objective):
    """Override of Keras 2.2's `weighted_masked_objective(fn)`: `fn` gets float32 `y_true`
    and `y_pred` as `loss_in_float32` gives them."""
    @functools.wraps(weighted_masked_objective)
    def wrap(fn):
        if fn is None:  # an output without a loss (a model whose loss is all add_loss)
            return weighted_masked_objective(fn)

        @functools.wraps(fn)
        def in_float32(y_true, y_pred):
            if config.floatx() == 'float32':
                y_true, y_pred = _low_to_float32(y_true), _low_to_float32(y_pred)
            return fn(y_true, y_pred)
        return weighted_masked_objective(in_float32)
    return wrap


def _low_to_float32(value):
    dtype = (value._torch_dtype if isinstance(value, graph.KerasTensor)
             else value.dtype if isinstance(value, torch.Tensor) else None)
    if dtype in dtypes.HALF_PRECISION:
        return cast_floats(value, 'float32')
    return value


def compile_with_loss_scaling(keras_compile):
    """Override of `Model.compile`: under `mixed_float16` the optimizer is wrapped in a
    `LossScaleOptimizer` (unless it is one)."""
    @functools.wraps(keras_compile)
    def compile(self, optimizer, *args, **kwargs):
        if global_policy().name == 'mixed_float16':
            from keras import optimizers
            optimizer = optimizers.get(optimizer)
            loss_scale_optimizer = _loss_scale_optimizer_class()
            if not isinstance(optimizer, loss_scale_optimizer):
                optimizer = loss_scale_optimizer(optimizer)
        return keras_compile(self, optimizer, *args, **kwargs)
    return compile


def register_loss_scale_optimizer(generic_utils):
    """Makes `LossScaleOptimizer` a custom object of Keras (`keras.utils.generic_utils`), so
    that `load_model` knows it."""
    generic_utils.get_custom_objects()['LossScaleOptimizer'] = _loss_scale_optimizer_class()


def __getattr__(name):
    if name == 'LossScaleOptimizer':
        return _loss_scale_optimizer_class()
    raise AttributeError('module %r has no attribute %r' % (__name__, name))


_LOSS_SCALE_OPTIMIZER = None


def _loss_scale_optimizer_class():
    global _LOSS_SCALE_OPTIMIZER
    if _LOSS_SCALE_OPTIMIZER is None:
        _LOSS_SCALE_OPTIMIZER = _define_loss_scale_optimizer(
            importlib.import_module('keras.optimizers'), importlib.import_module('keras.backend'))
        globals()['LossScaleOptimizer'] = _LOSS_SCALE_OPTIMIZER
    return _LOSS_SCALE_OPTIMIZER


def _define_loss_scale_optimizer(optimizers, K):
    """Defines `LossScaleOptimizer` on Keras' `Optimizer` (`optimizers`: `keras.optimizers`,
    `K`: `keras.backend`)."""

    class LossScaleOptimizer(optimizers.Optimizer):
        """An optimizer that scales the loss, as tf.keras' `LossScaleOptimizer` does.

        The loss is multiplied by `loss_scale` before the gradients are computed, and the
        gradients divided by it, so that small float16 gradients do not flush to zero. With
        `dynamic=True`, a step whose gradients hold an inf or a NaN changes nothing but the
        scale, which halves (never below 1); after `dynamic_growth_steps` finite steps in a row
        the scale doubles. The check and the skip are graph ops (`K.switch`), so they run inside
        the compiled training function. The scale and the count of finite steps are optimizer
        weights: they save and load with the model.

        # Arguments
            inner_optimizer: the Keras optimizer (or its name) that updates the variables.
            dynamic: True for dynamic loss scaling, False for a fixed `initial_scale`.
            initial_scale: the first loss scale (2**15).
            dynamic_growth_steps: the finite steps after which the scale doubles (2000).

        # Attributes
            inner_optimizer, dynamic, initial_scale, dynamic_growth_steps: the arguments.
            loss_scale: the current scale, a float32 variable (`K.get_value` reads it).
            dynamic_counter: the finite steps since the scale last changed, an int64 variable.

        # Raises
            ValueError: for a scale below 1, growth steps below 1, or an inner optimizer that
                is itself a `LossScaleOptimizer`.
        """

        def __init__(self, inner_optimizer, dynamic=True, initial_scale=2 ** 15,
                     dynamic_growth_steps=2000):
            inner = optimizers.get(inner_optimizer)
            if isinstance(inner, LossScaleOptimizer):
                raise ValueError('LossScaleOptimizer cannot wrap another LossScaleOptimizer.')
            if not initial_scale >= 1:
                raise ValueError('initial_scale must be at least 1, got %r.' % (initial_scale,))
            if int(dynamic_growth_steps) < 1:
                raise ValueError('dynamic_growth_steps must be at least 1, got %r.'
                                 % (dynamic_growth_steps,))
            self.inner_optimizer = inner
            self.dynamic = bool(dynamic)
            self.initial_scale = float(initial_scale)
            self.dynamic_growth_steps = int(dynamic_growth_steps)
            self.updates = []
            with K.name_scope(self.__class__.__name__):
                self.loss_scale = K.variable(self.initial_scale, dtype='float32',
                                             name='loss_scale')
                self.dynamic_counter = K.variable(0, dtype='int64', name='dynamic_counter')

        @property
        def weights(self):
            """The inner optimizer's weights, then the loss scale and the counter."""
            return list(self.inner_optimizer.weights) + [self.loss_scale,
                                                         self.dynamic_counter]

        def __getattr__(self, name):
            # The inner optimizer's hyperparameters (`lr`, `iterations`, ...), as tf.keras
            # delegates them; only reached for names this object lacks.
            if name == 'inner_optimizer':
                raise AttributeError(name)
            return getattr(self.inner_optimizer, name)

        def get_gradients(self, loss, params):
            """The gradients of `loss` for `params`, computed from the scaled loss and
            unscaled, then clipped as the inner optimizer's `clipnorm`/`clipvalue` ask.
            Wrap a `torchk.distributed.DistributedOptimizer` in this (as `compile` does under
            `mixed_float16`), not the other way round."""
            return self._unscaled_gradients(loss, params)[1]

        def _unscaled_gradients(self, loss, params):
            """`(overflow, gradients)`: the unscaled, clipped gradients and the device flag
            of a non-finite one (`loss_scaling.unscale_gradients`)."""
            inner = self.inner_optimizer
            if type(inner).get_gradients is not optimizers.Optimizer.get_gradients:
                # An optimizer with gradients of its own (torchk.distributed's averages them
                # over processes) computes them from the scaled loss; its clipping, if any,
                # then sees scaled gradients.
                scaled = type(inner).get_gradients(inner, loss * self.loss_scale, params)
                overflow, *grads = loss_scaling.unscale_gradients(self.loss_scale, scaled)
                return overflow, grads
            scaled = K.gradients(loss * self.loss_scale, params)
            if any(g is None for g in scaled):
                raise ValueError('An operation has `None` for gradient: the loss does not '
                                 'depend on every trainable weight differentiably.')
            overflow, *grads = loss_scaling.unscale_gradients(self.loss_scale, scaled)
            if getattr(inner, 'clipnorm', 0) > 0:
                norm = K.sqrt(sum([K.sum(K.square(g)) for g in grads]))
                grads = [optimizers.clip_norm(g, inner.clipnorm, norm) for g in grads]
            if getattr(inner, 'clipvalue', 0) > 0:
                grads = [K.clip(g, -inner.clipvalue, inner.clipvalue) for g in grads]
            return overflow, grads

        def get_updates(self, loss, params):
            """The inner optimizer's updates from the unscaled gradients; with `dynamic`,
            each applied only if every gradient is finite (the check stays on the device),
            and the loss scale's updates."""
            overflow, grads = self._unscaled_gradients(loss, params)
            inner = self.inner_optimizer
            inner.get_gradients = lambda loss, params: grads
            try:
                updates = inner.get_updates(loss=loss, params=params)
            finally:
                del inner.get_gradients
            if not self.dynamic:
                self.updates = list(updates)
                return self.updates
            skipping = []
            for update in updates:
                if not (isinstance(update, tuple) and len(update) == 2):
                    raise TypeError('LossScaleOptimizer: the inner optimizer %s made an update '
                                    'that is not a (variable, new value) pair: %r.'
                                    % (type(inner).__name__, update))
                variable, value = update
                skipping.append((variable, loss_scaling.unless_overflow(overflow, value,
                                                                        variable)))
            scale, count = loss_scaling.next_loss_scale(overflow, self.loss_scale,
                                                        self.dynamic_counter,
                                                        self.dynamic_growth_steps)
            self.updates = skipping + [K.update(self.loss_scale, scale),
                                       K.update(self.dynamic_counter, count)]
            return self.updates

        def get_config(self):
            return {'inner_optimizer': optimizers.serialize(self.inner_optimizer),
                    'dynamic': self.dynamic, 'initial_scale': self.initial_scale,
                    'dynamic_growth_steps': self.dynamic_growth_steps}

        @classmethod
        def from_config(cls, config, custom_objects=None):
            config = dict(config)
            inner = optimizers.deserialize(config.pop('inner_optimizer'),
                                           custom_objects=custom_objects)
            return cls(inner, **config)

    LossScaleOptimizer.__module__ = __name__
    return LossScaleOptimizer
