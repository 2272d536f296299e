"""The shape ops of `tf` on string tensors (`tf.expand_dims`, `tf.reshape`, `tf.concat`,
...), computed with numpy on the host text (`torchk/strings.py`): `torchk.tf.namespaces`
runs an op here when its first argument is text."""
import numpy as np
import torch

from .. import strings
from . import tracing
from .tensors import convert_to_tensor


def is_text(value):
    """Whether `value` is text (`torchk.strings.is_text`)."""
    return strings.is_text(value)


def as_text(result):
    """A numpy array of text as a `StringTensor`; anything else as it is."""
    if isinstance(result, np.ndarray) and result.dtype == object:
        return strings.StringTensor(result)
    return result


def numpy_numbers(values):
    """Numbers (a tensor, an array, a list) as a numpy array."""
    if hasattr(values, 'detach'):
        return values.detach().cpu().numpy()
    return np.asarray(values)


def _axis_values(values):
    return [strings.as_bytes(v, 'values') for v in values]


# The shape ops of `tf` on string tensors: by op table key, a numpy function of the host
# text and TF's other arguments.
HOST_OPS = {
    'identity': lambda input: input,
    'expand_dims': lambda input, axis: np.expand_dims(input, axis),
    'reshape': lambda tensor, shape: np.reshape(tensor, tuple(int(d) for d in shape)),
    'squeeze': lambda input, axis=None: np.squeeze(
        input, axis if not isinstance(axis, list) else tuple(axis)),
    'transpose': lambda a, perm=None, conjugate=False: np.transpose(a, perm),
    'tile': lambda input, multiples: np.tile(input, tuple(multiples)),
    'gather': lambda params, indices, axis=None, batch_dims=0: np.take(
        params, numpy_numbers(indices), axis=axis or 0),
    'concat': lambda values, axis: np.concatenate(_axis_values(values), axis=axis),
    'stack': lambda values, axis=0: np.stack(_axis_values(values), axis=axis),
    'boolean_mask': lambda tensor, mask, axis=None: tensor[numpy_numbers(mask).astype(bool)],
    'shape': lambda input, out_type='int32': convert_to_tensor(
        np.array(input.shape, dtype=str(out_type))),
    'size': lambda input, out_type='int32': convert_to_tensor(
        np.array(input.size, dtype=str(out_type))),
    'rank': lambda input: convert_to_tensor(np.array(input.ndim, dtype='int32')),
    'math.equal': lambda x, y: convert_to_tensor(np.equal(x, strings.as_bytes(y, 'y'))),
    'math.not_equal': lambda x, y: convert_to_tensor(np.not_equal(x, strings.as_bytes(y, 'y'))),
}


def host_op(key, args, kwargs):
    """Computes the op `key` of the table on string tensors (`HOST_OPS`), or returns
    NotImplemented if its first argument is not text or the op has no host form."""
    first = args[0] if args else None
    if key not in HOST_OPS or first is None:
        return NotImplemented
    listed = key in ('concat', 'stack')
    if not strings.is_text(first[0] if listed and isinstance(first, (list, tuple)) and first
                           else first):
        return NotImplemented
    if _reads_traced_numbers(args, kwargs):
        raise TypeError('tf.%s on text with tensor arguments cannot be saved: text stays on '
                        'the host, and a saved tf.function is a torch program, whose tensors '
                        'the host cannot read while it is traced.' % key)
    if not listed:
        args = (strings.as_bytes(first, 'input'),) + tuple(args[1:])
    return as_text(HOST_OPS[key](*args, **kwargs))


def _reads_traced_numbers(args, kwargs):
    """Whether a host op would read a tensor of a `tf.function` being traced for saving."""
    return tracing.capturing() and any(
        isinstance(value, torch.Tensor) for value in list(args[1:]) + list(kwargs.values()))
