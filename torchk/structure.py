"""Nested structures as `tf.nest` sees them: lists, tuples, namedtuples and dicts of leaves.

Dict entries are visited in sorted key order, as TF does, so a flattened structure and its
gradients line up however the dict was built.
"""


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(value, '_fields')


def flatten(value):
    """The leaves of `value`, depth first (`None` is a leaf)."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in flatten(value[key])]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


def pack_as(template, leaves):
    """`leaves` (a flat list) arranged in the structure of `template`."""
    leaves = iter(leaves)

    def pack(value):
        if isinstance(value, dict):
            packed = {key: pack(value[key]) for key in sorted(value)}
            return type(value)((key, packed[key]) for key in value)
        if _is_namedtuple(value):
            return type(value)(*[pack(item) for item in value])
        if isinstance(value, (list, tuple)):
            return type(value)(pack(item) for item in value)
        return next(leaves)
    return pack(template)


def map_structure(function, *values):
    """`function` applied to the leaves of `values` (structures of the same shape)."""
    flat = [flatten(value) for value in values]
    if any(len(f) != len(flat[0]) for f in flat):
        raise ValueError('map_structure: the structures have different numbers of leaves: %s.'
                         % [len(f) for f in flat])
    return pack_as(values[0], [function(*leaves) for leaves in zip(*flat)])
