"""Checks and graders: the public API for writing a grader of your own (see README)."""

from .contract import builtin_checks, excerpt, quoted
from .grader import EVIDENCE_CAP, REGISTRY, Check, Grader, GraderError, check, run_checks

DEFAULT_GRADER_ID = "prose.contract.grader/v1"


def default_grader(grader_id: str = DEFAULT_GRADER_ID) -> Grader:
    """The built-in contract grader (its id changes whenever a check's meaning changes)."""
    return Grader(grader_id, builtin_checks())


__all__ = ["DEFAULT_GRADER_ID", "EVIDENCE_CAP", "REGISTRY", "Check", "Grader", "GraderError",
           "builtin_checks", "check", "default_grader", "excerpt", "quoted", "run_checks"]
