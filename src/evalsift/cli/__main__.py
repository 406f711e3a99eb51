"""``python -m evalsift.cli`` is the ``evalsift`` command."""

import sys

from . import main

sys.exit(main())
