"""Random ops. In a graph each draws a new sample on every run, as in TF. The sequence of
samples is reproducible: an op without a `seed` takes one from numpy's global generator when
it is created, as Keras' TF backend does (`np.random.randint(10e6)`), so `np.random.seed(n)`
alone makes initial weights, dropout masks and training repeat on the CPU."""
import numpy as np
import torch

from . import config
from . import dtypes
from . import graph
from .variables import variable


class _Seed:
    """A seeded generator per device, created where the samples are drawn."""

    def __init__(self, seed):
        self.seed = int(seed)
        self._generators = {}

    def generator(self, device):
        if device.type == 'meta':
            return None
        key = str(device)
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[key]


# The bounds of the seeds Keras' TF backend draws with `np.random.randint` for a `seed=None`:
# random ops and dropout, and the random variables (tensorflow_backend.py:4322, 1141).
_OP_SEEDS = 10 ** 7
_VARIABLE_SEEDS = 10 ** 9


def _seed(seed):
    return _Seed(np.random.randint(_OP_SEEDS) if seed is None else seed)


def _float_dtype(dtype):
    torch_dtype = dtypes.to_torch(dtype if dtype is not None else config.floatx())
    if not torch_dtype.is_floating_point:
        raise TypeError('Random values need a float dtype, got %s.' % dtypes.name(torch_dtype))
    return torch_dtype


def _shape(shape):
    if isinstance(shape, torch.Tensor):
        return tuple(int(d) for d in shape.reshape(-1))
    if isinstance(shape, (list, tuple)):
        return tuple(int(d) for d in shape)
    return (int(shape),)


@graph.random_op
def _normal(shape, mean, stddev, dtype, seed):
    device = graph.target_device()
    out = torch.empty(_shape(shape), dtype=dtype, device=device)
    return out.normal_(float(mean), float(stddev), generator=seed.generator(device))


@graph.random_op
def _uniform(shape, minval, maxval, dtype, seed):
    device = graph.target_device()
    out = torch.empty(_shape(shape), dtype=dtype, device=device)
    return out.uniform_(float(minval), float(maxval), generator=seed.generator(device))


@graph.random_op
def _binomial(shape, p, dtype, seed):
    device = graph.target_device()
    draws = torch.empty(_shape(shape), dtype=dtype, device=device)
    draws.uniform_(0., 1., generator=seed.generator(device))
    return (draws < p).to(dtype)


@graph.random_op
def _truncated_normal(shape, mean, stddev, dtype, seed):
    device = graph.target_device()
    out = torch.empty(_shape(shape), dtype=dtype, device=device)
    # TF redraws samples beyond two standard deviations; inverse-CDF sampling on the
    # truncated range gives the same distribution in one pass.
    torch.nn.init.trunc_normal_(out, 0., 1., -2., 2., generator=seed.generator(device))
    return out * float(stddev) + float(mean)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Returns a tensor with normally distributed values.

    # Arguments
        shape: tuple of ints or scalar tensors, or a 1-D int tensor.
        mean, stddev: the distribution's mean and standard deviation.
        dtype: float dtype (default `K.floatx()`).
        seed: int; makes the sequence of samples reproducible (default: drawn from numpy's
            global generator).
    """
    return _normal(shape, mean, stddev, _float_dtype(dtype), _seed(seed))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Returns a tensor with values uniformly distributed in `[minval, maxval)`."""
    return _uniform(shape, minval, maxval, _float_dtype(dtype), _seed(seed))


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    """Returns a tensor of 0s and 1s, each 1 with probability `p`."""
    return _binomial(shape, p, _float_dtype(dtype), _seed(seed))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Returns a normal sample truncated to two standard deviations around `mean`."""
    return _truncated_normal(shape, mean, stddev, _float_dtype(dtype), _seed(seed))


@graph.op
def _dropout(x, level, noise_shape, seed):
    keep = 1. - level
    shape = tuple(x.shape) if noise_shape is None else tuple(
        x.shape[i] if d is None else int(d) for i, d in enumerate(noise_shape))
    mask = torch.empty(shape, dtype=x.dtype, device=x.device)
    mask.uniform_(0., 1., generator=seed.generator(x.device))
    return x * (mask < keep).to(x.dtype) / keep


def dropout(x, level, noise_shape=None, seed=None):
    """Sets entries of `x` to zero at random, scaling the rest by `1 / (1 - level)`.

    # Arguments
        x: tensor.
        level: fraction of entries dropped, in `[0, 1)`.
        noise_shape: shape of the random keep/drop mask, broadcast to `x`'s shape; entries
            may be None (that dimension of `x`) or scalar tensors.
        seed: int, for reproducible masks.

    # Raises
        ValueError: if `level` is outside `[0, 1)`.
    """
    if not graph.is_symbol(level) and not 0. <= float(level) < 1.:
        raise ValueError('dropout level must be in [0, 1), got %r.' % (level,))
    return _dropout(x, level, noise_shape, _seed(seed))


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    """Instantiates a variable with values drawn uniformly from `[low, high)`."""
    if seed is None:
        seed = np.random.randint(_VARIABLE_SEEDS)
    return variable(random_uniform(shape, low, high, dtype, seed), dtype=dtype, name=name)


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    """Instantiates a variable with normally distributed values."""
    if seed is None:
        seed = np.random.randint(_VARIABLE_SEEDS)
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype=dtype, name=name)
