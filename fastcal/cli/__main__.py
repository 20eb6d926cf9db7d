"""``python -m fastcal.cli``: the command line, as ``python -m fastcal`` and the ``fastcal`` command."""

import sys

from . import main

sys.exit(main())
