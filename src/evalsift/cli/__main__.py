"""``python -m evalsift.cli`` is the ``evalsift`` command, through the console script's entry
(:mod:`evalsift._entry`)."""

import sys

from .._entry import main

sys.exit(main())
