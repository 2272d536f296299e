"""Tensors made from nothing or from values: `tf.constant`, `zeros`, `ones`, `fill`, `range`,
`eye`, `linspace`, and the random ops of `tf.random`, on torchk's device.

Random ops draw from torch's global generators, which `tf.random.set_seed` seeds; TF's
per-op `seed` arguments are accepted and do not change the draw (torchk has one random
stream, as TF has with a global seed and no op seeds).
"""
import numpy as np
import torch

from .. import config
from .. import graph
from .. import random_ops
from .. import strings
from .. import tf_dtypes as dtypes
from .tensors import convert_to_tensor

__all__ = ['constant', 'zeros', 'ones', 'fill', 'range', 'eye', 'linspace']


def shape_tuple(shape):
    """A shape (list, tuple, `TensorShape`, 1-D tensor, int) as a tuple of ints."""
    if isinstance(shape, torch.Tensor):
        return tuple(int(d) for d in shape.reshape(-1).tolist())
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def constant(value, dtype=None, shape=None, name=None):
    """A tensor holding `value` (TF's dtype rules: Python floats float32, ints int32).

    # Arguments
        value: a number, nested list, array or tensor.
        dtype: optional dtype.
        shape: optional shape: a scalar `value` is broadcast to it, others reshaped.

    # Returns
        A tensor, or a `StringTensor` for text.
    """
    tensor = convert_to_tensor(value, dtype)
    if isinstance(tensor, strings.StringTensor):
        text = tensor.numpy() if tensor.ndim else np.asarray(tensor)
        if shape is not None:
            shape = shape_tuple(shape)
            text = np.broadcast_to(text, shape) if text.size == 1 else text.reshape(shape)
        return strings.StringTensor(np.array(text))
    if isinstance(value, torch.Tensor):
        tensor = tensor.detach().clone()
    if shape is not None:
        shape = shape_tuple(shape)
        tensor = tensor.expand(shape).clone() if tensor.numel() == 1 else tensor.reshape(shape)
    return tensor


def zeros(shape, dtype=dtypes.float32, name=None):
    """A tensor of zeros of `shape` (of empty strings for `tf.string`, as TF)."""
    if dtypes.as_dtype(dtype).is_string:
        return strings.StringTensor(np.full(shape_tuple(shape), b'', dtype=object))
    return torch.zeros(shape_tuple(shape), dtype=dtypes.torch_dtype(dtype),
                       device=config.device())


def ones(shape, dtype=dtypes.float32, name=None):
    """A tensor of ones of `shape`."""
    return torch.ones(shape_tuple(shape), dtype=dtypes.torch_dtype(dtype),
                      device=config.device())


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with `value` (its dtype by TF's rules)."""
    value = convert_to_tensor(value)
    return torch.full(shape_tuple(dims), value.item(), dtype=value.dtype,
                      device=config.device())


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """An identity matrix (`num_rows` by `num_columns`), repeated over `batch_shape`."""
    matrix = torch.eye(int(num_rows), int(num_columns or num_rows),
                       dtype=dtypes.torch_dtype(dtype), device=config.device())
    if batch_shape is not None:
        matrix = matrix.expand(shape_tuple(batch_shape) + tuple(matrix.shape)).clone()
    return matrix


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced float32 values from `start` to `stop` (both included)."""
    if axis != 0:
        raise ValueError('tf.linspace with axis=%r is not supported; supported: 0.' % (axis,))
    return torch.linspace(float(start), float(stop), int(num), device=config.device())


def _symbolic(shape):
    return graph.is_symbol(shape) or (isinstance(shape, (list, tuple))
                                      and any(graph.is_symbol(d) for d in shape))


def _float(dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError('Expected a floating-point dtype; got %r.' % (dtype,))
    return dtype.torch_dtype


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normally distributed values of `shape` (`tf.random.normal`)."""
    if _symbolic(shape):
        return random_ops.random_normal(shape, mean, stddev, dtype=str(dtypes.as_dtype(dtype)))
    sample = torch.randn(shape_tuple(shape), dtype=_float(dtype), device=config.device())
    return sample * stddev + mean


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform values in `[minval, maxval)` of `shape` (`tf.random.uniform`); integer dtypes
    need `maxval`."""
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError('tf.random.uniform with dtype %r needs maxval.' % (dtype,))
        return torch.randint(int(minval), int(maxval), shape_tuple(shape),
                             dtype=dtype.torch_dtype, device=config.device())
    maxval = 1.0 if maxval is None else maxval
    if _symbolic(shape):
        return random_ops.random_uniform(shape, minval, maxval, dtype=str(dtype))
    sample = torch.rand(shape_tuple(shape), dtype=_float(dtype), device=config.device())
    return sample * (maxval - minval) + minval


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None,
                     name=None):
    """Normal values of `shape` redrawn until within two standard deviations of `mean`."""
    sample = torch.empty(shape_tuple(shape), dtype=_float(dtype), device=config.device())
    return torch.nn.init.trunc_normal_(sample, mean, stddev, mean - 2 * stddev,
                                       mean + 2 * stddev)


def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None):
    """Gamma-distributed values (`tf.random.gamma`): shape `shape + broadcast(alpha,
    beta).shape`, concentration `alpha` and rate `beta` (default 1)."""
    dtype = _float(dtype)
    alpha = convert_to_tensor(alpha, dtype=dtype)
    beta = torch.ones_like(alpha) if beta is None else convert_to_tensor(beta, dtype=dtype)
    alpha, beta = torch.broadcast_tensors(alpha, beta)
    sample_shape = shape_tuple(shape) + tuple(alpha.shape)
    # torch samples in float32 or float64 only.
    work = torch.float64 if dtype == torch.float64 else torch.float32
    draw = torch._standard_gamma(alpha.to(work).expand(sample_shape).contiguous())
    return (draw / beta.to(work)).to(dtype)


def random_shuffle(value, seed=None, name=None):
    """`value` with its first axis randomly permuted (`tf.random.shuffle`)."""
    value = convert_to_tensor(value)
    return value[torch.randperm(value.shape[0], device=value.device)]


def categorical(logits, num_samples, dtype=dtypes.int64, seed=None, name=None):
    """`num_samples` class indices per row of `logits` (unnormalized log-probabilities)."""
    logits = convert_to_tensor(logits)
    probabilities = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probabilities, int(num_samples), replacement=True).to(
        dtypes.torch_dtype(dtype))


def set_seed(seed):
    """Seeds torch's generators (CPU and CUDA), the seed of every random op that follows, and
    numpy's global generator, with which Keras 2.3.1's `fit` shuffles: a script seeded with
    `tf.random.set_seed` alone repeats its results, as under TF."""
    torch.manual_seed(int(seed))
    np.random.seed(int(seed) % 2 ** 32)
