"""Exit codes of `rungrade`, stable for schedulers (documented in the README)."""

OK = 0  # the command did its job (refused runs are results, not failures)
FAILURE = 1  # something unexpected broke; nothing half-published is visible
USAGE = 2  # bad arguments, a missing runs root, a malformed grader, no results yet
LOCKED = 3  # another `rungrade grade` is writing to the same results
