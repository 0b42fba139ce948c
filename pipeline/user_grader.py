"""Load a user's graders from Python files: a module-level `grader`, or `ledger_graders`."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from .checks import DEFAULT_GRADER_ID
from .checks.grader import Grader, GraderError
from .checks.ledger import LedgerGrader


def _import(path: Path | str) -> ModuleType:
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"grader file {path} is a folder: give the Python file that "
                                "defines the grader")
    if not path.is_file():
        raise FileNotFoundError(f"grader file {path} does not exist")
    name = f"rungrade_user_grader_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so worker processes can unpickle what it defines
    try:
        spec.loader.exec_module(module)
    except GraderError as exc:
        sys.modules.pop(name, None)  # a broken file must not be replayed in grading workers
        raise GraderError(f"{path}: {exc}") from exc
    except Exception as exc:  # a user's file: say which one failed and why, not a traceback
        sys.modules.pop(name, None)
        raise GraderError(f"{path} could not be loaded: {type(exc).__name__}: {exc}") from exc
    except SystemExit as exc:  # (`sys.exit()` on import would end the grade, exit 0 or not)
        sys.modules.pop(name, None)
        raise GraderError(f"{path} could not be loaded: it calls sys.exit({exc.code!r}) as it "
                          "is imported; a grader file only defines its graders") from exc
    return module


BUILTIN_NAME = DEFAULT_GRADER_ID.rsplit("/", 1)[0] + "/"  # prose.contract.grader/


def _builtins(grader_id: str) -> bool:
    """`grader_id` is one of the built-in grader's, judged or not (a judge adds
    `.judged-by-{name}` before `.grader/`: `prose.contract.judged-by-x.grader/v16`)."""
    return re.sub(r"\.judged-by-.+(?=\.grader/)", "", grader_id).startswith(BUILTIN_NAME)


def load_grader(path: Path | str) -> Grader:
    """Import `path` and return its `grader`; refuses files without a valid Grader."""
    grader = getattr(_import(path), "grader", None)
    if not isinstance(grader, Grader):
        raise GraderError(f"{path} must define `grader = Grader('<name>.grader/v<N>', [...])`")
    if _builtins(grader.grader_id):
        # (its rows would pass for the built-in grader's, and runs graded by it be skipped)
        raise GraderError(
            f"{path}: grader id {grader.grader_id!r} is the built-in grader's: give your "
            f"grader an id of its own, such as 'acme.contract.grader/v1' (every row it writes "
            f"is stamped with it)")
    if JUDGED_PART in grader.grader_id:
        raise GraderError(f"{path}: grader id {grader.grader_id!r} {JUDGED_WHY}")
    return grader


# What a judge adds to a grader id: no grader of one's own says it (its rows, graded without
# the judge, passed for the judged ones, and the judged grade then skipped every run)
JUDGED_PART = ".judged-by-"
JUDGED_WHY = ("holds a judge's part (.judged-by-NAME), which a judge adds to the id itself "
              "(--judge-cmd, --judge-url): give an id without it, such as "
              "'acme.contract.grader/v1'")


def stamped_as(grader: Grader, grader_id: str) -> Grader:
    """`grader` stamping its rows with `grader_id` (`--grader-id`). An id of the built-in
    grader's, judged or not, is refused but its current one, for the built-in grader itself
    (a judge stamps its own part): its rows would pass for that version's (a grader of one's
    own, or today's checks as an older version's) and the runs that version graded be
    skipped."""
    if JUDGED_PART in grader_id and not _builtins(grader_id):
        raise GraderError(f"--grader-id {grader_id!r} {JUDGED_WHY}")
    if _builtins(grader_id) and not (
            grader_id == DEFAULT_GRADER_ID and grader.grader_id == DEFAULT_GRADER_ID):
        why = ("is a judged id of the built-in grader's: a judge adds its part of the id itself "
               "(--judge-cmd, --judge-url)" if ".judged-by-" in grader_id else
               f"would stamp the built-in grader's current checks ({DEFAULT_GRADER_ID}) as "
               "another version's" if grader.grader_id == DEFAULT_GRADER_ID else
               f"is the built-in grader's, whose rows those of {grader.grader_id!r} would pass for")
        raise GraderError(f"--grader-id {grader_id!r} {why}: give an id of your own, such as "
                          "'acme.contract.grader/v1'")
    return grader.with_id(grader_id)


def load_ledger_graders(path: Path | str) -> list[LedgerGrader]:
    """Import `path` and return its `ledger_graders`; refuses a file without a non-empty list
    of LedgerGrader."""
    graders = getattr(_import(path), "ledger_graders", None)
    if (not isinstance(graders, list | tuple) or not graders
            or not all(isinstance(g, LedgerGrader) for g in graders)):
        raise GraderError(f"{path} must define `ledger_graders = [LedgerGrader(...), ...]` "
                          "(see pipeline/checks/moltzap.py for examples)")
    return list(graders)
