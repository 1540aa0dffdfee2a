"""`python -m planetrl.cli`."""

import sys

from planetrl.cli import main

sys.exit(main())
