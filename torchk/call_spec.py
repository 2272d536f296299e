"""The call-spec node format: how torchk.keras records, in a node of a Keras 2.3.1 model
configuration, a layer call with tensors among its keyword arguments, and how tf.keras writes
the same node.

Keras 2.3.1 passes tensors to a layer only as its inputs; tf.keras also passes them by keyword
(`layer(logits, targets=y)`, `MultiHeadAttention(query, value)`). torchk.keras records such a
call as a node whose inputs are all its tensors, and whose keyword arguments hold `CALL_SPEC`:
where each input tensor goes. The engine writes and replays it
(`torchk/keras/engine/base_layer.py`, `functional.py`); `torchk.saving` reads tf.keras' nodes
into it (`dialects`) and writes `.keras` zips from it (`keras_zip_writer`).
"""

# The node argument with which torchk.keras records a call whose keyword arguments hold
# tensors (torchk/keras/engine/base_layer.py): where each of the node's input tensors goes,
# {'inputs': template, 'keywords': {name: template}, 'mask': template, 'training': bool},
# a template being the argument's nesting with each tensor replaced by its index.
CALL_SPEC = '_torchk_call'

# Layers whose call takes tensors by keyword in tf.keras and as one input list in Keras 2:
# after the first argument, the keywords in their order in the list, each with the keyword
# whose tensor it defaults to when absent (tf.keras' `key` defaults to `value`).
CALL_TENSOR_KEYWORDS = {
    'MultiHeadAttention': (('value', None), ('key', 'value'), ('attention_mask', None)),
}
# The name tf.keras' `call` gives the first input of these layers, which a call may give by
# keyword (`MultiHeadAttention(query=..., value=..., key=...)`).
TF_KERAS_FIRST_INPUT = {'MultiHeadAttention': 'query'}


def call_template(value, is_tensor, flat):
    """A call argument's template for `CALL_SPEC`: `value`'s nesting (lists, tuples,
    namedtuples, dicts, each of its own type) with each tensor replaced by its index in
    `flat`, to which it is appended.

    # Raises
        ValueError: for a leaf that is neither a tensor (`is_tensor`) nor None."""
    if value is None:
        return None
    if is_tensor(value):
        flat.append(value)
        return len(flat) - 1
    if isinstance(value, (list, tuple)):
        return _same_sequence(value, [call_template(v, is_tensor, flat) for v in value])
    if isinstance(value, dict):
        return {k: call_template(v, is_tensor, flat) for k, v in value.items()}
    raise ValueError('an argument mixes tensors and constants (%r); torchk records tensors, '
                     'and lists and dicts of them.' % (value,))


def _same_sequence(sequence, items):
    """`items` in a sequence of `sequence`'s type (a list, a tuple or a namedtuple)."""
    if isinstance(sequence, list):
        return items
    return type(sequence)(*items) if hasattr(sequence, '_fields') else tuple(items)


# How a saved `CALL_SPEC` writes a tuple, which JSON would turn into a list.
_TUPLE = '__tuple__'


def call_filled(template, flat):
    """The argument that `template` (`call_template`'s, or a saved one) stands for, its
    tensors from `flat`."""
    if isinstance(template, dict) and list(template) == [_TUPLE]:
        return tuple(call_filled(t, flat) for t in template[_TUPLE])
    if isinstance(template, (list, tuple)):
        return _same_sequence(template, [call_filled(t, flat) for t in template])
    if isinstance(template, dict):
        return {k: call_filled(t, flat) for k, t in template.items()}
    return None if template is None else flat[template]


def _saved_template(template):
    """A `call_template` as JSON keeps it: tuples (and namedtuples) as `{_TUPLE: [...]}`."""
    if isinstance(template, tuple):
        return {_TUPLE: [_saved_template(t) for t in template]}
    if isinstance(template, list):
        return [_saved_template(t) for t in template]
    if isinstance(template, dict):
        return {k: _saved_template(t) for k, t in template.items()}
    return template


def listed_keyword_tensors(class_name, keywords):
    """The tensors that a `class_name` layer takes by keyword in tf.keras, popped from the
    dict `keywords`, as `(keyword, tensor)` in their order in Keras 2's input list
    (`CALL_TENSOR_KEYWORDS`), up to the last one given; a missing one is its default's
    tensor, or None (the caller raises)."""
    table = CALL_TENSOR_KEYWORDS.get(class_name, ())
    given = {k: keywords.pop(k) for k, _ in table if k in keywords}
    given = {k: v for k, v in given.items() if v is not None}
    last = max([i for i, (k, _) in enumerate(table) if k in given], default=-1)
    return [(keyword, given.get(keyword, given.get(default)))
            for keyword, default in table[:last + 1]]


def is_node_entry(value):
    """True for a node entry `[layer name, node index, tensor index(, kwargs)]`."""
    return (isinstance(value, list) and 3 <= len(value) <= 4 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def tf_keras_node(node):
    """A node that torchk.keras recorded with `CALL_SPEC` (tensors among the call's keyword
    arguments), as tf.keras writes it: the first argument's tensors, each with the keyword
    arguments, tensors in place (the inverse of `_call_spec`); other nodes as they are, and
    a node whose first argument tf.keras cannot write in torchk's form (`_torchk_node`)."""
    if not node or len(node[-1]) < 4 or CALL_SPEC not in node[-1][3]:
        return node
    kwargs = dict(node[-1][3])
    spec = kwargs.pop(CALL_SPEC)
    references = [list(entry[:3]) for entry in node]

    def fill(template):
        return call_filled(template, references)
    kwargs.update((k, fill(t)) for k, t in spec['keywords'].items())
    if 'mask' in spec:
        kwargs['mask'] = fill(spec['mask'])
    if 'training' in spec:
        kwargs['training'] = spec['training']
    inputs = fill(spec['inputs'])
    if is_node_entry(inputs):
        return [inputs + [kwargs]]
    if isinstance(spec['inputs'], list) and all(is_node_entry(ref) for ref in inputs):
        return [ref + [kwargs] for ref in inputs]
    return _torchk_node(node, spec)


def _torchk_node(node, spec):
    """A node whose first argument tf.keras' node form cannot write apart from a list of
    inputs (a tuple: a recurrent layer's nested inputs, tf.keras 2.15 writes them as a list
    and reads them back as `[inputs, *initial_states]`; dicts and deeper nests), in Keras
    2.3.1's form with its `CALL_SPEC` kept, which torchk reads back
    (`saving.dialects._translate_node` passes it on, `call_filled` reads it)."""
    saved = {key: _saved_template(value) for key, value in spec.items()
             if key in ('inputs', 'mask')}
    saved['keywords'] = {k: _saved_template(t) for k, t in spec['keywords'].items()}
    if 'training' in spec:
        saved['training'] = spec['training']
    kwargs = dict(node[-1][3], **{CALL_SPEC: saved})
    return [list(entry[:3]) + [{}] for entry in node[:-1]] + [list(node[-1][:3]) + [kwargs]]
