"""``python -m lazygen``: the `lazygen` command line."""

import sys

from lazygen.cli import main

sys.exit(main())
