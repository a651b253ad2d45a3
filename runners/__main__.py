"""``python -m runners run|attach|flush`` — see runners.cli."""

import sys

from runners.cli import main

sys.exit(main())
