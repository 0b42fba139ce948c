"""Exit codes of `rungrade`, stable for schedulers (documented in the README)."""

OK = 0  # the command did its job (refused runs are results, not failures)
FAILURE = 1  # something unexpected broke; nothing half-published is visible
USAGE = 2  # bad arguments, a missing runs root, a malformed grader, no results yet
LOCKED = 3  # another `rungrade grade` is writing to the same results
STORAGE = 4  # the runs or results store failed (full, read-only, unreachable); committed
#              batches are intact and nothing of the failed batch is visible: fix and rerun
INTERRUPTED = 130  # Ctrl-C (SIGINT, 128 + 2): the batch in progress abandoned; rerun to finish
# what a Ctrl-C says before any command's code runs (while rungrade loads, reads arguments)
INTERRUPTED_EARLY = ("error: interrupted (Ctrl-C) before the command started; nothing was "
                     "done: run it again.\n")
STOPPED = 143  # stopped by SIGTERM (128 + 15) at a batch boundary; rerun to finish
# what a SIGTERM says before any command's code runs (while rungrade loads, reads arguments)
STOPPED_EARLY = ("error: stopped by SIGTERM before the command started; nothing was done: run "
                 "it again.\n")
PIPE_CLOSED = 141  # what the command printed was cut short: its reader closed the pipe (a
#                 `| head`), as SIGPIPE (128 + 13) would end it; its work (a grade's commit) stands
