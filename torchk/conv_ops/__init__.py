"""Convolution, pooling, padding and resizing ops of the Keras 2.3.1 backend API, one module per
domain: `convolution`, `pooling`, `padding` (and resizing), `bias` (`bias_add`, folded into
the convolution it follows when recorded); `layout` holds what they share.

Each op follows the TensorFlow backend's conventions on top of `torch.nn.functional`:

- Tensors keep Keras layouts at the API. `channels_last` inputs are permuted to
  channels-first *views* (no copy): for a contiguous NHWC tensor that view is exactly torch's
  `channels_last` memory format, which cuDNN consumes natively, so the layout is free on CUDA.
- Kernels keep Keras layouts whatever the data format: convolution `(*spatial, in, out)`,
  depthwise `(*spatial, in, depth_multiplier)`, separable pointwise `(1, ..., in * dm, out)`,
  transposed convolution `(*spatial, out, in)`.
- `'same'` padding is TensorFlow's: `ceil(size / stride)` outputs, with the odd padded cell at
  the end, for any stride and dilation. Symmetric pads go to the torch op; asymmetric ones are
  applied first, writing only the border cells and the input (`layout._ConstantPad`).
  Average pooling with `'same'` excludes padded cells from the mean.

The Keras 1 names and keywords from the Keras 1 documentation are accepted too:
`deconv2d`, `asymmetric_temporal_padding`, `asymmetric_spatial_2d_padding`, and the
keywords `border_mode` (for `padding`) and `dim_ordering` (`'th'`, `'tf'` or `'default'`, for
`data_format`) where the Keras 1 signature had them. Kernels always use the Keras 2 layouts.
"""
from .bias import *  # noqa: F401,F403  (each module lists its ops in __all__)
from .convolution import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from . import bias, convolution, padding, pooling

__all__ = sorted(bias.__all__ + convolution.__all__ + padding.__all__ + pooling.__all__)
