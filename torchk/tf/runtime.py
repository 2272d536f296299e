"""TF's runtime surface on torch: devices (`tf.config`, `tf.device`), `tf.print`,
`tf.TensorShape`, `tf.errors`, `tf.debugging` and `tf.test`'s GPU queries.

Devices map onto torchk's one device (`torchk.config.device()`): `tf.config` lists torch's
CPU and CUDA devices (one logical device per physical one, or several logical CPUs, all
computing on the CPU, after `set_logical_device_configuration` splits it), `set_visible_devices([], 'GPU')`
moves torchk to the CPU and a list of GPUs to the first of them; memory growth is what
torch's caching allocator does anyway, so `set_memory_growth` does nothing; a logical
device's `memory_limit` caps what torch's allocator takes of that GPU
(`set_per_process_memory_fraction`); `get_memory_info` reads torch's allocator (0 on the CPU,
as TF). `tf.device(...)` is a context that changes nothing: every tensor lives on torchk's
device, whatever soft device placement says.
"""
import contextlib
import sys

import numpy as np
import torch

from .. import config as torchk_config
from .. import graph, strings
from . import tracing
from .namespaces import Namespace
from .op_errors import (DataLossError, InvalidArgumentError, NotFoundError, OpError,
                        OutOfRangeError, ResourceExhaustedError, UnimplementedError)


class _Device:
    """A device of `tf.config`, named `<prefix><type>:<index>`, equal to those of its name."""

    _prefix = ''

    def __init__(self, device_type, index):
        self.device_type = device_type
        self.name = '%s%s:%d' % (self._prefix, device_type, index)

    def __eq__(self, other):
        return type(other) is type(self) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return '%s(name=%r, device_type=%r)' % (type(self).__name__, self.name,
                                                 self.device_type)


class PhysicalDevice(_Device):
    """A device as `tf.config.list_physical_devices` lists it.

    # Attributes
        name: TF's name, e.g. `'/physical_device:GPU:0'`.
        device_type: `'CPU'` or `'GPU'`.
        torch_device: the matching `torch.device`.
    """

    _prefix = '/physical_device:'

    def __init__(self, device_type, index):
        super().__init__(device_type, index)
        self.torch_device = torch.device('cpu' if device_type == 'CPU' else 'cuda:%d' % index)


class LogicalDevice(_Device):
    """A device as `tf.config.list_logical_devices` lists it (one per physical device).

    # Attributes
        name: TF's name, e.g. `'/device:GPU:0'`.
        device_type: `'CPU'` or `'GPU'`.
    """

    _prefix = '/device:'


class LogicalDeviceConfiguration:
    """A logical device's settings (`tf.config.LogicalDeviceConfiguration`).

    # Arguments
        memory_limit: the megabytes of GPU memory it may use, or None.
        experimental_priority, experimental_device_ordinal: accepted, unused.
    """

    def __init__(self, memory_limit=None, experimental_priority=None,
                 experimental_device_ordinal=None):
        self.memory_limit = memory_limit
        self.experimental_priority = experimental_priority
        self.experimental_device_ordinal = experimental_device_ordinal

    def __repr__(self):
        return ('LogicalDeviceConfiguration(memory_limit=%r, experimental_priority=%r, '
                'experimental_device_ordinal=%r)' % (
                    self.memory_limit, self.experimental_priority,
                    self.experimental_device_ordinal))


def _check_device_type(device_type):
    if device_type not in (None, 'CPU', 'GPU'):
        raise ValueError('device_type must be None, "CPU" or "GPU"; got %r.' % (device_type,))


def list_physical_devices(device_type=None):
    """The CPU and torch's CUDA devices (`device_type` `'CPU'`, `'GPU'` or None for both)."""
    _check_device_type(device_type)
    devices = [PhysicalDevice('CPU', 0)]
    devices += [PhysicalDevice('GPU', i) for i in range(torch.cuda.device_count())]
    return [d for d in devices if device_type in (None, d.device_type)]


def get_visible_devices(device_type=None):
    """The devices torchk computes on: the CPU, and torchk's GPU if it uses one."""
    _check_device_type(device_type)
    current = torchk_config.device()
    devices = [PhysicalDevice('CPU', 0)]
    if current.type == 'cuda':
        devices.append(PhysicalDevice('GPU', current.index or 0))
    return [d for d in devices if device_type in (None, d.device_type)]


def set_visible_devices(devices, device_type=None):
    """Chooses torchk's device: no GPU among `devices` (for `device_type` `'GPU'` or None)
    selects the CPU, else the first GPU listed."""
    _check_device_type(device_type)
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    if device_type == 'CPU':
        return
    gpus = [d for d in devices if d.device_type == 'GPU']
    torchk_config.set_device(gpus[0].torch_device if gpus else 'cpu')


def _logical_cpus():
    """The number of logical CPU devices (`set_logical_device_configuration` on the CPU)."""
    return max(1, len(_logical_configurations.get(('CPU', 0)) or ()))


def list_logical_devices(device_type=None):
    """The logical devices: `'/device:CPU:0'` to `'/device:CPU:<n-1>'` for the CPU split in
    n by `set_logical_device_configuration` (all computing on the CPU), and one per GPU."""
    devices = []
    for physical in list_physical_devices(device_type):
        count = _logical_cpus() if physical.device_type == 'CPU' else 1
        index = int(physical.name.rsplit(':', 1)[1])
        devices += [LogicalDevice(physical.device_type, index + i) for i in range(count)]
    return devices


def _device(device):
    """(type, index) of a device given as a `PhysicalDevice`, a `LogicalDevice` or a name
    (`'GPU:0'`, `'/device:GPU:0'`, `'/physical_device:CPU:0'`).

    # Raises
        ValueError: for a device torch does not have (TF's message).
    """
    name = device.name if isinstance(device, (PhysicalDevice, LogicalDevice)) else str(device)
    parts = name.rsplit('/', 1)[-1].split(':')
    kind = parts[-2].upper() if len(parts) >= 2 else ''
    index = parts[-1]
    cpus = 1 if name.startswith('/physical_device:') else _logical_cpus()
    if kind not in ('CPU', 'GPU') or not index.isdigit() or (
            kind == 'CPU' and int(index) >= cpus) or (
            kind == 'GPU' and int(index) >= torch.cuda.device_count()):
        raise ValueError("No matching devices found for '%s'" % name)
    return kind, int(index)


def set_memory_growth(device, enable):
    """Does nothing: torch's caching allocator grows GPU memory as it is needed."""


def get_memory_growth(device):
    """True: torch allocates GPU memory as it is needed."""
    return True


_logical_configurations = {}


def set_logical_device_configuration(device, logical_devices):
    """Sets a device's `LogicalDeviceConfiguration`s. The CPU may be split in several
    logical devices, as TF does: `list_logical_devices` then lists `'/device:CPU:0'` to
    `'/device:CPU:<n-1>'`, which `tf.device` accepts; all of them compute on the CPU. A GPU
    takes one, whose `memory_limit` (megabytes) caps the memory torch's allocator takes of it.

    # Raises
        ValueError: for several logical devices on one GPU (TF's virtual GPUs: torchk
            computes on whole GPUs).
    """
    kind, index = _device(device)
    if kind == 'CPU':
        _logical_configurations[(kind, index)] = list(logical_devices)
        return
    if len(logical_devices) > 1:
        raise ValueError('tf.config.set_logical_device_configuration: %d logical devices on %s '
                         '(TF\'s virtual GPUs) are not provided by torchk, which computes '
                         'on whole GPUs; give one.' % (len(logical_devices),
                                                  getattr(device, 'name', device)))
    _logical_configurations[(kind, index)] = list(logical_devices)
    limit = logical_devices[0].memory_limit if logical_devices else None
    if kind == 'GPU':
        total = torch.cuda.get_device_properties(index).total_memory
        fraction = 1.0 if limit is None else min(1.0, limit * 2 ** 20 / total)
        torch.cuda.set_per_process_memory_fraction(fraction, index)


def get_logical_device_configuration(device):
    """The configurations `set_logical_device_configuration` set for `device`, or None."""
    return _logical_configurations.get(_device(device))


def get_memory_info(device):
    """`{'current': bytes, 'peak': bytes}` that torch's allocator holds on a GPU (0 and 0 on
    the CPU, as TF)."""
    kind, index = _device(device)
    if kind == 'CPU':
        return {'current': 0, 'peak': 0}
    return {'current': torch.cuda.memory_allocated(index),
            'peak': torch.cuda.max_memory_allocated(index)}


def get_memory_usage(device):
    """The bytes torch's allocator holds on `device` (TF's deprecated query)."""
    return get_memory_info(device)['current']


def reset_memory_stats(device):
    """Resets the `peak` of `get_memory_info` to the current use."""
    kind, index = _device(device)
    if kind == 'GPU':
        torch.cuda.reset_peak_memory_stats(index)


def get_device_details(device):
    """`{'device_name': ..., 'compute_capability': (major, minor)}` of a GPU, `{}` for the
    CPU, as TF."""
    kind, index = _device(device)
    if kind == 'CPU':
        return {}
    return {'device_name': torch.cuda.get_device_name(index),
            'compute_capability': torch.cuda.get_device_capability(index)}


_soft_placement = [True]


def set_soft_device_placement(enabled):
    """Records TF's soft placement setting (torchk places everything on its one device)."""
    _soft_placement[0] = bool(enabled)


def get_soft_device_placement():
    """The setting `set_soft_device_placement` recorded (True by default, as TF)."""
    return _soft_placement[0]


def nothing(*args, **kwargs):
    """Does nothing (a TF setting with no torch counterpart)."""


def _set_intra_op_threads(num_threads):
    if num_threads:
        torch.set_num_threads(int(num_threads))


def _set_inter_op_threads(num_threads):
    if num_threads:
        torch.set_num_interop_threads(int(num_threads))


# Grappler's options in the order TF reports them; all but `min_graph_nodes` are switches.
_OPTIMIZER_OPTIONS = (
    'layout_optimizer', 'constant_folding', 'shape_optimization', 'remapping',
    'arithmetic_optimization', 'dependency_optimization', 'loop_optimization',
    'function_optimization', 'debug_stripper', 'disable_model_pruning',
    'scoped_allocator_optimization', 'pin_to_host_optimization', 'implementation_selector',
    'auto_mixed_precision', 'disable_meta_optimizer', 'min_graph_nodes')
_optimizer_options = {'disable_model_pruning': False, 'disable_meta_optimizer': False}


def set_experimental_options(options):
    """Records TF's graph optimizer options (`tf.config.optimizer.set_experimental_options`):
    the given ones are updated, the others kept, unknown names ignored, as TF does.

    They change nothing in how torchk computes: its programs are torch's ops, not graphs that
    TF's optimizer (Grappler) rewrites, so constant folding or debug stripping do not happen
    (a `tf.debugging.check_numerics` stays checked).

    # Arguments
        options: a dict of option names to booleans (`min_graph_nodes`: an int).
    """
    for name, value in options.items():
        if name in _OPTIMIZER_OPTIONS:
            _optimizer_options[name] = int(value) if name == 'min_graph_nodes' else bool(value)


def get_experimental_options():
    """The options `set_experimental_options` recorded, with TF's two defaults
    (`disable_model_pruning` and `disable_meta_optimizer`, False), in TF's order."""
    return {name: _optimizer_options[name] for name in _OPTIMIZER_OPTIONS
            if name in _optimizer_options}


_DEVICES = {
    'list_physical_devices': list_physical_devices,
    'list_logical_devices': list_logical_devices,
    'get_visible_devices': get_visible_devices,
    'set_visible_devices': set_visible_devices,
    'set_logical_device_configuration': set_logical_device_configuration,
    'get_logical_device_configuration': get_logical_device_configuration,
}

config = Namespace('tf.config', dict(
    _DEVICES,
    experimental=Namespace('tf.config.experimental', dict(
        {name: value for name, value in _DEVICES.items() if 'logical_device_config' not in name},
        set_memory_growth=set_memory_growth, get_memory_growth=get_memory_growth,
        set_virtual_device_configuration=set_logical_device_configuration,
        get_virtual_device_configuration=get_logical_device_configuration,
        get_memory_info=get_memory_info, get_memory_usage=get_memory_usage,
        reset_memory_stats=reset_memory_stats,
        get_device_details=get_device_details,
        VirtualDeviceConfiguration=LogicalDeviceConfiguration,
        enable_op_determinism=nothing,
        enable_tensor_float_32_execution=torchk_config.set_tf32_enabled,
        tensor_float_32_execution_enabled=torchk_config.tf32_enabled)),
    threading=Namespace('tf.config.threading', {
        'set_intra_op_parallelism_threads': _set_intra_op_threads,
        'set_inter_op_parallelism_threads': _set_inter_op_threads,
        'get_intra_op_parallelism_threads': torch.get_num_threads,
        'get_inter_op_parallelism_threads': torch.get_num_interop_threads}),
    optimizer=Namespace('tf.config.optimizer', {
        'set_jit': nothing, 'set_experimental_options': set_experimental_options,
        'get_experimental_options': get_experimental_options}),
    run_functions_eagerly=tracing.run_functions_eagerly,
    functions_run_eagerly=tracing.functions_run_eagerly,
    set_soft_device_placement=set_soft_device_placement,
    get_soft_device_placement=get_soft_device_placement,
    LogicalDeviceConfiguration=LogicalDeviceConfiguration,
    LogicalDevice=LogicalDevice,
    PhysicalDevice=PhysicalDevice,
))


@contextlib.contextmanager
def device(device_name):
    """A context that changes nothing: torchk computes on its one device (`torchk.config`)."""
    yield


def executing_eagerly():
    """True, except while a `tf.function` (or a step of `fit`) is being recorded."""
    return tracing.current() is None


def is_tensor(x):
    """True for torch tensors (variables included) and string tensors."""
    return isinstance(x, (torch.Tensor, strings.StringTensor))


def _numpy(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def tf_print(*inputs, output_stream=None, summarize=3, sep=' ', end='\n', name=None):
    """Prints tensors as numpy arrays (and other values as `print` does), to stderr by
    default, as `tf.print`; `summarize` elements are shown at each end of long axes."""
    if output_stream is None or output_stream == 'sys.stderr':
        stream = sys.stderr
    elif output_stream == 'sys.stdout':
        stream = sys.stdout
    else:
        stream = output_stream
    texts = []
    for value in inputs:
        value = _numpy(value)
        if isinstance(value, np.ndarray):
            texts.append(np.array2string(value, edgeitems=summarize, threshold=2 * summarize))
        else:
            texts.append(str(value))
    print(*texts, sep=sep, end=end, file=stream)


class TensorShape:
    """A shape (`tf.TensorShape`): dimensions as ints or None.

    # Arguments
        dims: an iterable of ints and None, or None (unknown rank).
    """

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims.dims
        self.dims = None if dims is None else [None if d is None else int(d) for d in dims]

    @property
    def rank(self):
        return None if self.dims is None else len(self.dims)

    ndims = rank

    def as_list(self):
        if self.dims is None:
            raise ValueError('as_list() is not defined on an unknown TensorShape.')
        return list(self.dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self.dims, dtype=np.int64))

    def is_fully_defined(self):
        return self.dims is not None and None not in self.dims

    def concatenate(self, other):
        other = TensorShape(other)
        if self.dims is None or other.dims is None:
            return TensorShape(None)
        return TensorShape(self.dims + other.dims)

    def __len__(self):
        return self.rank

    def __iter__(self):
        return iter(self.dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(self.dims[key])
        return self.dims[key]

    def __eq__(self, other):
        try:
            other = TensorShape(other)
        except TypeError:
            return NotImplemented
        return self.dims == other.dims

    def __hash__(self):
        return hash(None if self.dims is None else tuple(self.dims))

    def __repr__(self):
        return 'TensorShape(%s)' % self.dims


errors = Namespace('tf.errors', {
    'OpError': OpError, 'InvalidArgumentError': InvalidArgumentError,
    'ResourceExhaustedError': ResourceExhaustedError, 'NotFoundError': NotFoundError,
    'OutOfRangeError': OutOfRangeError, 'UnimplementedError': UnimplementedError,
    'DataLossError': DataLossError})

@graph.op
def check_numerics(tensor, message, name=None):
    """`tensor`, after checking that it holds no NaN or infinity (`tf.debugging.check_numerics`).

    # Arguments
        tensor: a floating point tensor.
        message: the start of the error's message.

    # Raises
        InvalidArgumentError: for a tensor that is not floating point, or holds a NaN or an
            infinity (when it is computed, in a `tf.function`).
    """
    if not tensor.is_floating_point():
        raise InvalidArgumentError('tf.debugging.check_numerics: a %s tensor; it checks '
                                   'floating point tensors only.' % tensor.dtype)
    if tensor.device.type != 'meta':
        kinds = [kind for kind, found in (('Inf', torch.isinf), ('NaN', torch.isnan))
                 if bool(found(tensor).any())]
        if kinds:
            raise InvalidArgumentError('%s : Tensor had %s values' % (message,
                                                                      ' and '.join(kinds)))
    return tensor


debugging = Namespace('tf.debugging', {
    'check_numerics': check_numerics,
    'set_log_device_placement': nothing,
    'enable_check_numerics': nothing,
    'disable_check_numerics': nothing,
})


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """True if torch sees a CUDA device."""
    return torch.cuda.is_available()


def gpu_device_name():
    """`'/device:GPU:0'` if torch sees a CUDA device, else `''`."""
    return '/device:GPU:0' if torch.cuda.is_available() else ''


test = Namespace('tf.test', {
    'is_gpu_available': is_gpu_available,
    'gpu_device_name': gpu_device_name,
    'is_built_with_cuda': lambda: torch.version.cuda is not None,
    'is_built_with_gpu_support': lambda: torch.version.cuda is not None,
})
