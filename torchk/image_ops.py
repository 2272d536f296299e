"""Image ops of `tf.image` on channels-last images (`(batch, height, width, channels)` or one
image without the batch axis): patches and bounding boxes.

Backend ops (`graph.op`): they run at once on tensors and record on Keras symbols. TF's names
and arguments; `torchk.tf.op_table` maps `image.extract_patches`, `image.crop_to_bounding_box`
and `image.pad_to_bounding_box` to them.
"""
import functools

import torch
import torch.nn.functional as F

from .graph import op


def _pair(values, argument):
    """`(height, width)` of TF's `[1, h, w, 1]` lists."""
    values = [int(v) for v in values]
    if len(values) != 4 or values[0] != 1 or values[3] != 1:
        raise ValueError('tf.image.extract_patches: %s must be [1, rows, cols, 1]; got %s.'
                         % (argument, values))
    return values[1], values[2]


def _same_padding(size, kernel, stride, rate):
    """TF's 'SAME' padding of one axis: (before, after)."""
    extent = (kernel - 1) * rate + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


@op
def extract_patches(images, sizes, strides, rates, padding):
    """`tf.image.extract_patches`: the `sizes` patches (rows and columns `rates` apart) at
    every `strides` position, each flattened in (row, column, channel) order into the last
    axis: `(batch, out_rows, out_cols, rows * cols * channels)`.

    # Raises
        ValueError: for `sizes`, `strides` or `rates` not of the form `[1, r, c, 1]`, or a
            padding other than 'VALID' and 'SAME'.
    """
    (rows, cols), (stride_r, stride_c), (rate_r, rate_c) = (
        _pair(sizes, 'sizes'), _pair(strides, 'strides'), _pair(rates, 'rates'))
    padding = padding.upper()
    if padding not in ('VALID', 'SAME'):
        raise ValueError("tf.image.extract_patches: padding must be 'VALID' or 'SAME'; got "
                         "%r." % (padding,))
    batch, height, width, channels = images.shape
    x = images.permute(0, 3, 1, 2)
    if padding == 'SAME':
        top, bottom = _same_padding(height, rows, stride_r, rate_r)
        left, right = _same_padding(width, cols, stride_c, rate_c)
        x = F.pad(x, (left, right, top, bottom))
    out_h = (x.shape[2] - (rows - 1) * rate_r - 1) // stride_r + 1
    out_w = (x.shape[3] - (cols - 1) * rate_c - 1) // stride_c + 1
    patches = F.unfold(x, (rows, cols), dilation=(rate_r, rate_c),
                       stride=(stride_r, stride_c))  # (batch, channels * rows * cols, L)
    patches = patches.reshape(batch, channels, rows * cols, out_h * out_w)
    patches = patches.permute(0, 3, 2, 1).reshape(batch, out_h, out_w,
                                                   rows * cols * channels)
    return patches


def _size(value):
    return int(value.item()) if isinstance(value, torch.Tensor) else int(value)


def _boxed(function):
    """Applies `function` (of a 4-D batch) to a 3-D image as a batch of one."""
    @functools.wraps(function)
    def apply(image, *args, **kwargs):
        if image.dim() == 3:
            return function(image[None], *args, **kwargs)[0]
        if image.dim() != 4:
            raise ValueError('Expected an image of rank 3 or 4, got shape %s.'
                             % (tuple(image.shape),))
        return function(image, *args, **kwargs)
    return apply


@op
@_boxed
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """`tf.image.crop_to_bounding_box`: the `target_height` x `target_width` box whose top
    left corner is at (`offset_height`, `offset_width`).

    # Raises
        ValueError: for a box outside the image.
    """
    top, left = _size(offset_height), _size(offset_width)
    height, width = _size(target_height), _size(target_width)
    if top < 0 or left < 0 or top + height > image.shape[1] or left + width > image.shape[2]:
        raise ValueError('crop_to_bounding_box: the box (%d, %d) + (%d, %d) is not inside '
                         'images of %d x %d.' % (top, left, height, width, image.shape[1],
                                                 image.shape[2]))
    return image[:, top:top + height, left:left + width, :]


@op
@_boxed
def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """`tf.image.pad_to_bounding_box`: the image placed at (`offset_height`, `offset_width`)
    in a zero `target_height` x `target_width` image.

    # Raises
        ValueError: when the image does not fit.
    """
    top, left = _size(offset_height), _size(offset_width)
    bottom = _size(target_height) - top - image.shape[1]
    right = _size(target_width) - left - image.shape[2]
    if min(top, left, bottom, right) < 0:
        raise ValueError('pad_to_bounding_box: images of %d x %d at (%d, %d) do not fit in '
                         '%s x %s.' % (image.shape[1], image.shape[2], top, left,
                                       target_height, target_width))
    return F.pad(image, (0, 0, left, right, top, bottom))
