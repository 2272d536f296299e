"""Inference folding: a pass that merges the layers after a convolution into the convolution,
for programs that compute no gradients (predict, evaluate).

A Keras `Conv2D`/`DepthwiseConv2D` (bias or not) followed by `BatchNormalization` and a ReLU
or ReLU6 records a convolution, `batch_normalization` over the moving statistics (once the
learning phase is resolved: `phase.py`) and `relu`: three or more passes over the
activations. In a program that does not train, this pass rewrites them into one node:
- a `batch_normalization` whose input is a convolution read by nothing else, over 1D
  variables laid along the convolution's channels, is folded into the convolution: with
  `scale = gamma / sqrt(var + epsilon)`, the kernel's output channels are multiplied by
  `scale` and the bias becomes `(bias - mean) * scale + beta`. The folded kernel and bias
  are computed once and again whenever one of the variables changes (their version
  counters: every in-place write, `K.set_value`, `set_weights`, a training step);
- a `relu` (no `alpha` or `threshold`; with or without `max_value`) of such a convolution is
  applied by the convolution: on the CPU by oneDNN as a post-op (`_convolution_pointwise`),
  one pass over the output instead of two or three.
Under a mixed precision policy the convolution computes in float16 or bfloat16 from its
variables read as casts, and the normalization in float32 between two casts of the
activations: `cast(batch_normalization(cast(conv(x, cast(kernel)), float32)), low)`. The
pass folds that whole chain too: the folded kernel and bias are computed in float32 from the
variables and cast once to the convolution's dtype, and the result stays in that dtype when
its only reader was the cast back (otherwise it is cast to float32, as the normalization's
result was). On a CPU with native bfloat16 the folded convolution runs oneDNN's bfloat16
kernel with the activation as a post-op.
Values agree with the unfused program to float32 rounding (the normalization is applied to
the weights instead of the activations); under a mixed policy, to the rounding of the
compute dtype, which the folded kernel gets once where the unfused program rounded the
kernel and the convolution's result. Programs that compute gradients are never
rewritten: the gradients of the kernel, the bias and the batch-norm parameters need the
separate ops.

`TORCHK_FOLD=0` (or `set_enabled(False)`) turns the pass off for programs built afterwards.
"""

import torch

from .. import config
from .. import dtypes
from .. import graph
from .. import math_ops
from .. import nn_ops
from .. import program
from ..conv_ops import bias as conv_bias
from ..variables import Variable

_BATCH_NORMALIZATION = nn_ops.batch_normalization.__wrapped__
_RELU = nn_ops.relu.__wrapped__
_CAST = math_ops.cast.__wrapped__
_switch = config.PassSwitch('TORCHK_FOLD')
enabled = _switch.enabled
set_enabled = _switch.set_enabled


def fold(targets, fed=()):
    """Returns `targets` computed with batch normalizations and ReLUs merged into the
    convolutions before them (see the module doc); unchanged when the pass is off or the
    program computes gradients.

    # Arguments
        targets: symbols (or constants) a program computes: outputs, update values.
        fed: symbols fed by each call: they and their ancestors are kept as they are.

    # Returns
        A list like `targets`.
    """
    if not enabled():
        return list(targets)
    symbols = [t for t in targets if graph.is_symbol(t)]
    nodes, _ = program.ancestors(symbols, stop={id(s) for s in fed})
    if any(node.kind == program.GRADIENTS for node in nodes):
        return list(targets)
    readers = {}
    for item in [i for node in nodes for i in node.inputs] + symbols:
        node = getattr(item, 'node', None)
        if isinstance(item, graph.KerasTensor) and node is not None:
            readers[id(node)] = readers.get(id(node), 0) + 1
    casts = {}
    for node in nodes:
        if node.fn is _CAST:
            source = node.bound_arguments()['x']
            if isinstance(source, graph.KerasTensor) and source.node is not None:
                key = (id(source.node), _torch_dtype_of(node.bound_arguments()['dtype']))
                casts[key] = casts.get(key, 0) + 1
    rewrite = program.Rewrite(fed)
    fused, made = {}, {}
    for node in nodes:
        merged = _merge(node, readers, casts, fused)
        if merged is None:
            rewrite.copy(node)
            continue
        fused[id(node)] = merged
        if id(merged) not in made:
            args = tuple(rewrite.symbol(item) for item in (merged.x,) + merged.parameters)
            made[id(merged)] = graph.Node(merged, args, {}, graph._symbols_in(args))
        rewrite.replace_node(node, made[id(merged)])
    return rewrite.targets(targets)


def _merge(node, readers, casts, fused):
    """The `FusedConvolution` that computes `node` with the convolution before it, or None.

    `readers`: how many inputs of the program's nodes (and targets) each node's result is,
    by node id; `casts`: how many of them are casts to a dtype, by (node id, dtype); `fused`:
    the merges made so far, by the id of the node they replace."""
    if node.fn is _BATCH_NORMALIZATION:
        source = _only_reader_of(node, readers)
        output_dtype = None
        if source is not None and source.node.fn is _CAST:
            # a mixed-precision convolution's result, normalized in float32
            output_dtype = source._torch_dtype
            source = _only_reader_of(source.node, readers)
            if output_dtype != torch.float32 or source is None:
                return None
        if source is None or id(source.node) in fused:
            return None
        parts = conv_bias.convolution_parts(source.node)
        if parts is None:
            return None
        return _with_batch_normalization(node, source, parts, output_dtype)
    if node.fn is _CAST:
        # a folded result cast to float32, cast back to the dtype it was computed in by each
        # of its readers (a residual block's output: the next block and the sum)
        source = node.bound_arguments()['x']
        before = fused.get(id(getattr(source, 'node', None)))
        if before is None or before.output_dtype is None or source.path != ():
            return None
        dtype = before.x._torch_dtype
        if (_torch_dtype_of(node.bound_arguments()['dtype']) != dtype or
                casts.get((id(source.node), dtype)) != readers.get(id(source.node))):
            return None
        return before.in_compute_dtype(shared=readers[id(source.node)] > 1)
    if node.fn is _RELU:
        activation = _activation(node)
        source = _only_reader_of(node, readers)
        if activation is None or source is None:
            return None
        if id(source.node) in fused:
            before = fused[id(source.node)]
            if before.activation or before.shared:
                return None
            return before.with_activation(activation)
        parts = conv_bias.convolution_parts(source.node)
        if parts is None:
            return None
        conv, x, kernel, bias, options = parts
        return FusedConvolution(conv, x, options, _variable_read(kernel), _variable_read(bias),
                                activation=activation)
    return None


def _torch_dtype_of(dtype):
    try:
        return dtypes.to_torch(dtype)
    except (TypeError, ValueError):
        return None


def _variable_read(value):
    """The variable that `value` reads in a lower precision (a mixed layer's variable read
    as a cast, `graph.read_variable`), else `value`."""
    node = getattr(value, 'node', None)
    if isinstance(value, graph.KerasTensor) and node is not None and node.fn is graph._read_as:
        return node.args[0]
    return value


def _only_reader_of(node, readers):
    """The symbol passed as `x` to `node` when `node` alone reads its node's result."""
    source = node.bound_arguments()['x']
    if (not isinstance(source, graph.KerasTensor) or source.node is None or source.path != ()
            or readers.get(id(source.node)) != 1):
        return None
    return source


def _is_parameter(value):
    return isinstance(value, Variable) and value.dtype.is_floating_point


def _activation(node):
    """`relu`'s arguments as a convolution activation, or None when it is not a plain or
    capped ReLU (`alpha` and `threshold` 0)."""
    arguments = node.bound_arguments()
    alpha, max_value, threshold = (arguments[k] for k in ('alpha', 'max_value', 'threshold'))
    if any(type(v) not in (int, float) for v in (alpha, threshold)) or alpha or threshold:
        return None
    if max_value is None:
        return 'relu', ()
    if type(max_value) not in (int, float) or not max_value > 0:
        return None
    return 'hardtanh', (0., float(max_value))


def _with_batch_normalization(node, source, parts, output_dtype):
    """The folded form of `batch_normalization(conv(...))` (with the convolution's result
    cast to `output_dtype` first, when given), or None when the statistics and parameters
    are not 1D variables along the convolution's channels."""
    conv, x, kernel, bias, options = parts
    kernel, bias = _variable_read(kernel), _variable_read(bias)
    arguments = node.bound_arguments()
    shape = source._static_shape
    if shape is None or not isinstance(arguments['axis'], int) \
            or type(arguments['epsilon']) not in (int, float):
        return None
    channel_axis = 1 if options['data_format'] == 'channels_first' else len(shape) - 1
    if arguments['axis'] % len(shape) != channel_axis or shape[channel_axis] is None:
        return None
    statistics = [arguments[k] for k in ('mean', 'var', 'beta', 'gamma')]
    weights = [kernel, bias] + statistics
    if any(w is not None and not (_is_parameter(w) and w.dtype == kernel.dtype)
           for w in weights) or statistics[0] is None or statistics[1] is None:
        return None
    if any(w is not None and tuple(w.shape) != (shape[channel_axis],)
           for w in [bias] + statistics):
        return None
    return FusedConvolution(conv, x, options, kernel, bias, statistics,
                            float(arguments['epsilon']), output_dtype=output_dtype)


class FusedConvolution:
    """The function of a node that computes a convolution with a batch normalization folded
    into it and an activation applied by it.

    Called with the convolution's input, then its kernel and bias, then the batch-norm
    mean, variance, beta and gamma (the node's `parameters`, None where absent). When the
    kernel, bias and statistics are all variables, the folded kernel and bias (cast to the
    input's dtype), and the kernel packed for oneDNN, are kept from call to call until one
    of them is written (its version counter changes). The result is cast to `output_dtype`
    when given.
    """

    def __init__(self, conv, x, options, kernel, bias, statistics=None, epsilon=None,
                 activation=None, output_dtype=None, shared=False):
        self.conv = conv
        self.x = x
        self.options = options
        self.parameters = (kernel, bias) + tuple(statistics or (None,) * 4)
        self.epsilon = epsilon
        self.activation = activation
        self.output_dtype = output_dtype
        # several nodes stand for this one's result (it must not be changed for one of them)
        self.shared = shared
        self._in_compute_dtype = None
        self.__name__ = 'fused_' + conv.__name__
        self._kept = all(p is None or isinstance(p, Variable) for p in self.parameters)
        # the program passes the variables themselves, not aliases made per call
        self.takes_variables = self._kept
        self._versions = None
        self._weights = None
        self._packed = {}

    def with_activation(self, activation):
        """The same convolution with `activation` applied (before the cast to
        `output_dtype`, which a ReLU commutes with)."""
        return self._with(activation, self.output_dtype)

    def in_compute_dtype(self, shared):
        """The same convolution with its result left in the dtype it computes in; one object
        for every caller (`shared`: more than one node will stand for its result)."""
        if self._in_compute_dtype is None:
            self._in_compute_dtype = self._with(self.activation, None, shared)
        return self._in_compute_dtype

    def _with(self, activation, output_dtype, shared=False):
        return FusedConvolution(self.conv, self.x, self.options, *self.parameters[:2],
                                self.parameters[2:] if self.epsilon is not None else None,
                                self.epsilon, activation, output_dtype, shared)

    def __call__(self, x, kernel, bias, mean, var, beta, gamma):
        result = self._convolve(x, kernel, bias, mean, var, beta, gamma)
        return result if self.output_dtype is None else result.to(self.output_dtype)

    def _convolve(self, x, kernel, bias, mean, var, beta, gamma):
        if not self._kept:
            return conv_bias.fused_convolution(self.conv, x, kernel, self.options, bias,
                                              self.activation)
        weights = (kernel, bias, mean, var, beta, gamma)
        versions = [(w.data_ptr(), w._version) for w in weights if w is not None]
        if versions != self._versions:
            self._versions = versions
            # plain aliases of the variables: Python operators of variables record graph ops
            weights = tuple(None if w is None else w.as_subclass(torch.Tensor)
                            for w in weights)
            folded = self._fold(*weights) if self.epsilon is not None else weights[:2]
            self._weights = tuple(None if w is None else w.to(x.dtype) for w in folded)
            self._packed = {}
        kernel, bias = self._weights
        return conv_bias.fused_convolution(self.conv, x, kernel, self.options, bias,
                                          self.activation, self._packed)

    def _fold(self, kernel, bias, mean, var, beta, gamma):
        """The kernel and bias with the normalization folded in."""
        with torch.no_grad():
            scale = torch.rsqrt(var + self.epsilon)
            if gamma is not None:
                scale = scale * gamma
            channels = kernel.shape[-2:] if conv_bias.is_depthwise(self.conv) else (-1,)
            folded_kernel = kernel * scale.reshape(channels)
            shift = -mean if bias is None else bias - mean
            return folded_kernel, shift * scale if beta is None else shift * scale + beta
