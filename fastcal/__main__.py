"""``python -m fastcal``: the command line (see :mod:`fastcal.cli`)."""

import sys

from .cli import main

sys.exit(main())
