"""Pooling: `pool2d` and `pool3d`, max or average ('same' average pooling excludes padded cells
from the mean)."""
import math

import torch.nn.functional as F

from .. import validation
from ..graph import op
from .layout import (_PADDINGS, _apply_padding, _check_choice, _data_format, _flat_pads,
                     _from_channels_first, _keras1_alias, _normalize_tuple, _spatial_pads, _tensor,
                     _to_channels_first)

__all__ = ['pool2d', 'pool3d']

_MAX_POOL = {2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {2: F.avg_pool2d, 3: F.avg_pool3d}


def _pool(name, rank, x, pool_size, strides, padding, data_format, pool_mode):
    _check_choice(padding, _PADDINGS, 'padding', name)
    _check_choice(pool_mode, ('max', 'avg'), 'pool_mode', name)
    pool_size = _normalize_tuple(pool_size, rank, 'pool_size')
    strides = _normalize_tuple(strides, rank, 'strides')
    x_cf = _to_channels_first(_tensor(x), data_format, rank, name)
    validation.check_window_fits(name, 'pool_size', x_cf.shape[2:], pool_size, (1,) * rank,
                                 padding)
    pads = _spatial_pads(x_cf.shape[2:], pool_size, strides, (1,) * rank, padding)
    if pool_mode == 'max':
        padded, torch_padding = _apply_padding(x_cf, pads, value=-math.inf)
        y = _MAX_POOL[rank](padded, pool_size, strides, torch_padding)
    elif all(type(before) is int and before == after for before, after in pads):
        y = _AVG_POOL[rank](x_cf, pool_size, strides, [p for p, _ in pads],
                            count_include_pad=False)
    else:
        # Mean over the real cells only: pooled sums of x over pooled counts of real cells.
        flat = _flat_pads(pads)
        ones = x_cf.new_ones((1, 1) + tuple(x_cf.shape[2:]))
        y = (_AVG_POOL[rank](F.pad(x_cf, flat), pool_size, strides)
             / _AVG_POOL[rank](F.pad(ones, flat), pool_size, strides))
    return _from_channels_first(y, data_format)


# ---------------------------------------------------------------------------------------------
# Pooling

@op
def pool2d(x, pool_size, strides=(1, 1), padding='valid', data_format=None, pool_mode='max',
           *, border_mode=None, dim_ordering=None):
    """2D Pooling.

    Average pooling with `"same"` padding averages the real cells of each window only.

    # Arguments
        x: Tensor or variable.
        pool_size: tuple of 2 integers (or integer).
        strides: tuple of 2 integers (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        pool_mode: string, `"max"` or `"avg"`.
        border_mode: Keras 1 name of `padding`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A tensor, result of 2D pooling.

    # Raises
        ValueError: if `padding`, `data_format`, `pool_mode`, `pool_size`, `strides` or
            the rank of `x` is invalid.
    """
    padding = _keras1_alias(padding, 'valid', border_mode, 'padding', 'border_mode')
    return _pool('pool2d', 2, x, pool_size, strides, padding,
                 _data_format(data_format, dim_ordering), pool_mode)


@op
def pool3d(x, pool_size, strides=(1, 1, 1), padding='valid', data_format=None,
           pool_mode='max', *, border_mode=None, dim_ordering=None):
    """3D Pooling.

    Average pooling with `"same"` padding averages the real cells of each window only.

    # Arguments
        x: Tensor or variable.
        pool_size: tuple of 3 integers (or integer).
        strides: tuple of 3 integers (or integer).
        padding: string, `"same"` or `"valid"`.
        data_format: string, `"channels_last"` or `"channels_first"`.
        pool_mode: string, `"max"` or `"avg"`.
        border_mode: Keras 1 name of `padding`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A tensor, result of 3D pooling.

    # Raises
        ValueError: if `padding`, `data_format`, `pool_mode`, `pool_size`, `strides` or
            the rank of `x` is invalid.
    """
    padding = _keras1_alias(padding, 'valid', border_mode, 'padding', 'border_mode')
    return _pool('pool3d', 3, x, pool_size, strides, padding,
                 _data_format(data_format, dim_ordering), pool_mode)
