"""Hypothesis profiles of the differential fuzz tests.

`ci` (the default) is derandomized with few examples, so the suite is reproducible and fast;
`TORCHK_FUZZ=long` draws many random examples per test.
"""
import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])
settings.register_profile('ci', derandomize=True, max_examples=25, **_COMMON)
settings.register_profile('long', max_examples=1000, **_COMMON)
settings.load_profile('long' if os.environ.get('TORCHK_FUZZ') == 'long' else 'ci')
