"""The override registry as installed: run as a script in a fresh process, it prints (JSON)
what `torchk.overrides` installed, for `tests/test_overrides.py` to compare with what
`OVERRIDES` declares.

    python tests/overrides_installed.py backend   # `import keras` on the torchk backend
    python tests/overrides_installed.py facade    # and `import torchk.keras`

For each target of each override (a `SUBCLASSES` override's target stands for the classes it
reached): the attribute's name as `tests/override_chains.py` observes it (`module.Class.name`,
where the class is defined), the chain `installed_chain` reads, and whether the override's
conditions hold there; and every change `override_chains` observes.
"""
import json
import os
import sys

import override_chains


def _observed_name(owner, attribute):
    if isinstance(owner, type):
        return '%s.%s.%s' % (owner.__module__, owner.__qualname__, attribute)
    return '%s.%s' % (owner.__name__, attribute)


def report():
    from torchk import overrides
    targets = {}
    for override in overrides.OVERRIDES:
        for target in override.targets:
            owner, attribute = overrides._owner(target)
            if owner is None:
                continue
            targets[target] = {
                'observed': _observed_name(owner, attribute),
                'chain': list(overrides.installed_chain(target)),
                'classes': ['%s.%s' % (c.__module__, c.__qualname__) for c in owner.__mro__]
                if isinstance(owner, type) else [],
                'own': isinstance(owner, type) and attribute in vars(owner),
            }
    for override in overrides.OVERRIDES:
        for target in override.targets:
            if target in targets:
                owner, attribute = overrides._owner(target)
                targets[target].setdefault('conditions', {})[override.implementation] = all(
                    overrides.CONDITIONS[c](owner, attribute) for c in override.when)
    layer = sys.modules['keras.engine.base_layer'].Layer
    reached = {}
    pending = [layer]
    while pending:
        cls = pending.pop()
        if 'call' in vars(cls):
            reached[_observed_name(cls, 'call')] = list(overrides._chain(cls, 'call'))
        pending.extend(cls.__subclasses__())
    return {'targets': targets, 'subclass_calls': reached}


def main(scenario):
    sys.meta_path.insert(0, override_chains._Snapshots())
    os.environ['KERAS_BACKEND'] = 'torchk.core'
    import keras  # noqa: F401
    for name in override_chains.MODULES:
        __import__(name)
    import torchk.graph  # noqa: F401
    import torchk.tf.namespaces  # noqa: F401
    import torchk.variables  # noqa: F401
    if scenario == 'facade':
        import torchk.keras  # noqa: F401
    elif scenario != 'backend':
        raise ValueError("scenario: 'backend' or 'facade', not %r" % (scenario,))
    found = report()
    found['changes'] = sorted(override_chains.changes())
    json.dump(found, sys.stdout, indent=1, sort_keys=True)


if __name__ == '__main__':
    main(sys.argv[1])
