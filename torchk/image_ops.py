"""Image ops of `tf.image` on channels-last images (`(batch, height, width, channels)` or one
image without the batch axis): patches, bounding boxes, and resizing.

Patches and bounding boxes are backend ops (`graph.op`): they run at once on tensors and
record on Keras symbols. TF's names and arguments; `torchk.op_table` maps
`image.extract_patches`, `image.crop_to_bounding_box` and `image.pad_to_bounding_box` to them.

Resizing (`resize`, which `tf.image.resize`, the `Resizing` layer and `smart_resize` use)
follows `tf.image.resize` (half-pixel centers, no antialiasing): each resize is a product with
one constant matrix per spatial axis, whose weights are TensorFlow's kernel weights
(`bilinear`, `nearest`, `bicubic` with Keys' a = -0.5 and out-of-image taps dropped, `area`),
so image heights and widths must be known, or the resize is recorded as one op that reads them
when run (`at_image_size`).
"""
import functools

import numpy as np
import torch
import torch.nn.functional as F

from . import core as K
from . import graph
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


_INTERPOLATIONS = ('bilinear', 'nearest', 'bicubic', 'area')
_CUBIC_TABLE_SIZE = 1024  # TF's resize_bicubic samples its kernel at 1/1024 steps.


def _bilinear_matrix(in_size, out_size):
    scale = np.float32(in_size) / np.float32(out_size)
    matrix = np.zeros((out_size, in_size))
    for o in range(out_size):
        position = (np.float32(o) + np.float32(0.5)) * scale - np.float32(0.5)
        floor = np.floor(position)
        lower, upper = max(int(floor), 0), min(int(np.ceil(position)), in_size - 1)
        fraction = float(position - floor)
        matrix[o, lower] += 1. - fraction
        matrix[o, upper] += fraction
    return matrix


def _nearest_matrix(in_size, out_size):
    scale = np.float32(in_size) / np.float32(out_size)
    matrix = np.zeros((out_size, in_size))
    for o in range(out_size):
        index = int(np.floor((np.float32(o) + np.float32(0.5)) * scale))
        matrix[o, min(max(index, 0), in_size - 1)] = 1.
    return matrix


def _keys_cubic(x, a=-0.5):
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _bicubic_matrix(in_size, out_size):
    scale = np.float32(in_size) / np.float32(out_size)
    matrix = np.zeros((out_size, in_size))
    for o in range(out_size):
        position = (np.float32(o) + np.float32(0.5)) * scale - np.float32(0.5)
        start = int(np.floor(position))
        delta = float(np.rint((position - start) * _CUBIC_TABLE_SIZE)) / _CUBIC_TABLE_SIZE
        taps = {start - 1: _keys_cubic(1 + delta), start: _keys_cubic(delta),
                start + 1: _keys_cubic(1 - delta), start + 2: _keys_cubic(2 - delta)}
        inside = {i: w for i, w in taps.items() if 0 <= i < in_size}
        total = sum(inside.values())
        for i, weight in inside.items():
            matrix[o, i] = weight / total
    return matrix


def _area_matrix(in_size, out_size):
    scale = in_size / out_size
    matrix = np.zeros((out_size, in_size))
    for o in range(out_size):
        start, stop = o * scale, (o + 1) * scale
        for i in range(int(np.floor(start)), min(int(np.ceil(stop)), in_size)):
            matrix[o, i] = (min(i + 1, stop) - max(i, start)) / scale
    return matrix


_RESIZE_MATRICES = {'bilinear': _bilinear_matrix, 'nearest': _nearest_matrix,
                    'bicubic': _bicubic_matrix, 'area': _area_matrix}


def check_interpolation(interpolation, layer_name):
    """Raises a ValueError naming `layer_name` unless `resize` supports `interpolation`."""
    if interpolation not in _INTERPOLATIONS:
        raise ValueError('Layer %r: interpolation=%r is not supported; supported: %s.'
                         % (layer_name, interpolation, ', '.join(_INTERPOLATIONS)))


def _batched(function):
    """Applies `function` (of a 4-D channels-last batch) to a 3-D image as a batch of one."""
    def apply(images, *args):
        if K.ndim(images) == 3:
            return K.squeeze(function(K.expand_dims(images, 0), *args), 0)
        if K.ndim(images) != 4:
            raise ValueError('Expected images of rank 3 or 4, got shape %s.'
                             % (K.int_shape(images),))
        return function(images, *args)
    return apply


def image_size(images, layer_name):
    """The static `(height, width)` of channels-last `images`; a ValueError naming
    `layer_name` if either is unknown."""
    height, width = K.int_shape(images)[-3:-1]
    if height is None or width is None:
        raise ValueError('Layer %r needs the height and width of its images; got shape %s.'
                         % (layer_name, K.int_shape(images)))
    return height, width


def at_image_size(function, images):
    """`function(images)`, which reads the static height and width of channels-last
    `images`; where either is unknown (an `Input` of shape `(None, None, 3)`), it is
    recorded as one op, which reads them from the images it is run on."""
    height, width = K.int_shape(images)[-3:-1]
    if graph.is_symbol(images) and (height is None or width is None):
        return graph.op(function)(images)
    return function(images)


@_batched
def resize(images, height, width, interpolation):
    """`tf.image.resize(images, (height, width), interpolation)` on channels-last images."""
    in_height, in_width = K.int_shape(images)[1:3]
    if (in_height, in_width) == (height, width) and interpolation != 'area':
        return images
    rows = K.constant(_RESIZE_MATRICES[interpolation](in_height, height).T)
    columns = K.constant(_RESIZE_MATRICES[interpolation](in_width, width).T)
    x = K.dot(K.permute_dimensions(images, (0, 2, 3, 1)), rows)  # (batch, W, C, height)
    x = K.dot(K.permute_dimensions(x, (0, 3, 2, 1)), columns)  # (batch, height, C, width)
    return K.permute_dimensions(x, (0, 1, 3, 2))


def crop(images, top, left, height, width):
    """The window of channels-last `images` from row `top` and column `left`, `height` by
    `width`."""
    return images[..., top:top + height, left:left + width, :]


def smart_resize(images, height, width, interpolation, layer_name):
    """tf_keras' `smart_resize`: the largest centered crop of the target aspect ratio, resized."""
    in_height, in_width = image_size(images, layer_name)
    crop_height = min(in_height, int(np.float32(in_width * height) / np.float32(width)))
    crop_width = min(in_width, int(np.float32(in_height * width) / np.float32(height)))
    top = int(np.float32(in_height - crop_height) / 2)
    left = int(np.float32(in_width - crop_width) / 2)
    cropped = crop(images, top, left, crop_height, crop_width)
    return resize(cropped, height, width, interpolation)


class _NoGradient(torch.autograd.Function):
    """Applies a function of tensors whose gradient TF does not define: differentiating
    through it raises TF's `LookupError`, as `tf.GradientTape` does for such an op."""

    @staticmethod
    def forward(ctx, function, tf_name, *tensors):
        ctx.tf_name = tf_name
        return function(*tensors)

    @staticmethod
    def backward(ctx, *upstream):
        raise LookupError('%s has no gradient: TensorFlow\'s gradient registry has no entry '
                          'for it, so torchk defines none either.' % ctx.tf_name)


def _contrast(images, contrast_factor):
    mean = images.mean(dim=(-3, -2), keepdim=True)
    return (images - mean) * contrast_factor + mean


@op
def adjust_contrast(images, contrast_factor):
    """`tf.image.adjust_contrast`: each channel of each image moved away from (factor > 1)
    or toward (factor < 1) its mean over the image, `(x - mean) * contrast_factor + mean`.

    As in TF, integer images are computed as floats in [0, 1] and converted back with
    saturation, and the op has no gradient (differentiating through it raises LookupError).

    # Arguments
        images: a tensor of shape `(..., height, width, channels)`.
        contrast_factor: a float, or a scalar tensor.

    # Returns
        A tensor of `images`' shape and dtype.
    """
    factor = torch.as_tensor(contrast_factor, dtype=torch.float32, device=images.device)
    if images.dtype in (torch.float16, torch.float32):
        return _NoGradient.apply(_contrast, 'tf.image.adjust_contrast', images,
                                 factor.to(images.dtype))
    if images.is_floating_point():
        adjusted = _NoGradient.apply(_contrast, 'tf.image.adjust_contrast',
                                     images.to(torch.float32), factor)
        return adjusted.to(images.dtype)
    top = torch.iinfo(images.dtype).max
    adjusted = _NoGradient.apply(_contrast, 'tf.image.adjust_contrast',
                                 images.to(torch.float32) / top, factor)
    scaled = adjusted * (top + 0.5)
    return scaled.clamp(torch.iinfo(images.dtype).min, top).to(images.dtype)
