"""``python -m evalsift`` is the ``evalsift`` command (through :mod:`evalsift._entry`, Ctrl-C handled first)."""

import sys

from ._entry import main

sys.exit(main())
