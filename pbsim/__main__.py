import sys

from pbsim.cli import main

sys.exit(main())
