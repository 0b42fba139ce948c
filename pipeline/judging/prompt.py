"""The prompt a judge is asked with: a versioned template kept in this package.

`prompt_v1.txt` holds a `=== system ===` and a `=== user ===` part with `$name` placeholders
(string.Template, so braces in outputs and in the template need no escaping). Changing the
wording means a new file and a new version: the version is part of every cache key, so
answers given to an older prompt are never reused for a newer one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from string import Template

TEMPLATE_VERSION = "v1"
FIELDS = ("program", "service", "clause", "question", "output_name", "output",
          "truncation_note")


@dataclass(frozen=True)
class PromptTemplate:
    """A system and a user message with `$field` placeholders, and the version they carry."""

    version: str
    system: str
    user: str

    def messages(self, request: dict) -> list[dict]:
        """Chat messages for one judgment request; refuses a request missing a field."""
        values = {f: str(request.get(f) or "") for f in FIELDS if f != "truncation_note"}
        values["truncation_note"] = (
            " (cut: only its beginning is shown)" if request.get("output_truncated") else "")
        return [
            {"role": "system", "content": Template(self.system).substitute(values)},
            {"role": "user", "content": Template(self.user).substitute(values)},
        ]


def parse_template(text: str, version: str) -> PromptTemplate:
    """Split a template file into its parts; refuses a file without both parts."""
    parts = dict(re.findall(r"(?ms)^=== (system|user) ===\n(.*?)(?=^=== |\Z)", text))
    if set(parts) != {"system", "user"}:
        raise ValueError(f"prompt template {version} needs a '=== system ===' and a "
                         "'=== user ===' part")
    return PromptTemplate(version, parts["system"].strip(), parts["user"].strip())


def load_template(version: str = TEMPLATE_VERSION) -> PromptTemplate:
    """The template shipped as `prompt_{version}.txt`."""
    text = resources.files(__package__).joinpath(f"prompt_{version}.txt").read_text("utf-8")
    return parse_template(text, version)
