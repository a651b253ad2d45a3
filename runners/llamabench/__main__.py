"""``python -m runners.llamabench import|run`` — see runners.llamabench.cli."""

import sys

from runners.llamabench.cli import main

sys.exit(main())
