"""`rungrade`'s console entry point, importing nothing heavy before it can answer a Ctrl-C.

The command's own modules (typer, rich, the grading code) take a tenth of a second or more to
load. A Ctrl-C in that time ended `rungrade` with a traceback through the imports and exit
-2; it now ends it as a Ctrl-C does once a command runs: one line and exit 130.
"""

from __future__ import annotations

import sys

from .exit_codes import INTERRUPTED, INTERRUPTED_EARLY


def main() -> None:
    try:
        from .cli import main as run

        run()
    except KeyboardInterrupt:  # (once its arguments are read, the command answers one)
        sys.stderr.write(INTERRUPTED_EARLY)
        sys.exit(INTERRUPTED)
