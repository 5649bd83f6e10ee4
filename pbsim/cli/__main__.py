"""``python -m pbsim.cli``: the same as the ``pbsim`` command."""

import sys

from pbsim.cli import main

sys.exit(main())
