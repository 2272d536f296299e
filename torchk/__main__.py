"""`python -m torchk configure` and `python -m torchk info` (see `torchk.cli`)."""
import sys

from .cli import main

sys.exit(main())
