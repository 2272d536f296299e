"""Padding (`temporal_padding`, `spatial_2d_padding`, `spatial_3d_padding` and the Keras 1
asymmetric ones) and resizing by whole factors (`resize_images`, `resize_volumes`)."""
import torch

from .. import config
from .. import dtypes
from ..graph import op
from .layout import (_check_choice, _check_rank, _constant_pad, _data_format, _normalize_tuple,
                     _padding_pairs, _tensor)

__all__ = [
    'asymmetric_spatial_2d_padding', 'asymmetric_temporal_padding', 'resize_images',
    'resize_volumes', 'spatial_2d_padding', 'spatial_3d_padding', 'temporal_padding',
]

def _pad(name, x, pairs, data_format):
    """Zero-pads the spatial axes of `x` (in `data_format`) by `(before, after)` pairs."""
    x = _tensor(x)
    _check_rank(x, len(pairs) + 2, name)
    if data_format == 'channels_last':
        pairs = list(pairs) + [(0, 0)]
    return _constant_pad(x, pairs)


def _spatial_axes(rank, data_format):
    first = 2 if data_format == 'channels_first' else 1
    return tuple(range(first, first + rank))


def _repeat_spatial(x, axes, factors):
    """Repeats every cell of `x` `factor` times along each of `axes` (nearest upsampling)."""
    view, expanded, final = [], [], []
    for axis, size in enumerate(x.shape):
        factor = factors[axes.index(axis)] if axis in axes else None
        if factor is None:
            view.append(size)
            expanded.append(size)
            final.append(size)
        else:
            view += [size, 1]
            expanded += [size, factor]
            final.append(size * factor)
    return x.reshape(view).expand(expanded).reshape(final)


def _upsample_linear(x, axis, factor):
    """Linear upsampling of one axis by an integer factor, as TF 1's `resize_bilinear`
    (align_corners=False, no half-pixel centers): output cell `i` samples input
    coordinate `i / factor`, clamped at the last cell."""
    size = x.shape[axis]
    target = torch.arange(size * factor, device=x.device)
    low = target // factor
    high = torch.clamp(low + 1, max=size - 1)
    weight_shape = [1] * x.ndim
    weight_shape[axis] = -1
    weight = ((target % factor).to(x.dtype) / factor).reshape(weight_shape)
    return torch.lerp(x.index_select(axis, low), x.index_select(axis, high), weight)


# ---------------------------------------------------------------------------------------------
# Padding

@op
def temporal_padding(x, padding=(1, 1)):
    """Pads the middle dimension of a 3D tensor.

    # Arguments
        x: Tensor or variable.
        padding: Tuple of 2 integers, how many zeros to add at the start and end of dim 1
            (an integer pads both ends equally, the Keras 1 form).

    # Returns
        A padded 3D tensor.

    # Raises
        ValueError: if `padding` or the rank of `x` is invalid.
    """
    if isinstance(padding, (tuple, list)):
        padding = (padding,)
    return _pad('temporal_padding', x, _padding_pairs(padding, 1, 'temporal_padding'),
                'channels_last')


@op
def asymmetric_temporal_padding(x, left_pad=1, right_pad=1):
    """Keras 1: pads the middle dimension of a 3D tensor with `left_pad` and `right_pad` zeros.

    # Arguments
        x: Tensor or variable.
        left_pad: zeros added at the start of dim 1.
        right_pad: zeros added at the end of dim 1.

    # Returns
        A padded 3D tensor.

    # Raises
        ValueError: if a pad or the rank of `x` is invalid.
    """
    name = 'asymmetric_temporal_padding'
    return _pad(name, x, _padding_pairs(((left_pad, right_pad),), 1, name), 'channels_last')


@op
def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None, *, dim_ordering=None):
    """Pads the 2nd and 3rd dimensions of a 4D tensor.

    # Arguments
        x: Tensor or variable.
        padding: Tuple of 2 tuples, padding pattern `((top, bottom), (left, right))`;
            a tuple of 2 integers pads both sides of each axis equally (the Keras 1 form).
        data_format: string, `"channels_last"` or `"channels_first"`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A padded 4D tensor.

    # Raises
        ValueError: if `padding`, `data_format` or the rank of `x` is invalid.
    """
    name = 'spatial_2d_padding'
    return _pad(name, x, _padding_pairs(padding, 2, name),
                _data_format(data_format, dim_ordering))


@op
def asymmetric_spatial_2d_padding(x, top_pad=1, bottom_pad=1, left_pad=1, right_pad=1,
                                  dim_ordering='default'):
    """Keras 1: pads the rows and columns of a 4D tensor with zeros, each side on its own.

    # Arguments
        x: Tensor or variable.
        top_pad, bottom_pad: zeros added before and after the rows.
        left_pad, right_pad: zeros added before and after the columns.
        dim_ordering: `'tf'`, `'th'` or `'default'` (the configured data format).

    # Returns
        A padded 4D tensor.

    # Raises
        ValueError: if a pad, `dim_ordering` or the rank of `x` is invalid.
    """
    name = 'asymmetric_spatial_2d_padding'
    pairs = _padding_pairs(((top_pad, bottom_pad), (left_pad, right_pad)), 2, name)
    return _pad(name, x, pairs, _data_format(None, dim_ordering))


@op
def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None, *,
                       dim_ordering=None):
    """Pads 5D tensor with zeros along the depth, height, width dimensions.

    Pads these dimensions with respectively `padding[0]`, `padding[1]` and `padding[2]`
    zeros before and after. For 'channels_last' data_format the 2nd, 3rd and 4th dimensions
    are padded; for 'channels_first' the 3rd, 4th and 5th.

    # Arguments
        x: Tensor or variable.
        padding: Tuple of 3 tuples, padding pattern; a tuple of 3 integers pads both sides
            of each axis equally (the Keras 1 form).
        data_format: string, `"channels_last"` or `"channels_first"`.
        dim_ordering: Keras 1 name of `data_format` (`'tf'`, `'th'` or `'default'`).

    # Returns
        A padded 5D tensor.

    # Raises
        ValueError: if `padding`, `data_format` or the rank of `x` is invalid.
    """
    name = 'spatial_3d_padding'
    return _pad(name, x, _padding_pairs(padding, 3, name),
                _data_format(data_format, dim_ordering))


# ---------------------------------------------------------------------------------------------
# Resizing

@op
def resize_images(x, height_factor, width_factor, data_format, interpolation='nearest'):
    """Resizes the images contained in a 4D tensor by integer factors.

    `'bilinear'` follows TF 1's `resize_bilinear` (the one Keras 2.3.1 calls): output pixel
    `i` samples input coordinate `i / factor`, so the first pixel of each block copies an
    input pixel and the last input pixel is repeated at the edge. Integer images come back
    as floatx for `'bilinear'`.

    # Arguments
        x: Tensor or variable to resize.
        height_factor: Positive integer.
        width_factor: Positive integer.
        data_format: string, `"channels_last"` or `"channels_first"` (None: the default;
            Keras 1 `'th'`/`'tf'` are accepted).
        interpolation: A string, one of `nearest` or `bilinear`.

    # Returns
        A tensor.

    # Raises
        ValueError: if `data_format`, `interpolation`, a factor or the rank of `x` is invalid.
    """
    name = 'resize_images'
    data_format = _data_format(data_format)
    _check_choice(interpolation, ('nearest', 'bilinear'), 'interpolation', name)
    factors = _normalize_tuple((height_factor, width_factor), 2, 'height_factor, width_factor')
    x = _tensor(x)
    _check_rank(x, 4, name)
    axes = _spatial_axes(2, data_format)
    if interpolation == 'nearest':
        return _repeat_spatial(x, axes, factors)
    if not x.is_floating_point():
        x = x.to(dtypes.to_torch(config.floatx()))
    for axis, factor in zip(axes, factors):
        x = _upsample_linear(x, axis, factor)
    return x


@op
def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """Resizes the volume contained in a 5D tensor (each cell repeated by integer factors).

    # Arguments
        x: Tensor or variable to resize.
        depth_factor: Positive integer.
        height_factor: Positive integer.
        width_factor: Positive integer.
        data_format: string, `"channels_last"` or `"channels_first"` (None: the default;
            Keras 1 `'th'`/`'tf'` are accepted).

    # Returns
        A tensor.

    # Raises
        ValueError: if `data_format`, a factor or the rank of `x` is invalid.
    """
    data_format = _data_format(data_format)
    factors = _normalize_tuple((depth_factor, height_factor, width_factor), 3,
                               'depth_factor, height_factor, width_factor')
    x = _tensor(x)
    _check_rank(x, 5, 'resize_volumes')
    return _repeat_spatial(x, _spatial_axes(3, data_format), factors)
