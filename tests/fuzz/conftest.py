"""Hypothesis profiles of the differential fuzz tests (tests/strategies.py): `ci` by default,
`TORCHK_FUZZ=long` for many random examples per test."""
from strategies import load_profile

load_profile()
