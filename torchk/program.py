"""Compiles recorded nodes into a straight-line Python function, once per `K.function`.

The program is generated source code, one line per node (`v3 = f3(v1, c0, axis=1)`), in
topological order, executed by `exec` once. A call then runs plain Python: no graph walk, no
dispatch. The order of a call follows Keras' contract (docs/KERAS_BACKEND.md §3):
1. every output not flagged `_is_metric`, and every update's new value, from the state
   before the call;
2. all updates written together;
3. the `_is_metric` outputs, recomputing only what depends on an updated variable.

Nodes that feed a gradient run with autograd recording; everything else runs under
`torch.no_grad()`.
"""
import inspect
import operator

import torch

from . import graph
from . import math_ops
from . import nn_ops
from . import variables as _variables

GRADIENTS = 'gradients'
# Functions (as nodes hold them) whose result is always a new tensor, never a view of an
# argument or an argument itself.
FRESH_RESULTS = frozenset([
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.pow, operator.neg, operator.matmul, math_ops._linear] + [inspect.unwrap(op) for op in (
        math_ops.sum, math_ops.mean, math_ops.dot, math_ops.square, math_ops.sqrt,
        math_ops.exp, math_ops.log, math_ops.pow, math_ops.maximum, math_ops.minimum,
        nn_ops.categorical_crossentropy, nn_ops.sparse_categorical_crossentropy,
        nn_ops.binary_crossentropy, nn_ops.softmax, nn_ops.sigmoid, nn_ops.tanh,
        nn_ops.relu)])


def _storage_pointers(variables):
    return {v.untyped_storage().data_ptr() for v in variables}


def _unaliased(value, pointers):
    """`value`, copied if it shares memory with a variable about to be updated in place
    (`pointers` are those variables' storages)."""
    if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in pointers:
        return value.clone()
    return value


def _plain(variable):
    """The variable as a plain tensor: inside a program, Python operators must be torch's."""
    return variable.as_subclass(torch.Tensor)


def ancestors(targets, stop):
    """Nodes needed for `targets`, in topological order (iterative: graphs can be deep).

    `stop` holds ids of symbols whose value is given (feeds): their ancestors are not needed.
    Returns (nodes in order, leaf symbols reached).
    """
    order, leaves, state = [], {}, {}
    stack = [(s, False) for s in reversed(targets) if graph.is_symbol(s)]
    while stack:
        symbol, expanded = stack.pop()
        if id(symbol) in stop:
            continue
        node = getattr(symbol, 'node', None)
        if not isinstance(symbol, graph.KerasTensor) or node is None:
            leaves[id(symbol)] = symbol
            continue
        key = id(node)
        if expanded:
            if state.get(key) != 'done':
                state[key] = 'done'
                order.append(node)
            continue
        if key in state:
            continue
        state[key] = 'open'
        stack.append((symbol, True))
        for item in reversed(node.inputs):
            if id(item) in stop:
                continue
            inner = getattr(item, 'node', None)
            if isinstance(item, graph.KerasTensor) and inner is not None and id(inner) in state:
                continue
            stack.append((item, False))
    return order, list(leaves.values())


def single_results(nodes, targets):
    """`{node id: its result symbol}` for the nodes of `nodes` with a single tensor result
    that a node of `nodes` or one of `targets` reads."""
    found = {}
    for item in [i for node in nodes for i in node.inputs] + list(targets):
        if isinstance(item, graph.KerasTensor) and item.node is not None and item.path == ():
            found[id(item.node)] = item
    return found


class Rewrite:
    """A rewrite of the graph behind a program's targets, made on a copy: the recorded graph,
    which Keras keeps building on, is never modified.

    A pass visits the nodes in topological order and, for each, either gives its result a
    replacement (`replace_value`, `replace_node`) or calls `copy`, which copies the node with
    its arguments replaced when one of its inputs was. `symbol` then says what stands for
    any symbol; `targets` maps the targets.
    """

    def __init__(self, fed=()):
        self._fed = {id(s) for s in fed}
        self._symbols = {}
        self._values = {}
        self._nodes = {}

    def replace_symbol(self, symbol, value):
        """Makes `value` stand for `symbol` (a placeholder or a variable)."""
        self._symbols[id(symbol)] = value

    def replace_value(self, node, value):
        """Makes `value` (structured like the node's result) stand for `node`'s result."""
        self._values[id(node)] = value

    def replace_node(self, node, replacement):
        """Makes the results of the node `replacement` stand for those of `node`."""
        self._nodes[id(node)] = replacement

    def changed(self, node):
        """True if one of `node`'s inputs has a replacement."""
        return any(self.symbol(item) is not item for item in node.inputs)

    def arguments(self, node):
        """`node`'s (args, kwargs) with every symbol replaced."""
        return (graph._map_structure(self.symbol, node.args),
                graph._map_structure(self.symbol, node.kwargs))

    def copy(self, node):
        """Copies `node` with its arguments replaced, if one of its inputs was."""
        if self.changed(node):
            args, kwargs = self.arguments(node)
            self.replace_node(node, graph.Node(node.fn, args, kwargs,
                                               graph._symbols_in((args, kwargs)), node.kind))

    def symbol(self, item):
        """What stands for `item` (itself when nothing replaces it)."""
        if not graph.is_symbol(item) or id(item) in self._fed:
            return item
        if id(item) in self._symbols:
            return self._symbols[id(item)]
        node = getattr(item, 'node', None)
        if not isinstance(item, graph.KerasTensor) or node is None:
            return item
        if id(node) in self._values:
            found = self._values[id(node)]
            for index in item.path:
                found = found[index]
        elif id(node) in self._nodes:
            found = graph.KerasTensor(self._nodes[id(node)], item.path, item._static_shape,
                                      item._torch_dtype, item._examples, item.name)
        else:
            return item
        self._symbols[id(item)] = found
        return found

    def targets(self, targets):
        """`targets` (symbols or constants) with every symbol replaced."""
        return [self.symbol(t) for t in targets]


def substitute(targets, replacements):
    """`targets` (symbols or constants) as computed with other values in place of some
    symbols: the nodes between are copied, the recorded graph is left as it is.

    # Arguments
        targets: a list of symbols or constants.
        replacements: `(symbol, value)` pairs: a placeholder or variable, and what stands
            for it.

    # Returns
        A list like `targets`.
    """
    rewrite = Rewrite()
    for symbol, value in replacements:
        rewrite.replace_symbol(symbol, value)
    nodes, _ = ancestors(targets, stop=set())
    for node in nodes:
        rewrite.copy(node)
    return rewrite.targets(targets)


class _Source(str):
    """Python source standing for an argument as it is."""


class _Emitter:
    """Turns nodes into lines of source, naming every value it refers to."""

    def __init__(self):
        self.globals = {'_plain': _plain, '_unaliased': _unaliased,
                        '_storage_pointers': _storage_pointers, 'torch': torch,
                        '_host_scalar': _variables.host_scalar}
        self.lines = []
        self.names = {}
        self.lazy = {}
        self._constants = {}
        self._count = 0

    def constant(self, value):
        key = id(value)
        if key not in self._constants:
            name = 'c%d' % len(self._constants)
            self._constants[key] = name
            self.globals[name] = value
        return self._constants[key]

    def expression(self, value):
        if isinstance(value, _Source):
            return value
        if graph.is_symbol(value):
            if id(value) in self.names:
                return self.names[id(value)]
            if id(value) in self.lazy:
                return '_plain(%s)' % self.constant(value)
            node = getattr(value, 'node', None)
            base = self.names[id(node)]
            return base + ''.join('[%d]' % i for i in value.path)
        if isinstance(value, list):
            return '[%s]' % ', '.join(self.expression(v) for v in value)
        if isinstance(value, tuple):
            return '(%s)' % ''.join(self.expression(v) + ', ' for v in value)
        if isinstance(value, dict):
            return '{%s}' % ', '.join('%r: %s' % (k, self.expression(v)) for k, v in value.items())
        if isinstance(value, slice):
            return 'slice(%s, %s, %s)' % tuple(
                self.expression(v) for v in (value.start, value.stop, value.step))
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float) and value == value and abs(value) != float('inf'):
            return repr(value)
        return self.constant(value)

    def split(self, node, indent, group, index):
        """Names `node` part `index` of its group's `torch.split`, emitted once."""
        source, sizes = group
        if id(group) not in self.names:
            name = 's%d' % self._count
            self._count += 1
            self.lines.append('%s%s = torch.split(%s, %r, dim=-1)'
                              % (indent, name, self.expression(source), sizes))
            self.names[id(group)] = name
        self.names[id(node)] = '%s[%d]' % (self.names[id(group)], index)

    def call(self, node, indent, extra_kwargs='', into=None, host=None):
        """Emits `node`; `into` is `(torch function, args, destination)` from the fusion
        pass, emitted as `function(*args, out=destination)`; `host` is the node's host form
        from the host scalars pass, whose variable arguments are read on the host."""
        name = 'v%d' % self._count
        self._count += 1
        fn = self.constant(node.fn if into is None else into[0])
        node_args, node_kwargs = node.args, node.kwargs
        if getattr(node.fn, 'takes_variables', False):
            node_args, node_kwargs = graph._map_structure(self._variable_itself,
                                                          (node_args, node_kwargs))
        elif host is None:
            self.alias(node.inputs, indent)
        else:
            fn = self.constant(host)
            node_args, node_kwargs = graph._map_structure(self._host_read, (node_args,
                                                                             node_kwargs))
        args = ''.join(self.expression(a) + ', ' for a in (node_args if into is None
                                                            else into[1]))
        kwargs = ''.join('%s=%s, ' % (k, self.expression(v)) for k, v in node_kwargs.items())
        if into is not None:
            extra_kwargs = 'out=%s' % self.destination(into[2])
        self.lines.append('%s%s = %s(%s%s%s)' % (indent, name, fn, args, kwargs, extra_kwargs))
        self.names[id(node)] = name

    def alias(self, symbols, indent):
        """Emits, once, the plain tensor alias of each variable among `symbols` that is
        aliased lazily (see `lazy`): only variables a line reads as tensors get one."""
        for symbol in symbols:
            found = self.lazy.get(id(symbol))
            if found is not None and id(symbol) not in self.names:
                self.lines.append('%s%s = _plain(%s)' % (indent, found, self.constant(symbol)))
                self.names[id(symbol)] = found

    def _variable_itself(self, value):
        if graph.is_symbol(value) and not isinstance(value, graph.KerasTensor):
            return _Source(self.constant(value))
        return value

    def _host_read(self, value):
        if graph.is_symbol(value) and not isinstance(value, graph.KerasTensor):
            return _Source('_host_scalar(%s)' % self.constant(value))
        return value

    def destination(self, symbol):
        """The expression of memory to write into: an intermediate, or a variable as a plain
        tensor."""
        if id(symbol) in self.names or isinstance(symbol, graph.KerasTensor):
            return self.expression(symbol)
        return '_plain(%s)' % self.constant(symbol)


def _column_slice(node):
    """(source, start, stop) when `node` is `x[:, ..., start:stop]` on the last axis of an
    `x` whose last dimension is static, else None."""
    if node.fn is not graph.getitem or not isinstance(node.args[0], graph.KerasTensor):
        return None
    source, key = node.args
    shape = source._static_shape
    if not shape or shape[-1] is None or not isinstance(key, tuple) or len(key) != len(shape):
        return None
    if any(k != slice(None) for k in key[:-1]) or not isinstance(key[-1], slice):
        return None
    last = key[-1]
    if last.step is not None or not all(v is None or type(v) is int for v in (last.start,
                                                                                 last.stop)):
        return None
    start, stop, _ = last.indices(shape[-1])
    return (source, start, stop) if start < stop else None


def _column_splits(nodes):
    """Groups of disjoint column slices of one tensor, as `{node id: (group, index)}` with
    `group = (source, sizes)`: each group is computed by one `torch.split`, whose backward
    builds one gradient for the source instead of one zero-filled gradient per slice (an
    LSTM step slices its four gates from one product)."""
    by_source = {}
    for node in nodes:
        found = _column_slice(node)
        if found is not None:
            by_source.setdefault(id(found[0]), []).append((found, node))
    groups = {}
    for members in by_source.values():
        members.sort(key=lambda member: member[0][1])
        bounds = [(start, stop) for (_, start, stop), _ in members]
        if len(members) < 2 or any(a[1] > b[0] for a, b in zip(bounds, bounds[1:])):
            continue
        source = members[0][0][0]
        edges = sorted({0, source._static_shape[-1]} | {e for pair in bounds for e in pair})
        sizes = [b - a for a, b in zip(edges, edges[1:])]
        group = (source, sizes)
        for (_, start, _), node in members:
            groups[id(node)] = (group, edges.index(start))
    return groups


def unique_updates(updates):
    """(variable, new value) pairs; a variable updated twice keeps its first update."""
    seen, result = set(), []
    for variable, value in updates:
        if id(variable) not in seen:
            seen.add(id(variable))
            result.append((variable, value))
    return result


class _Unfused:
    """The plan of passes that do not run: no node replaced or computed on the host, no
    variable written."""

    def __init__(self):
        self.groups, self.reads, self.into, self.calls = [], [], {}, {}
        self.skipped, self.written = set(), set()

    def writes_variable(self, node):
        return False

    def hosted(self, symbol):
        return False


def compile_program(inputs, outputs, updates, metric_flags, update_passes=None, frozen=False,
                    variable_arguments=False, host_variables=True):
    """Builds the program of a `K.function`.

    # Arguments
        inputs: symbols whose values each call feeds, in order.
        outputs: symbols (or constants) to compute.
        updates: (variable, new value) pairs.
        metric_flags: for each output, True if it is computed after the updates.
        update_passes: None, or the passes that rewrite the program's nodes and updates,
            `(adam, host scalars, fusion)` (`function.UPDATE_PASSES`:
            `passes/adam_fusion.py`, `passes/host_scalars.py`, `passes/fusion.py`), each a
            module with a `plan` function; only for programs whose nodes outside gradients
            run with autograd off, as `K.function` runs them (the sub-programs of `rnn` and
            `KerasModule` run under their caller's autograd).
        frozen: read the variables through `torch.nn.Parameter` aliases made now (sharing
            their memory) instead of per-call aliases, so that `torch.compile` sees them as
            parameters it may freeze (`passes/compiled.py`); for programs without gradients.
        variable_arguments: take the variables it reads or updates as arguments (plain
            tensor aliases, after the feeds and placeholders, in the order of
            `program.variables`) instead of reading them from the program's globals, so that
            `torch.compile` sees them as graph inputs (`passes/compiled.py`).
        host_variables: let the host scalars pass read 0-d variables on the host (never in
            a program captured for replay).

    # Returns
        (program, placeholders): `program(*feeds, *placeholder_values)` returns the list of
        output values (`program.source` is its source, `program.computes_gradients` tells if
        it calls autograd, `program.variables` are the variables it reads); `placeholders` are the placeholders the outputs need that are not
        fed, whose values follow the feeds.
    """
    updates = unique_updates(updates)
    fed = {id(s): 'p%d' % i for i, s in enumerate(inputs)}
    first_targets = [o for o, m in zip(outputs, metric_flags) if not m]
    first_targets += [value for _, value in updates]
    metric_targets = [o for o, m in zip(outputs, metric_flags) if m]
    first_nodes, first_leaves = ancestors(first_targets, stop=fed)
    metric_nodes, metric_leaves = ancestors(metric_targets, stop=fed)

    leaves = {id(leaf): leaf for leaf in first_leaves + metric_leaves}
    variables = [s for s in leaves.values() if not isinstance(s, graph.KerasTensor)]
    if variable_arguments:
        variables += [v for v, _ in updates if id(v) not in leaves]
    placeholders = [s for s in leaves.values() if isinstance(s, graph.KerasTensor)]
    emitter = _Emitter()
    emitter.names.update(fed)
    emitter.names.update((id(s), 'l%d' % i) for i, s in enumerate(placeholders))
    if frozen or variable_arguments:
        emitter.names.update((id(s), 'w%d' % i) for i, s in enumerate(variables))
    else:
        # aliases made per call cost a few microseconds each: only for variables read
        emitter.lazy.update((id(s), 'w%d' % i) for i, s in enumerate(variables))

    grad_nodes = [n for n in first_nodes if n.kind == GRADIENTS]
    recorded = _needed_by_gradients(grad_nodes, fed)
    wrt_feeds = [fed[id(s)] for n in grad_nodes for s in n.args[1:] if id(s) in fed]
    for name in dict.fromkeys(wrt_feeds):
        emitter.lines.append('%s = %s.detach().requires_grad_()' % (name, name))
    indent = '    ' if recorded else ''
    if recorded:
        emitter.lines.append('with torch.enable_grad():')
    for i, variable in enumerate(variables):
        if frozen:
            emitter.lines.append('%sw%d = %s' % (indent, i, emitter.constant(
                torch.nn.Parameter(variable.detach(), requires_grad=False))))
    first_outputs = [o for o, m in zip(outputs, metric_flags) if not m and graph.is_symbol(o)]
    adam_pass, host_pass, fusion_pass = update_passes or (None, None, None)
    adam = (adam_pass.plan(first_nodes, recorded, metric_nodes, first_outputs, updates)
            if adam_pass else _Unfused())
    first_nodes = [n for n in first_nodes if id(n) not in adam.skipped]
    first_ids = {id(n) for n in first_nodes}
    host = (host_pass.plan(
        first_nodes + [n for n in metric_nodes if id(n) not in first_ids], recorded,
        [o for o in outputs if graph.is_symbol(o)],
        [(v, value) for v, value in updates if id(v) not in adam.written],
        [hyper[0] for hyper, _ in adam.groups],
        variables_on_host=host_variables and not frozen and not variable_arguments)
            if host_pass else _Unfused())
    recorded_splits = _column_splits([n for n in first_nodes if id(n) in recorded])
    for node in first_nodes:
        if id(node) in recorded_splits:
            emitter.split(node, indent, *recorded_splits[id(node)])
        elif id(node) in recorded:
            second_order = node.kind == GRADIENTS
            emitter.call(node, indent,
                         'create_graph=True' if second_order else '',
                         host=host.calls.get(id(node)))
    device_nodes = [n for n in first_nodes if id(n) not in host.calls]
    fused = (fusion_pass.plan(device_nodes, recorded, metric_nodes, first_outputs + adam.reads,
                              [(v, value) for v, value in updates
                               if id(v) not in adam.written and not host.hosted(value)],
                              numbers=host.hosted)
             if fusion_pass else _Unfused())
    updated = {id(variable) for variable, _ in updates}
    snapshots = _Snapshots(emitter, updates, _may_alias(first_nodes, updated), host)
    splits = _column_splits([n for n in first_nodes if id(n) not in recorded])
    # Gradients taken one after another (a recorded step's tape asked several times) keep
    # the autograd graph for the next; the last frees it.
    backward = [n for n in first_nodes if n.kind == GRADIENTS and id(n) not in recorded]
    retained = {id(n) for n in backward[:-1]}
    for node in first_nodes:
        if id(node) in splits:
            emitter.split(node, '', *splits[id(node)])
        elif id(node) not in recorded:
            if fused.writes_variable(node):
                # Outputs computed so far keep the values from before the updates.
                for target in first_outputs:
                    snapshots.take(target)
            emitter.call(node, '', 'retain_graph=True' if id(node) in retained else '',
                         into=fused.into.get(id(node)), host=host.calls.get(id(node)))
    if adam.groups:
        # Outputs and update values computed so far keep their pre-update values.
        for target in first_outputs + [value for v, value in updates if id(v) not in
                                       adam.written and id(v) not in fused.written]:
            snapshots.take(target)
        for hyper, weights in adam.groups:
            emitter.lines.append('%s(%s)' % (emitter.constant(adam_pass.Update()), ', '.join(
                ['[%s]' % ', '.join(_variable_reference(emitter, w[k]) if k != 1 else
                                    emitter.expression(w[k]) for w in weights)
                 for k in range(4)] + [_hyper_parameter(emitter, h) for h in hyper])))

    written = fused.written | adam.written
    written_values = {id(value) for v, value in updates if id(v) in written}
    for target in first_targets:
        if id(target) not in written_values:
            snapshots.take(target)
    pending = [(v, value) for v, value in updates if id(v) not in written]
    for i, (variable, value) in enumerate(pending):
        emitter.lines.append('u%d = %s' % (i, snapshots.values[id(value)]))
    for i, (variable, value) in enumerate(pending):
        target = emitter.names[id(variable)] if variable_arguments else emitter.constant(variable)
        if host.hosted(value):
            emitter.globals['_fill'] = host_pass.fill
            emitter.lines.append('_fill(%s, u%d)' % (target, i))
        else:
            emitter.lines.append('%s.copy_(u%d)' % (target, i))
    first_values = snapshots.values

    stale = _stale_after_updates(metric_nodes, updated)
    for node in metric_nodes:
        if id(node) in stale or id(node) not in emitter.names:
            emitter.call(node, '', host=host.calls.get(id(node)))
    results = [emitter.expression(o) if m or not graph.is_symbol(o) else first_values[id(o)]
               for o, m in zip(outputs, metric_flags)]
    # An output computed with autograd recording (the loss of a step) leaves the program
    # without its graph, which the step's gradients have consumed.
    results = ['%s.detach()' % r if id(getattr(o, 'node', None)) in recorded and r.isidentifier()
               else r for o, r in zip(outputs, results)]
    emitter.lines.append('return [%s]' % ', '.join(results))

    params = ['p%d' % i for i in range(len(inputs))]
    params += ['l%d' % i for i in range(len(placeholders))]
    if variable_arguments:
        params += ['w%d' % i for i in range(len(variables))]
    source = '\n'.join(['def program(%s):' % ', '.join(params)] +
                        ['    ' + line for line in emitter.lines])
    namespace = dict(emitter.globals)
    exec(compile(source, '<torchk program>', 'exec'), namespace)
    program = namespace['program']
    program.source = source
    program.computes_gradients = bool(grad_nodes)
    program.variables = variables
    program.written = [variable for variable, _ in updates]
    return program, placeholders


def _variable_reference(emitter, variable):
    """A variable for a torch function (`adam_fusion.Update`, which writes it in place; the
    storage pointers of updated variables): its alias if the program made one, else the
    variable itself (torch functions take it as it is)."""
    return emitter.names.get(id(variable)) or emitter.constant(variable)


def _hyper_parameter(emitter, value):
    """The expression of an optimizer hyper-parameter: a variable is passed itself (not an
    alias made per call), so that its host value can be remembered across calls."""
    if graph.is_symbol(value) and not isinstance(value, graph.KerasTensor):
        return emitter.constant(value)
    return emitter.expression(value)


class _Snapshots:
    """Emits the values of outputs and updates as they are before the updates are written:
    a variable is cloned, a value that may be a view of an updated variable is copied if it
    shares its memory. `values` maps a target's id to the expression of its value."""

    def __init__(self, emitter, updates, reads_updated, host):
        self.emitter = emitter
        self.host = host
        self.updates = updates
        self.updated = {id(variable) for variable, _ in updates}
        self.reads_updated = reads_updated
        self.values = {}
        self._pointers = False

    def take(self, target):
        """Emits the snapshot of `target` once, if it has been computed."""
        emitter = self.emitter
        if id(target) in self.values:
            return
        if graph.is_symbol(target) and not self._computed(target):
            return
        expression = emitter.expression(target)
        if self.host.hosted(target):
            # a Python number: the updates cannot change it
            self.values[id(target)] = expression
            return
        if id(target) in self.updated:
            # A variable read as an output or update value keeps its pre-update value.
            name = 'r%d' % len(self.values)
            emitter.lines.append('%s = %s.clone()' % (name, expression))
            expression = name
        elif getattr(target, 'node', None) is not None and id(target.node) in self.reads_updated:
            # Views of an updated variable (identity, slices, reshapes) must not change.
            if not self._pointers:
                names = ', '.join(_variable_reference(emitter, v) for v, _ in self.updates)
                emitter.lines.append('pointers = _storage_pointers((%s,))' % names)
                self._pointers = True
            name = 'r%d' % len(self.values)
            emitter.lines.append('%s = _unaliased(%s, pointers)' % (name, expression))
            expression = name
        self.values[id(target)] = expression

    def _computed(self, target):
        names = self.emitter.names
        node = getattr(target, 'node', None)
        return (id(target) in names or id(target) in self.emitter.lazy
                or (node is not None and id(node) in names))


def _may_alias(nodes, updated):
    """Ids of the nodes (in topological order) whose result may share memory with an updated
    variable: those reading one, or such a result, unless their function always makes a new
    tensor (`FRESH_RESULTS`)."""
    found = set()
    for node in nodes:
        if node.fn in FRESH_RESULTS:
            continue
        if any(id(item) in updated or (isinstance(item, graph.KerasTensor) and
                                        item.node is not None and id(item.node) in found)
               for item in node.inputs):
            found.add(id(node))
    return found


def _stale_after_updates(nodes, updated):
    """Ids of the nodes (in topological order) whose value changes when `updated` change."""
    stale = set()
    for node in nodes:
        for item in node.inputs:
            if id(item) in updated:
                stale.add(id(node))
            elif isinstance(item, graph.KerasTensor) and item.node is not None \
                    and id(item.node) in stale:
                stale.add(id(node))
    return stale


def computes_gradients(targets, fed=()):
    """True if computing `targets` (symbols or constants), given the `fed` symbols, calls
    autograd (a `K.gradients` node)."""
    nodes, _ = ancestors([t for t in targets if graph.is_symbol(t)],
                         stop={id(s) for s in fed})
    return any(node.kind == GRADIENTS for node in nodes)


def _needed_by_gradients(grad_nodes, fed):
    """Ids of the nodes that must run with autograd recording: the gradient nodes' inputs."""
    needed = set()
    for grad_node in grad_nodes:
        nodes, _ = ancestors(list(grad_node.args), stop=fed)
        needed.update(id(n) for n in nodes)
    return needed
