"""`DistributedOptimizer`: Keras optimizers whose gradients are averaged over all processes.

The averaging is one lazy op in the compiled training program: the gradients are flattened
into a few buckets (one per dtype and `bucket_bytes`), each bucket is all-reduced
asynchronously, and the op waits for all of them before unflattening. Keras' `clipnorm` and
`clipvalue` then apply to the averaged gradients, so every process clips the same values.
"""
import copy

import keras
import torch
import torch.distributed as dist
from keras import backend as K

from .. import graph
from . import runtime

DEFAULT_BUCKET_BYTES = 25 * 2 ** 20


class _NoCompression:
    """Gradients travel in their own dtype."""

    @staticmethod
    def compress(tensor):
        return tensor

    @staticmethod
    def decompress(tensor, dtype):
        return tensor


class _FP16Compression:
    """Floating gradients travel as float16 (half the bytes) and come back in their dtype."""

    @staticmethod
    def compress(tensor):
        return tensor.half() if tensor.is_floating_point() else tensor

    @staticmethod
    def decompress(tensor, dtype):
        return tensor.to(dtype)


class Compression:
    """Gradient compression for `DistributedOptimizer`, as `horovod.keras.Compression`:
    `Compression.none` or `Compression.fp16`."""
    none = _NoCompression
    fp16 = _FP16Compression


def bucket_plan(grads, bucket_bytes):
    """Groups gradient indices into buckets of one dtype and device, each up to
    `bucket_bytes` (a larger gradient is a bucket of its own), in gradient order."""
    buckets, open_buckets = [], {}
    for i, g in enumerate(grads):
        key = (g.dtype, g.device)
        nbytes = g.numel() * g.element_size()
        current = open_buckets.get(key)
        if current is None or current[1] + nbytes > bucket_bytes:
            current = open_buckets[key] = [[], 0]
            buckets.append(current[0])
        current[0].append(i)
        current[1] += nbytes
    return buckets


@graph.op
def average_gradients(grads, compression=Compression.none, bucket_bytes=DEFAULT_BUCKET_BYTES,
                      average=True):
    """Averages (or with `average=False` sums) the tensors `grads` over all processes, one
    all-reduce per bucket.

    Sparse gradients are made dense first. Lazy on Keras symbols (one node for the whole
    list); while static shapes are inferred it communicates nothing.

    # Raises
        RuntimeError: if a collective fails, typically because another process stopped or
            the process group's timeout expired; the torch error is chained.
    """
    if graph.inferring():
        return list(grads)
    grads = [g.to_dense() if g.is_sparse else g for g in grads]
    world = runtime.size()
    pending = []
    for bucket in bucket_plan(grads, bucket_bytes):
        flat = torch.cat([grads[i].reshape(-1) for i in bucket])
        if average:
            flat.div_(world)
        wire = compression.compress(flat)
        pending.append((bucket, flat.dtype, wire, dist.all_reduce(wire, async_op=True)))
    averaged = list(grads)
    for bucket, dtype, wire, handle in pending:
        try:
            handle.wait()
        except RuntimeError as e:
            raise RuntimeError('torchk.distributed: averaging gradients failed on rank %d of '
                               '%d. Another process has probably stopped (see its error) or '
                               'the timeout expired.' % (runtime.rank(), world)) from e
        flat = compression.decompress(wire, dtype)
        for i, part in zip(bucket, flat.split([grads[i].numel() for i in bucket])):
            averaged[i] = part.view(grads[i].shape)
    return averaged


def _get_gradients(self, loss, params):
    """Keras' `Optimizer.get_gradients` with the gradients averaged over all processes
    before `clipnorm`/`clipvalue`."""
    grads = K.gradients(loss, params)
    if any(g is None for g in grads):
        raise ValueError('An operation has `None` for gradient. Please make sure that all of '
                         'your ops have a gradient defined (i.e. are differentiable). Common '
                         'ops without gradient: K.argmax, K.round, K.eval.')
    if runtime.size() > 1:
        grads = average_gradients(grads, self._torchk_compression, self._torchk_bucket_bytes)
    if getattr(self, 'clipnorm', 0) > 0:
        norm = K.sqrt(sum([K.sum(K.square(g)) for g in grads]))
        grads = [keras.optimizers.clip_norm(g, self.clipnorm, norm) for g in grads]
    if getattr(self, 'clipvalue', 0) > 0:
        grads = [K.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
    return grads


_classes = {}


def distributed_class(cls, compression=Compression.none, bucket_bytes=DEFAULT_BUCKET_BYTES):
    """A subclass of the optimizer class `cls`, of the same name (so saved models name the
    original class), whose `get_gradients` averages over all processes."""
    key = (cls, compression, bucket_bytes)
    if key not in _classes:
        _classes[key] = type(cls.__name__, (cls,), {
            'get_gradients': _get_gradients,
            '_torchk_compression': compression,
            '_torchk_bucket_bytes': bucket_bytes,
            '__module__': cls.__module__,
            '__doc__': cls.__doc__,
        })
    return _classes[key]


def DistributedOptimizer(optimizer, compression=Compression.none,
                         bucket_bytes=DEFAULT_BUCKET_BYTES):
    """Wraps a Keras optimizer so that gradients are averaged over all processes.

    Works for the built-in optimizers and for a user's own, as long as it gets its
    gradients through `self.get_gradients` (all built-in ones do). The optimizer is copied
    (sharing its variables); the original is left unchanged.

    # Arguments
        optimizer: a Keras optimizer instance.
        compression: `Compression.none`, or `Compression.fp16` to all-reduce floating
            gradients as float16.
        bucket_bytes: largest size of one all-reduce; gradients are packed in order.

    # Returns
        The distributed optimizer, for `model.compile(optimizer=...)`.

    # Raises
        TypeError: if `optimizer` is not a `keras.optimizers.Optimizer`.
    """
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError('DistributedOptimizer expects a keras.optimizers.Optimizer instance, '
                        'got %r.' % (optimizer,))
    base = type(optimizer)
    if base.get_gradients is _get_gradients:
        base = base.__mro__[1]
    wrapped = copy.copy(optimizer)
    wrapped.__class__ = distributed_class(base, compression, bucket_bytes)
    return wrapped


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """`keras.models.load_model` with the model's optimizer made distributed, before its
    saved state is restored.

    # Arguments
        filepath: the saved model.
        custom_optimizers: the user's own optimizer classes the model may use.
        custom_objects: as for `keras.models.load_model`.
        compression: as for `DistributedOptimizer`.
    """
    classes = [keras.optimizers.SGD, keras.optimizers.RMSprop, keras.optimizers.Adagrad,
               keras.optimizers.Adadelta, keras.optimizers.Adam, keras.optimizers.Adamax,
               keras.optimizers.Nadam]
    objects = {c.__name__.lower(): distributed_class(c, compression) for c in classes}
    objects.update({c.__name__: distributed_class(c, compression)
                    for c in custom_optimizers or ()})
    objects.update(custom_objects or {})
    return keras.models.load_model(filepath, custom_objects=objects)
