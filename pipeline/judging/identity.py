"""A judge's name, and the grader id that grading with that judge is stamped with.

Grading with a judge means something else than grading without one, and two judges mean two
different things: `judged_grader_id` makes each a distinct grader id by inserting
`.judged-by-<judge name>` before `.grader/v<N>`, e.g.
`prose.contract.grader/v1` -> `prose.contract.judged-by-gpt-4o-mini.grader/v1`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..checks.grader import validate_grader_id

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9_-]+)*$")
# Words of a command line that start a program rather than name the judge.
# Words of a command that run the judge rather than name it (`uv run`, `npx tsx`, `env`)
LAUNCHERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|deno|bun|bash|sh|zsh|ruby|perl|"
                       r"uv|uvx|env|exec|nice|timeout|run|npx|pnpm|yarn|tsx|ts-node|poetry|"
                       r"pipx|conda)$")


# Options of a launcher that take the next word as their value (`timeout -k 5 60`, `nice -n
# 10`, `python3 -W ignore`, `uv run --with openai`): never the judge's name. Per launcher: the
# same letter is a flag of another (`python3 -s` takes none)
TAKES_VALUE = {
    "timeout": frozenset({"-k", "--kill-after", "-s", "--signal"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "python": frozenset({"-W", "-X"}),
    "uv": frozenset({"--with", "--python", "-p", "--from", "--project", "--directory",
                     "--env-file"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
}
# A launcher's bare argument that is a number or a duration (`timeout 60`, `timeout 1.5m`)
DURATION = re.compile(r"^\d+(?:\.\d+)?[smhd]?$")


class JudgeConfigError(ValueError):
    """A judge that cannot be used as configured (no command, bad name, no model)."""


def slug(text: str) -> str:
    """`text` made a judge name: lowercase, [a-z0-9._-], no empty dot segment."""
    out = re.sub(r"[^a-z0-9._-]+", "-", text.lower())
    out = re.sub(r"\.{2,}", ".", out).strip("._-")
    out = re.sub(r"\.[-_]*(?=\.|$)", "", out)  # drop segments made only of dashes
    return out if out and NAME.match(out) else "judge"


def judge_name(name: str) -> str:
    """`name` if it can be a judge name; refuses others with the name that would do."""
    if not NAME.match(name or ""):
        raise JudgeConfigError(
            f"judge name {name!r} is not usable: use lowercase letters, digits, '-', '_' and "
            f"'.', starting with a letter or digit (for example {slug(name or 'judge')!r})")
    return name


def name_from_command(argv: list[str]) -> str:
    """The judge name a command suggests: its script's file stem (`judge.py` -> `judge`,
    `uv run judges/strict.py` -> `strict`), or the module's own name (`python3 -m
    judges.strict` -> `strict`), past launchers, options (with the values of those that take
    one), durations and `NAME=value` settings."""
    words = iter(argv)
    launcher = ""  # the last launcher read: which options take a value
    for word in words:
        base = Path(word).name
        if word == "-m":
            module = next(words, "")
            return slug(module.rsplit(".", 1)[-1]) if module else "judge"
        if word in TAKES_VALUE.get(launcher, ()):
            next(words, None)
            continue
        if LAUNCHERS.match(base):
            if base not in ("run", "exec"):  # (`uv run`: uv's options still)
                launcher = re.sub(r"[0-9.]+$", "", base).replace("uvx", "uv").replace(
                    "pypy", "python")
            continue
        if word.startswith("-") or "=" in word or DURATION.match(word):
            continue
        return slug(Path(base).stem or base)
    return "judge"


def judged_grader_id(grader_id: str, name: str) -> str:
    """The grader id for grading with judge `name`; unchanged if it already says so."""
    base, version = validate_grader_id(grader_id).rsplit(".grader/", 1)
    suffix = f".judged-by-{judge_name(name)}"
    if base.endswith(suffix):
        return grader_id
    return validate_grader_id(f"{base}{suffix}.grader/{version}")
