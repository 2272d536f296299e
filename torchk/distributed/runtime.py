"""The process group: `init` from torchrun's environment, ranks, and collectives on values.

A process started without torchrun (no `WORLD_SIZE`, or a `WORLD_SIZE` of 1) is a world of
one: no process group is created and every collective returns its input.
"""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist

from .. import config

_state = {'initialized': False, 'owns_group': False, 'rank': 0, 'size': 1}


def init(timeout_seconds=None):
    """Joins the processes started by `torchrun` (`RANK`, `WORLD_SIZE`, `MASTER_ADDR`, ...).

    Uses NCCL when torchk's device is CUDA (pinned to `cuda:<local_rank>`, before any
    variable is created) and gloo on the CPU. Without torchrun the process is a world of one.
    A process group made by the caller beforehand is adopted as it is.

    # Arguments
        timeout_seconds: how long a collective waits for the other processes before it
            fails (default: `TORCHK_DIST_TIMEOUT` seconds, else torch's default). A process
            that died makes the others fail at their next collective instead of waiting.
    """
    world = int(os.environ.get('WORLD_SIZE', '1'))
    if dist.is_available() and dist.is_initialized():
        _state.update(rank=dist.get_rank(), size=dist.get_world_size())
    elif world > 1:
        if config.device().type == 'cuda':
            device = torch.device('cuda', local_rank_from_env())
            torch.cuda.set_device(device)
            config.set_device(device)
        backend = 'nccl' if config.device().type == 'cuda' else 'gloo'
        timeout_seconds = timeout_seconds or os.environ.get('TORCHK_DIST_TIMEOUT')
        kwargs = {}
        if timeout_seconds:
            kwargs['timeout'] = datetime.timedelta(seconds=float(timeout_seconds))
        dist.init_process_group(backend, **kwargs)
        _state.update(owns_group=True, rank=dist.get_rank(), size=dist.get_world_size())
    _state['initialized'] = True


def local_rank_from_env():
    return int(os.environ.get('LOCAL_RANK', '0'))


def is_initialized():
    """True once `init()` has been called (and `shutdown()` has not)."""
    return _state['initialized']


def _check_initialized(name):
    if not _state['initialized']:
        raise ValueError('torchk.distributed.%s() needs torchk.distributed.init() to be called '
                         'first.' % name)


def rank():
    """The index of this process among all processes, from 0."""
    _check_initialized('rank')
    return _state['rank']


def size():
    """The number of processes."""
    _check_initialized('size')
    return _state['size']


def local_rank():
    """The index of this process on its machine (torchrun's `LOCAL_RANK`)."""
    _check_initialized('local_rank')
    return local_rank_from_env() if _state['size'] > 1 else 0


def local_size():
    """The number of processes on this machine (torchrun's `LOCAL_WORLD_SIZE`)."""
    _check_initialized('local_size')
    return int(os.environ.get('LOCAL_WORLD_SIZE', '1')) if _state['size'] > 1 else 1


def shutdown():
    """Leaves the process group made by `init()`."""
    if _state['owns_group'] and dist.is_initialized():
        dist.destroy_process_group()
    _state.update(initialized=False, owns_group=False, rank=0, size=1)


def communication_device():
    """Where collectives run: torchk's device for NCCL, the CPU for gloo."""
    return config.device() if dist.get_backend() == 'nccl' else torch.device('cpu')


def _as_tensor(value):
    """`value` as a tensor on the communication device, and a function giving the result
    back in `value`'s kind (numpy array, tensor on its device, or Python number)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to(communication_device()), lambda t: t.to(value.device)
    array = np.asarray(value)
    return (torch.as_tensor(array).to(communication_device()),
            lambda t: t.cpu().numpy().reshape(array.shape))


def allreduce(value, average=True, name=None):
    """Sums (or averages) `value` over all processes.

    # Arguments
        value: numpy array, Python number or torch tensor, of the same shape on every rank.
        average: divide the sum by `size()`.
        name: unused; accepted for Horovod compatibility.

    # Returns
        The result, of `value`'s kind (a numpy array for numpy input or a number).
    """
    _check_initialized('allreduce')
    if _state['size'] == 1:
        return value
    tensor, restore = _as_tensor(value)
    if average and not tensor.is_floating_point():
        tensor = tensor.double()
    tensor = tensor.clone()
    dist.all_reduce(tensor)
    if average:
        tensor /= _state['size']
    return restore(tensor)


def broadcast(value, root_rank, name=None):
    """Returns `root_rank`'s `value` on every process (same shape and dtype everywhere)."""
    _check_initialized('broadcast')
    if _state['size'] == 1:
        return value
    tensor, restore = _as_tensor(value)
    tensor = tensor.clone()
    dist.broadcast(tensor, root_rank)
    return restore(tensor)


def allgather(value, name=None):
    """Concatenates every process' `value` along the first axis, in rank order.

    The first dimension may differ between processes; the others must agree.
    """
    _check_initialized('allgather')
    if _state['size'] == 1:
        return value
    tensor, restore = _as_tensor(value)
    tensor = tensor.reshape((-1,) + tuple(tensor.shape[1:])) if tensor.ndim else tensor[None]
    lengths = [torch.zeros(1, dtype=torch.int64, device=tensor.device)
               for _ in range(_state['size'])]
    dist.all_gather(lengths, torch.tensor([tensor.shape[0]], device=tensor.device))
    longest = int(max(lengths).item())
    padded = torch.zeros((longest,) + tuple(tensor.shape[1:]), dtype=tensor.dtype,
                         device=tensor.device)
    padded[:tensor.shape[0]] = tensor
    parts = [torch.empty_like(padded) for _ in range(_state['size'])]
    dist.all_gather(parts, padded)
    gathered = torch.cat([p[:int(n.item())] for p, n in zip(parts, lengths)])
    if isinstance(value, torch.Tensor):
        return gathered.to(value.device)
    return gathered.cpu().numpy()


def broadcast_variables(variables, root_rank):
    """Sets `variables` (Keras variables) to their values on `root_rank`, in one collective
    per dtype: use it before training in a custom loop,
    e.g. `broadcast_variables(model.weights + model.optimizer.weights, 0)`."""
    _check_initialized('broadcast_variables')
    if _state['size'] == 1:
        return
    device = communication_device()
    by_dtype = {}
    for v in variables:
        by_dtype.setdefault(v.dtype, []).append(v)
    for group in by_dtype.values():
        flat = torch.cat([v.detach().reshape(-1).to(device) for v in group])
        dist.broadcast(flat, root_rank)
        with torch.no_grad():
            for v, part in zip(group, flat.split([v.numel() for v in group])):
                v.copy_(part.reshape(v.shape))
