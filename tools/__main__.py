"""``python -m tensorplay.tools`` runs the `tensorplay-ir` command line (see `tools.cli`)."""
import sys

from .cli import main

sys.exit(main())
