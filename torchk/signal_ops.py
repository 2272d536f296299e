"""Signal ops of `tf.signal`: Fourier transforms over the innermost axis, framing, windows
and the short-time Fourier transform, with TF's names, arguments and conventions.

The transforms are backend ops (`graph.op`): they run at once on tensors and record on Keras
symbols. Real transforms take float32 (float64) signals and give complex64 (complex128)
spectra, as TF does. `torchk.op_table` maps the `signal.*` keys to them.
"""
import math

import torch
import torch.nn.functional as F

from . import config
from . import tf_dtypes as dtypes
from .graph import op


def _length(fft_length, argument='fft_length'):
    """TF's `fft_length` (an int, a one-element list or tensor) as an int, or None."""
    if fft_length is None:
        return None
    if isinstance(fft_length, torch.Tensor):
        fft_length = fft_length.reshape(-1).tolist()
    if isinstance(fft_length, (list, tuple)):
        if len(fft_length) != 1:
            raise ValueError('tf.signal: %s must hold one length; got %s.'
                             % (argument, list(fft_length)))
        fft_length = fft_length[0]
    return int(fft_length)


def _real(signal, name):
    if signal.is_complex():
        raise TypeError('tf.signal.%s takes a real signal; got %s.' % (name, signal.dtype))
    if not signal.is_floating_point():
        raise TypeError('tf.signal.%s takes float32 or float64 signals; got %s.'
                        % (name, signal.dtype))
    return signal


@op
def rfft(input_tensor, fft_length=None):
    """The discrete Fourier transform of a real signal over its innermost axis.

    # Arguments
        input_tensor: a float tensor.
        fft_length: the transform's length (an int or `[length]`); the signal is cropped or
            zero-padded to it. Default: the innermost axis' size.

    # Returns
        A complex tensor whose innermost axis has `fft_length // 2 + 1` entries.
    """
    return torch.fft.rfft(_real(input_tensor, 'rfft'), n=_length(fft_length))


@op
def irfft(input_tensor, fft_length=None):
    """The real signal whose `rfft` is `input_tensor` (innermost axis).

    # Arguments
        input_tensor: a complex tensor.
        fft_length: the output's length (an int or `[length]`). Default:
            `2 * (inner - 1)`, with `inner` the innermost axis' size.

    # Returns
        A float tensor of `fft_length` samples on its innermost axis.
    """
    return torch.fft.irfft(input_tensor, n=_length(fft_length))


@op
def fft(input):  # noqa: A002  (TF's argument name)
    """The discrete Fourier transform of a complex tensor over its innermost axis."""
    return torch.fft.fft(input)


@op
def ifft(input):  # noqa: A002
    """The inverse discrete Fourier transform over the innermost axis."""
    return torch.fft.ifft(input)


@op
def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1):
    """Splits `axis` of `signal` into overlapping frames.

    # Arguments
        signal: a tensor.
        frame_length: samples per frame.
        frame_step: samples between the starts of consecutive frames.
        pad_end: whether to pad the end with `pad_value` so that every sample starts or is in
            a frame (`ceil(samples / frame_step)` frames); otherwise only whole frames are
            kept.
        pad_value: the padding value.
        axis: the axis to frame.

    # Returns
        `signal` with `axis` replaced by two axes, `(frames, frame_length)`.
    """
    frame_length, frame_step = int(frame_length), int(frame_step)
    axis = axis % signal.dim()
    samples = signal.shape[axis]
    if pad_end:
        frames = -(-samples // frame_step)
        padding = max(0, (frames - 1) * frame_step + frame_length - samples)
        if padding:
            moved = signal.movedim(axis, -1)
            moved = F.pad(moved, (0, padding), value=float(pad_value))
            signal = moved.movedim(-1, axis)
    elif samples < frame_length:
        shape = list(signal.shape)
        shape[axis:axis + 1] = [0, frame_length]
        return signal.new_zeros(shape)
    return signal.unfold(axis, frame_length, frame_step).movedim(-1, axis + 1)


def _window(window_length, periodic, dtype, cosines):
    """A generalized cosine window: `sum(c[k] * cos(2 pi k n / N))`, `N` the length less
    one, or the length for a periodic window of even length (TF's convention: `periodic`
    changes nothing for odd lengths)."""
    window_length = int(window_length)
    dtype = dtypes.torch_dtype(dtype)
    if window_length == 1:
        return torch.ones(1, dtype=dtype, device=config.device())
    denominator = window_length - 1 + (1 if periodic and window_length % 2 == 0 else 0)
    n = torch.arange(window_length, dtype=torch.float64)
    window = sum(c * torch.cos(2 * math.pi * k * n / denominator)
                 for k, c in enumerate(cosines))
    return window.to(device=config.device(), dtype=dtype)


def hann_window(window_length, periodic=True, dtype='float32'):
    """A Hann window of `window_length` samples (`periodic`: for spectral analysis)."""
    return _window(window_length, periodic, dtype, (0.5, -0.5))


def hamming_window(window_length, periodic=True, dtype='float32'):
    """A Hamming window of `window_length` samples (`periodic`: for spectral analysis)."""
    return _window(window_length, periodic, dtype, (0.54, -0.46))


@op
def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False):
    """The short-time Fourier transform of real signals (innermost axis).

    # Arguments
        signals: a float tensor of samples.
        frame_length: samples per frame.
        frame_step: samples between frames.
        fft_length: each frame's transform length; default: the smallest power of 2 holding
            `frame_length`.
        window_fn: a function `(length, dtype=...)` giving the window each frame is multiplied
            by (default a periodic Hann window), or None for none.
        pad_end: whether to zero-pad the end so that every sample is in a frame.

    # Returns
        A complex tensor `(..., frames, fft_length // 2 + 1)`.
    """
    signals = _real(signals, 'stft')
    frame_length = int(frame_length)
    if fft_length is None:
        fft_length = 1 << max(0, math.ceil(math.log2(frame_length)))
    frames = frame(signals, frame_length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        window = window_fn(frame_length, dtype=signals.dtype)
        frames = frames * torch.as_tensor(window, dtype=signals.dtype, device=signals.device)
    return torch.fft.rfft(frames, n=_length(fft_length))
