"""`rungrade`'s console entry point, importing nothing heavy before it can answer a Ctrl-C
or a SIGTERM.

The command's own modules (typer, rich, the grading code) take a tenth of a second or more to
load. A Ctrl-C in that time ended `rungrade` with a traceback through the imports and exit
-2; it now ends it as a Ctrl-C does once a command runs: one line and exit 130. A SIGTERM
then ended it by the signal (-15, where a script looks for 143); it now ends it with one line
and exit 143, until the command starts (`cli._command` puts the default back; `grade` answers
one itself).
"""

from __future__ import annotations

import signal
import sys

from .exit_codes import INTERRUPTED, INTERRUPTED_EARLY, STOPPED, STOPPED_EARLY


class StoppedEarly(BaseException):
    """A SIGTERM before the command's code runs (see `stopped_early`)."""


def stopped_early(signum, frame) -> None:
    """SIGTERM's handler while rungrade loads and reads its arguments."""
    raise StoppedEarly


def main() -> None:
    try:
        signal.signal(signal.SIGTERM, stopped_early)
        from .cli import main as run

        run()
    except KeyboardInterrupt:  # (once its arguments are read, the command answers one)
        sys.stderr.write(INTERRUPTED_EARLY)
        sys.exit(INTERRUPTED)
    except StoppedEarly:  # (as it starts, a command takes SIGTERM over)
        sys.stderr.write(STOPPED_EARLY)
        sys.exit(STOPPED)
