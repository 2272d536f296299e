"""tf.keras' `load_img` (Keras 2.3.1's lacks `keep_aspect_ratio` and file objects) and
`smart_resize`."""
import io
import os

import numpy as np

_RESAMPLING = ('nearest', 'bilinear', 'bicubic', 'hamming', 'box', 'lanczos')


def load_img(path, grayscale=False, color_mode='rgb', target_size=None,
             interpolation='nearest', keep_aspect_ratio=False):
    """Loads an image file as a PIL image.

    # Arguments
        path: a path (str or path-like) or a binary file object (`io.BytesIO`).
        grayscale: deprecated, `color_mode='grayscale'`.
        color_mode: 'grayscale', 'rgb' or 'rgba'.
        target_size: None, or `(height, width)` to resize to.
        interpolation: PIL's resampling, by name.
        keep_aspect_ratio: crop the central part of the aspect ratio of `target_size`
            before resizing.

    # Raises
        ImportError: without Pillow.
        ValueError: for an unknown color mode or interpolation.
        TypeError: for a path of another type.
    """
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError('Could not import PIL.Image. The use of `load_img` requires PIL.'
                          ) from error
    if grayscale:
        color_mode = 'grayscale'
    modes = {'grayscale': ('L', 'I;16', 'I'), 'rgb': ('RGB',), 'rgba': ('RGBA',)}
    if color_mode not in modes:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"; got %r.'
                         % (color_mode,))
    if isinstance(path, io.BytesIO):
        image = Image.open(path)
    elif isinstance(path, (str, bytes, os.PathLike)):
        with open(path, 'rb') as f:
            image = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError('path should be path-like or io.BytesIO, not %s' % type(path))
    if image.mode not in modes[color_mode]:
        image = image.convert(modes[color_mode][0])
    if target_size is None:
        return image
    height, width = target_size
    if image.size == (width, height):
        return image
    if interpolation not in _RESAMPLING:
        raise ValueError('Invalid interpolation method %r; supported: %s.'
                         % (interpolation, ', '.join(_RESAMPLING)))
    resample = getattr(Image, interpolation.upper())
    box = None
    if keep_aspect_ratio:
        box_width, box_height = image.size
        crop_height = min(box_height, box_width * height // width)
        crop_width = min(box_width, box_height * width // height)
        left = (box_width - crop_width) // 2
        top = (box_height - crop_height) // 2
        box = (left, top, left + crop_width, top + crop_height)
    return image.resize((width, height), resample, box=box)


def smart_resize(x, size, interpolation='bilinear'):
    """Resizes an image `(height, width, channels)` or a batch of them to `size`, cropping
    the central part of `size`'s aspect ratio first (as the `Resizing` layer with
    `crop_to_aspect_ratio=True`).

    # Returns
        A numpy array for numpy input, else a tensor.
    """
    from keras import backend as K
    from ... import image_ops

    is_numpy = isinstance(x, np.ndarray)
    images = K.constant(np.asarray(x, dtype='float32')) if is_numpy else x
    single = len(images.shape) == 3
    if single:
        images = images[None]
    if len(images.shape) != 4:
        raise ValueError('smart_resize takes an image (height, width, channels) or a batch '
                         'of them; got shape %s.' % (tuple(images.shape),))
    resized = image_ops.smart_resize(images, size[0], size[1], interpolation,
                                     'smart_resize')
    if single:
        resized = resized[0]
    return K.eval(resized) if is_numpy else resized
