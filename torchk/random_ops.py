"""Random ops. In a graph each draws a new sample on every run, as in TF. The sequence of
samples is reproducible: an op without a `seed` takes one from numpy's global generator when
it is created, as Keras' TF backend does (`np.random.randint(10e6)`), so `np.random.seed(n)`
alone makes initial weights, dropout masks and training repeat on the CPU. Initial weights
are drawn on the CPU on every device (`graph.drawing_initial_values`): the same seed gives the
same initial weights on a GPU."""
import itertools
import weakref

import numpy as np
import torch

from . import config
from . import dtypes
from . import graph
from .variables import variable


_SEEDS = weakref.WeakValueDictionary()
_KEYS = itertools.count()


class _Seed:
    """A seeded generator per device, created where the samples are drawn."""

    def __init__(self, seed):
        self.seed = int(seed)
        self._generators = {}
        self.key = next(_KEYS)
        _SEEDS[self.key] = self

    def generator(self, device):
        if device.type == 'meta':
            return None
        key = str(device)
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[key]

    def sample(self, kind, shape, dtype, device, a, b):
        """Samples of `kind` ('uniform' in `[a, b)`, 'normal' of mean `a` and standard
        deviation `b`, 'truncated_normal': normal truncated to `[-2, 2]`, then scaled by
        `b` and shifted by `a`) from this seed's generator on `device`.

        Inside `torch.compile` one opaque op (`torchk::sample`) draws them, since dynamo
        cannot trace a `torch.Generator`: a compiled program draws the numbers the plain
        program draws, from the same generator.
        """
        if torch.compiler.is_compiling():
            return _compiled_sample(kind, list(shape), dtype, device, a, b, self.key)
        if graph.draws_initial_values() and device.type not in ('cpu', 'meta'):
            cpu = torch.device('cpu')
            return _draw(kind, shape, dtype, cpu, a, b, self.generator(cpu)).to(device)
        return _draw(kind, shape, dtype, device, a, b, self.generator(device))


def generators(device):
    """The generators random ops have made on `device` (a CUDA graph registers them)."""
    key = str(torch.device(device))
    return [seed._generators[key] for seed in list(_SEEDS.values()) if key in seed._generators]


def _draw(kind, shape, dtype, device, a, b, generator):
    out = torch.empty(shape, dtype=dtype, device=device)
    if kind == 'uniform':
        return out.uniform_(a, b, generator=generator)
    if kind == 'normal':
        return out.normal_(a, b, generator=generator)
    # TF redraws samples beyond two standard deviations; inverse-CDF sampling on the
    # truncated range gives the same distribution in one pass.
    torch.nn.init.trunc_normal_(out, 0., 1., -2., 2., generator=generator)
    return out * b + a


@torch.library.custom_op('torchk::sample', mutates_args=())
def _compiled_sample(kind: str, shape: list[int], dtype: torch.dtype, device: torch.device,
                     a: float, b: float, key: int) -> torch.Tensor:
    return _draw(kind, shape, dtype, device, a, b, _SEEDS[key].generator(device))


@_compiled_sample.register_fake
def _(kind, shape, dtype, device, a, b, key):
    return torch.empty(shape, dtype=dtype, device=device)


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
    return seed.sample('normal', _shape(shape), dtype, graph.target_device(), float(mean),
                       float(stddev))


@graph.random_op
def _uniform(shape, minval, maxval, dtype, seed):
    return seed.sample('uniform', _shape(shape), dtype, graph.target_device(), float(minval),
                       float(maxval))


@graph.random_op
def _binomial(shape, p, dtype, seed):
    draws = seed.sample('uniform', _shape(shape), dtype, graph.target_device(), 0., 1.)
    return (draws < p).to(dtype)


@graph.random_op
def _truncated_normal(shape, mean, stddev, dtype, seed):
    return seed.sample('truncated_normal', _shape(shape), dtype, graph.target_device(),
                       float(mean), float(stddev))


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
    mask = seed.sample('uniform', shape, x.dtype, x.device, 0., 1.)
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
