"""Hypothesis strategies and profiles shared by the differential tests: tests/fuzz/ (against
Keras' numpy backend) and tests/oracle/ (against TensorFlow's Keras 2 backend).

Profiles: `ci` (the default) is derandomized with few examples, so a run is reproducible and
fast; `TORCHK_FUZZ=long` draws many random examples per test.
"""
import os

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.extra import numpy as hnp

FLOATS = ('float32', 'float64')
INTS = ('int32', 'int64')
CI_EXAMPLES = 25


def load_profile():
    """Registers the `ci` and `long` profiles and loads the one `TORCHK_FUZZ` names."""
    common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                        HealthCheck.data_too_large])
    settings.register_profile('ci', derandomize=True, max_examples=CI_EXAMPLES, **common)
    settings.register_profile('long', max_examples=1000, **common)
    settings.load_profile('long' if os.environ.get('TORCHK_FUZZ') == 'long' else 'ci')


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype, shape, low=-10., high=10.):
    """Arrays of `dtype` with values in `[low, high]` (integers for integer dtypes)."""
    if np.dtype(dtype).kind == 'i':
        elements = st.integers(int(low), int(high))
    else:
        elements = st.floats(low, high, width=np.dtype(dtype).itemsize * 8)
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def array(draw, dtypes=FLOATS + INTS, low=-10., high=10., **shape_kwargs):
    """An array of a dtype drawn from `dtypes`, values in `[low, high]`, its shape drawn by
    `shapes(**shape_kwargs)`."""
    dtype = draw(st.sampled_from(dtypes))
    return draw(arrays(dtype, shapes(**shape_kwargs), low, high))


@st.composite
def array_and_axis(draw, dtypes=FLOATS, min_dims=1, low=-10., high=10.):
    """An array and an axis argument: an int (possibly negative), None or a tuple."""
    dtype = draw(st.sampled_from(dtypes))
    x = draw(arrays(dtype, shapes(min_dims=min_dims), low, high))
    axes = st.integers(-x.ndim, x.ndim - 1) if x.ndim else st.none()
    axis = draw(st.one_of(st.none(), axes,
                          st.lists(axes, min_size=1, max_size=x.ndim,
                                   unique_by=lambda a: a % max(x.ndim, 1)).map(tuple))
                if x.ndim else st.none())
    return x, axis


@st.composite
def conv_case(draw, rank, data_formats=('channels_last', 'channels_first'),
              paddings=('valid', 'same'), max_side=7, max_kernel=4, dilation=True):
    """Arguments of a `rank`-D convolution or pooling: `(input shape, kernel size, strides,
    padding, data_format, dilation_rate)`, inputs of 1-2 samples and 1-3 channels. Strides
    and dilations above 1 are not drawn together (TF refuses them)."""
    data_format = draw(st.sampled_from(data_formats))
    padding = draw(st.sampled_from(paddings))
    kernel = tuple(draw(st.integers(1, max_kernel)) for _ in range(rank))
    strided = draw(st.booleans())
    strides = tuple(draw(st.integers(1, 3)) if strided else 1 for _ in range(rank))
    dilations = tuple(draw(st.integers(1, 2)) if dilation and not strided
                      and 2 * k - 1 <= max_side else 1 for k in kernel)
    spatial = tuple(draw(st.integers((k - 1) * d + 1, max_side))
                    for k, d in zip(kernel, dilations))
    batch, channels = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    shape = ((batch,) + spatial + (channels,) if data_format == 'channels_last'
             else (batch, channels) + spatial)
    return shape, kernel, strides, padding, data_format, dilations
