"""`tf.custom_gradient` on torch autograd.

A decorated function `f(*x)` returns `(y, grad_fn)`: `y` (a tensor or a nested structure of
tensors) is its value, and `grad_fn(*upstream)` gives the gradients of the inputs from the
gradients of `y`'s tensors. torchk runs `f`, then gives the inputs `y`'s values through one
`torch.autograd.Function` whose backward calls `grad_fn` (`y`'s own autograd graph is not
used). That backward runs under autograd when the gradient is itself differentiated (nested
tapes): `grad_fn`'s operations, and the values of `f` it reads, are differentiated as in TF.

Variables `f` reads (the trainable variables `y` depends on through autograd, other than the
inputs) get gradients as in TF: `grad_fn` must then take a keyword argument `variables` and
return `(input_gradients, variable_gradients)`.

On Keras symbols (a step being recorded, a Keras model) the call records one op that does the
same when the program runs. A function traced into a saved torch graph keeps only its forward
computation: TF's `tf.saved_model.SaveOptions(experimental_custom_gradients=False)`;
with TF's default (True) saving refuses it, since the saved graph would lose the gradient.
"""
import contextlib
import functools
import inspect

import torch
from torch.fx.experimental.proxy_tensor import get_proxy_mode

from .. import graph
from .. import structure
from .. import variables as keras_variables
from .tensors import eager

_SAVING = {'custom_gradients': True}


@contextlib.contextmanager
def saving_custom_gradients(keep):
    """Within, functions traced for a SavedModel keep their custom gradients (`keep`, TF's
    `SaveOptions.experimental_custom_gradients`: torchk refuses to save them) or are saved
    as their forward computation only (False)."""
    previous = _SAVING['custom_gradients']
    _SAVING['custom_gradients'] = bool(keep)
    try:
        yield
    finally:
        _SAVING['custom_gradients'] = previous


def custom_gradient(f=None):
    """Decorator giving a function its own gradient (TF's `tf.custom_gradient`).

    # Arguments
        f: a function of tensors returning `(y, grad_fn)`: `y` a tensor or a nested
            structure of tensors; `grad_fn(*upstream)` (one upstream gradient per tensor of
            `y`, flattened) returning the gradients of `f`'s positional arguments (one, or a
            list of one per flattened argument; None for no gradient). If `f` reads
            variables, `grad_fn(*upstream, variables=...)` returns
            `(input_gradients, variable_gradients)`, one gradient per variable, in the order
            of `variables`.

    # Returns
        The decorated function, returning `y`.

    # Example
    ```python
    @tf.custom_gradient
    def clip_gradients(y):
        def backward(dy):
            return tf.clip_by_norm(dy, 0.5)
        return y, backward
    ```
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        args, kwargs = eager(args), eager(kwargs)
        if graph.contains_symbol(args) or (kwargs and graph.contains_symbol(kwargs)):
            return graph.record(functools.partial(_call, f), args, kwargs)
        return _call(f, *args, **kwargs)
    return decorated


def _call(f, *args, **kwargs):
    if get_proxy_mode() is not None:
        return _traced_call(f, args, kwargs)
    flat_args = structure.flatten(list(args))
    inputs = [a for a in flat_args if isinstance(a, torch.Tensor)]
    if not torch.is_grad_enabled():
        return f(*args, **kwargs)[0]
    result, grad_fn = f(*args, **kwargs)
    outputs = structure.flatten(result)
    tensors = [y for y in outputs if isinstance(y, torch.Tensor)]
    known = inputs + [v for v in structure.flatten(list(kwargs.values()))
                      if isinstance(v, torch.Tensor)]
    read = _variables_read(tensors, known)
    if read and not _takes_variables(grad_fn):
        raise TypeError('tf.custom_gradient: the function reads variables (%s), so its '
                        'gradient function must take a keyword argument `variables`.'
                        % ', '.join(getattr(v, 'name', '?') for v in read))
    joined = _CustomGradient.apply(
        _Backward(grad_fn, len(flat_args), [isinstance(a, torch.Tensor) for a in flat_args],
                  read or None, len(tensors)),
        len(tensors), *[y.detach() for y in tensors], *inputs, *read)
    joined = iter(joined)
    return structure.pack_as(result, [next(joined) if isinstance(y, torch.Tensor) else y
                                      for y in outputs])


def _traced_call(f, args, kwargs):
    """`f`'s forward computation, in a function traced into a torch graph (a SavedModel's)."""
    if _SAVING['custom_gradients']:
        raise ValueError(
            'tf.custom_gradient: torchk saves a function as a torch graph, which cannot hold '
            'a custom gradient. Save with tf.saved_model.SaveOptions('
            'experimental_custom_gradients=False) to save the forward computation only (its '
            'gradient is then the computation\'s own, as in TF with that option).')
    return f(*args, **kwargs)[0]


def _takes_variables(grad_fn):
    try:
        parameters = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == 'variables' or p.kind is inspect.Parameter.VAR_KEYWORD
               for p in parameters)


def _variables_read(tensors, known):
    """The trainable variables the autograd graph of `tensors` reaches without passing
    through the tensors `known` (the arguments: what they were computed from is not read by
    the function), in the order they are first met."""
    found, seen, stack = [], set(), [t.grad_fn for t in tensors if t.grad_fn is not None]
    visited = {k.grad_fn for k in known if k.grad_fn is not None}
    while stack:
        node = stack.pop()
        if node is None or node in visited:
            continue
        visited.add(node)
        leaf = getattr(node, 'variable', None)
        if (isinstance(leaf, keras_variables.Variable) and id(leaf) not in seen
                and all(leaf is not k for k in known)):
            seen.add(id(leaf))
            found.append(leaf)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return found


class _Backward:
    """Calls a `grad_fn` with the upstream gradients and checks what it returns: one
    gradient per flattened argument (None where the argument is no tensor), then one per
    variable read."""

    def __init__(self, grad_fn, argument_count, is_tensor, read, output_count):
        self.grad_fn = grad_fn
        self.argument_count = argument_count
        self.is_tensor = is_tensor
        self.read = read
        self.output_count = output_count

    def __call__(self, upstream):
        if self.read is not None:
            gradients = self.grad_fn(*upstream, variables=list(self.read))
            if not (isinstance(gradients, (list, tuple)) and len(gradients) == 2):
                raise ValueError('tf.custom_gradient: a gradient function taking `variables` '
                                 'must return (input_gradients, variable_gradients).')
            input_gradients, variable_gradients = gradients
            variable_gradients = list(variable_gradients or [])
            if len(variable_gradients) != len(self.read):
                raise ValueError('tf.custom_gradient: the gradient function returned %d '
                                 'variable gradients for %d variables.'
                                 % (len(variable_gradients), len(self.read)))
        else:
            input_gradients, variable_gradients = self.grad_fn(*upstream), []
        flat = (list(input_gradients) if isinstance(input_gradients, (list, tuple))
                else [input_gradients])
        if len(flat) != self.argument_count:
            raise ValueError('tf.custom_gradient: the gradient function returned %d '
                             'gradients for %d arguments.' % (len(flat), self.argument_count))
        input_tensors = [g for g, tensor in zip(flat, self.is_tensor) if tensor]
        return input_tensors + variable_gradients


class _CustomGradient(torch.autograd.Function):
    """Gives `outputs` (computed already, detached from the inputs) the gradient of a
    `_Backward` with respect to `inputs` and the variables read."""

    @staticmethod
    def forward(ctx, backward, output_count, *tensors):
        ctx.backward = backward
        ctx.targets = [(t.dtype, t.device) for t in tensors[output_count:]]
        return tuple(t.detach().clone() for t in tensors[:output_count])

    @staticmethod
    def backward(ctx, *upstream):
        gradients = ctx.backward(list(upstream))
        result = [None, None] + [None] * ctx.backward.output_count
        for (dtype, device), gradient in zip(ctx.targets, gradients):
            if gradient is not None:
                gradient = torch.as_tensor(gradient, dtype=dtype, device=device)
            result.append(gradient)
        return tuple(result)
