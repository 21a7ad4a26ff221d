"""``python -m referee.cli``: the ``referee`` command."""

import sys

from referee.cli import main

sys.exit(main())
