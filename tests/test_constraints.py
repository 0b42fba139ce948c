"""constraints.txt pins every dependency pyproject.toml names, within its range, and the suite
runs on exactly those versions (`make test` installs them)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent


def pins() -> dict[str, str]:
    """{canonical name: version} of constraints.txt; every line that is not a comment pins."""
    found = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"constraints.txt: {line!r} is not NAME==VERSION"
        assert canonicalize_name(name) not in found, f"constraints.txt pins {name} twice"
        found[canonicalize_name(name)] = version
    return found


def requirements() -> list[Requirement]:
    """Every requirement of pyproject.toml: the dependencies and those of every extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        listed += extra
    return [Requirement(text) for text in listed]


def test_every_requirement_is_pinned_within_its_range():
    pinned = pins()
    wrong = []
    for req in requirements():
        version = pinned.get(canonicalize_name(req.name))
        if version is None:
            wrong.append(f"{req.name}: not pinned")
        elif not req.specifier.contains(version, prereleases=True):
            wrong.append(f"{req.name}=={version} is outside {req.specifier}")
    assert not wrong, ("constraints.txt does not match pyproject.toml (run `make lock`, then "
                       f"`make test`): {'; '.join(wrong)}")


def test_the_suite_runs_on_the_pinned_versions():
    # (the grading code's imports are among them: polars, DuckDB, pyarrow)
    assert {"polars", "duckdb", "pyarrow"} <= set(pins())
    differ = []
    for name, version in sorted(pins().items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            differ.append(f"{name} not installed")
            continue
        if installed != version:
            differ.append(f"{name} {installed}, pinned {version}")
    assert not differ, ("this environment is not the one constraints.txt pins (`make test` "
                        f"installs it): {'; '.join(differ)}")
