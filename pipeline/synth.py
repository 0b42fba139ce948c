"""A synthetic corpus of OpenProse era-A run folders, for tests and benchmarks.

`synthesize(out, runs, seed)` writes `runs` run folders under `out/{project}/.prose/runs/`.
The corpus looks like a real bucket: four programs with their services, bindings of 0.5–7 KB
(a few much larger), JSON and markdown outputs, services that error with `__error.md` and take
their conditional ensures, outputs that miss their format, a few runs in the era-B layout, and
the runs a grader must refuse (no program.md, no manifest.md, no end line in state.md, no
bindings).

Run `i` depends only on (seed, i), so a corpus is reproducible byte for byte and can be grown:
`start=10_000` appends runs 10,000… without touching the earlier ones.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .processes import process_context

# How a run turns out, with its share of the corpus. Refusal kinds are named after the reason.
OUTCOMES: tuple[tuple[str, float], ...] = (
    ("clean", 0.70),
    ("sloppy", 0.10),            # some outputs miss their stated format or count
    ("errored", 0.06),           # a service errors with a declared error: degraded path
    ("undeclared-error", 0.01),  # a service errors with an error it never declared
    ("missing-binding", 0.03),   # the log says completed, yet bindings/{service}/ is absent
    ("missing-program", 0.01),
    ("missing-manifest", 0.02),  # a program without a services list
    ("incomplete-run", 0.04),    # crashed or still running: no '---end' line
    ("no-outputs", 0.02),
    ("era-b", 0.01),             # the later layout: root.prose.md, sources/, vm.log.md
)
LARGE_BINDING_SHARE = 0.01  # bindings far beyond the usual 7 KB


# -- prose ---------------------------------------------------------------------------------
_SUBJECTS = ("The vendor benchmark", "A 2025 field study", "The survey of 1,200 operators",
             "Internal telemetry", "The replication attempt", "A randomised trial",
             "The incident review", "The customer interview set", "An independent audit",
             "The regional rollout", "The pilot cohort", "A longitudinal panel")
_VERBS = ("reports", "suggests", "finds", "claims", "estimates", "shows", "argues",
          "documents", "measures", "concludes")
_OBJECTS = ("a 14% drop in median latency", "no significant effect on retention",
            "that heat-pump adoption doubled in colder regions",
            "a sharp rise in refund requests after the price change",
            "that error budgets were exceeded in three of five quarters",
            "costs falling by roughly a third over five years",
            "a strong link between onboarding length and churn",
            "that the outage began with an expired certificate",
            "fewer escalations once macros were reviewed weekly",
            "that small teams ship smaller but more frequent changes",
            "mixed results once self-reported metrics are excluded",
            "that the effect disappears in the larger sample")
_TAILS = ("", " — although the sample is small", ", with wide confidence intervals",
          " (the method is only partly described)", ", which the critic disputes",
          " in line with earlier work", "; the authors caution against generalising",
          ", as the appendix shows", " — a figure the vendor did not publish")
_DOMAINS = ("arxiv.org", "nature.com", "iea.org", "ourworldindata.org", "acm.org",
            "status.example.com", "blog.example.org", "nber.org", "who.int", "github.com")
_NAMES = ("João", "Amara", "Wei", "Olga", "Kofi", "Priya", "Mateo", "Sofía", "Yuki", "Lena")


def _sentence(rng: random.Random) -> str:
    return (f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
            f"{rng.choice(_TAILS)}.")


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _url(rng: random.Random) -> str:
    return f"https://{rng.choice(_DOMAINS)}/{rng.randrange(10**5, 10**6)}/{rng.choice(_VERBS)}"


def _words(text: str) -> int:
    return len(text.split())


# -- outputs: each returns markdown or JSON text; `bad` asks for one that misses its format --
def out_paragraphs(rng, bad, lo=2, hi=3, size=(5, 10)):
    n = rng.randint(lo, hi) if not bad else rng.choice((1, hi + 2))
    return "\n\n".join(_paragraph(rng, rng.randint(*size)) for _ in range(n)) + "\n"


def out_list(rng, bad, lo=5, hi=9, urls=True):
    n = rng.randint(lo, hi) if not bad else rng.randint(1, max(1, lo - 1))
    lines = []
    for i in range(n):
        src = f" ({_url(rng)})" if urls and not (bad and i % 2) else ""
        more = f" {_sentence(rng)}" if rng.random() < 0.6 else ""
        lines.append(f"- **F{i + 1}.** {_sentence(rng)}{more}{src}")
    return "\n".join(lines) + "\n"


def out_numbered(rng, bad, lo=4, hi=12):
    n = rng.randint(lo, hi) if not bad else hi + rng.randint(1, 6)
    return "\n".join(f"{i + 1}. `{rng.choice(_OBJECTS)}` site:{rng.choice(_DOMAINS)}"
                     for i in range(n)) + "\n"


def out_bullets(rng, bad, n=3):
    count = n if not bad else rng.choice((n - 1, n + 2))
    return "\n".join(f"- {_paragraph(rng, rng.randint(1, 2))}" for _ in range(count)) + "\n"


def out_sentence(rng, bad, prefix="Overall:"):
    if bad:
        return _paragraph(rng, 3) + "\n"
    return f"{prefix} {_sentence(rng)}\n"


def out_table(rng, bad, columns=("claim", "problem", "severity")):
    rows = rng.randint(3, 8)
    head = columns if not bad else columns[:-1]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _ in range(rows):
        cells = [rng.choice(_OBJECTS), rng.choice(_TAILS).strip(" ,;—") or "unsupported",
                 rng.choice(("low", "medium", "high"))][: len(head)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def out_json_sources(rng, bad):
    n = rng.randint(3, 12) if not bad else rng.randint(1, 2)
    items = [{"url": _url(rng), "title": rng.choice(_OBJECTS).capitalize(),
              "retrieved": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
              "excerpt": _paragraph(rng, rng.randint(1, 3))} for _ in range(n)]
    text = json.dumps(items, ensure_ascii=False, indent=2)
    return text[: len(text) // 2] if bad and rng.random() < 0.3 else text + "\n"


def out_json_checks(rng, bad):
    n = rng.randint(3, 10)
    results = [{"claim": _sentence(rng), "status": rng.choice(
        ("confirmed", "disputed", "unverifiable")), "evidence_url": _url(rng)}
        for _ in range(n)]
    body = {"checked": n if not bad else n + 2, "results": results}
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def out_json_ticket(rng, bad):
    body = {"id": f"ZD-{rng.randint(100000, 999999)}",
            "category": rng.choice(("billing", "bug", "account", "feature-request", "other")),
            "priority": rng.choice(("low", "medium", "high", "urgent")),
            "sentiment": round(rng.uniform(-1, 1), 2), "language": rng.choice(("en", "pt", "de"))}
    if bad:
        body.pop(rng.choice(("category", "priority", "language")))
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


def out_json_decision(rng, bad):
    body = {"route": rng.choice(("send", "human", "security-identity", "billing-team")),
            "confidence": round(rng.uniform(0.4, 0.99), 2), "reasons": [
                _sentence(rng) for _ in range(rng.randint(1, 4))]}
    return (json.dumps(body, ensure_ascii=False, indent=2) + "\n") if not bad else (
        "route: human\n" + _paragraph(rng, 2) + "\n")


def out_json_metrics(rng, bad):
    rows = [{"table": f"{rng.choice(('orders', 'users', 'events', 'payments'))}_{i}",
             "rows": rng.randint(10**3, 10**8), "null_rate": round(rng.random() / 10, 4),
             "freshness_hours": rng.randint(0, 72)} for i in range(rng.randint(4, 30))]
    return json.dumps({"profiled": len(rows) if not bad else 0, "tables": rows}, indent=2) + "\n"


def out_score(rng, bad):
    score = rng.randint(30, 95)
    text = f"Score: {score}/100\n\n" if not bad else ""
    return text + _paragraph(rng, rng.randint(3, 7)) + "\n"


def out_reply(rng, bad):
    name = rng.choice(_NAMES)
    body = "\n\n".join(_paragraph(rng, rng.randint(2, 5)) for _ in range(rng.randint(2, 4)))
    sign = "\n\nBest regards,\nThe Support Team\n" if not bad else "\n"
    return f"Hi {name},\n\n{body}{sign}"


def out_report(rng, bad):
    paragraphs = [_paragraph(rng, rng.randint(5, 9)) for _ in range(rng.randint(4, 8))]
    sources = "\n".join(f"- {_url(rng)}" for _ in range(rng.randint(5, 9) if not bad else 2))
    return "# Brief\n\n" + "\n\n".join(paragraphs) + f"\n\n## Sources\n\n{sources}\n"


def out_notes(rng, bad):
    return "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(3, 10))) + "\n"


def out_large(rng):
    return "\n\n".join(_paragraph(rng, 12) for _ in range(rng.randint(25, 120))) + "\n"


Generator = Callable[[random.Random, bool], str]


@dataclass
class Output:
    name: str
    description: str
    make: Generator
    ext: str = "md"
    details: tuple[str, ...] = ()


@dataclass
class Service:
    name: str
    title: str
    description: str
    outputs: list[Output]
    errors: dict[str, str]
    conditionals: list[tuple[str, str]] = field(default_factory=list)  # (condition, output)
    requires: tuple[str, ...] = ()
    colon_blocks: bool = False  # older `ensures:` blocks instead of `### Ensures`


@dataclass
class Program:
    name: str
    project: str
    title: str
    description: str
    services: list[Service]
    returns: dict[str, str]  # caller-facing output -> service
    inputs: dict[str, Callable[[random.Random], str]]
    program_ensures: list[tuple[str, str]]
    conditionals: list[tuple[str, str]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    inline_services: bool = False  # services as `## name` sections of program.md


def _programs() -> list[Program]:
    question = lambda rng: rng.choice((  # noqa: E731
        "Does a four-day week change software teams' delivery speed?",
        "How fast are residential heat pumps being adopted in cold climates?",
        "What explains the rise in card-not-present fraud since 2024?",
        "Is retrieval-augmented generation cheaper than fine-tuning for support bots?"))
    research = Program(
        "deep-research", "acme-research", "Deep Research",
        "Answers an open research question with a sourced brief.",
        [
            Service("researcher", "Researcher",
                    "Searches the open web for evidence and records every claim with its page.",
                    [Output("findings", "a markdown list of at least 5 findings, each with a "
                            "source URL", out_list),
                     Output("sources", "a JSON array with one object per source, 3+ sources, "
                            "each object with fields:", out_json_sources, "json",
                            ("`url`: the address that was read", "`title`: the page title",
                             "`retrieved`: the date it was read, as YYYY-MM-DD")),
                     Output("search-log", "a numbered list of the queries issued, at most 12 "
                            "entries", out_numbered)],
                    {"no-results": "no relevant sources found for the question"},
                    [("no sources are found", "an empty `findings` file stating \"no results\"")],
                    ("question", "depth")),
            Service("critic", "Critic",
                    "Reads the findings the way a hostile reviewer would.",
                    [Output("critique", "2-3 paragraphs, at most 350 words, in which the "
                            "findings are critically evaluated", out_paragraphs),
                     Output("weak-claims", "a markdown table with columns `claim`, `problem`, "
                            "`severity`", out_table),
                     Output("verdict", "exactly one sentence beginning with \"Overall:\"",
                            out_sentence)],
                    {"empty-input": "the findings binding was empty or missing"},
                    requires=("findings", "question")),
            Service("fact-checker", "Fact-checker",
                    "Tries to corroborate each load-bearing claim from a second source.",
                    [Output("checks", "a JSON object with fields:", out_json_checks, "json",
                            ("`checked`: the number of claims checked, at least 3",
                             "`results`: an array with one object per claim")),
                     Output("confidence", "a score from 0-100 for the findings as a whole, "
                            "followed by exactly one paragraph of justification", out_score)],
                    {"no-results": "none of the claims could be corroborated",
                     "rate-limited": "the search API refused further queries"},
                    [("no sources are found", "an empty `checks` file stating \"no results\""),
                     ("the search api is rate limited",
                      "the claims checked so far, marked as partial")],
                    ("findings", "sources")),
            Service("writer", "Writer",
                    "Turns the findings that survived criticism into a brief.",
                    [Output("report", "a well-sourced markdown brief of 400–900 words that "
                            "ends with a `## Sources` section listing 5+ distinct URLs",
                            out_report),
                     Output("tldr", "exactly 3 bullet points, each under 25 words",
                            out_bullets),
                     Output("reader-note", "a good note on how far the brief can be trusted",
                            out_notes)],
                    {"insufficient-evidence": "fewer than 2 findings survived criticism"},
                    [("fact-checking finds no sources",
                      "every unchecked claim in `report` is marked “unverified”")],
                    ("question", "findings", "critique", "checks")),
        ],
        {"report": "writer", "tldr": "writer"},
        {"question": question, "depth": lambda rng: rng.choice(("quick", "thorough"))},
        [("report", "a well-sourced markdown brief that answers the question in its first "
          "paragraph"), ("tldr", "exactly 3 bullet points, each under 25 words")],
        [("fact-checking finds no sources", "every unchecked claim in `report` is marked "
          "“unverified”")],
        {"no-results": "the researcher found nothing usable for the question"},
    )
    triage = Program(
        "ticket-triage", "support-bot", "Ticket Triage",
        "First-line handling for inbound support email.",
        [
            Service("classifier", "Classifier", "Labels an inbound ticket.",
                    [Output("ticket", "a JSON object with fields:", out_json_ticket, "json",
                            ("id: the ticket id exactly as given by the caller",
                             "category: one of \"billing\", \"bug\", \"account\", \"other\"",
                             "priority: one of \"low\", \"medium\", \"high\", \"urgent\"")),
                     Output("rationale", "at most 80 words explaining the chosen category",
                            lambda rng, bad: out_sentence(rng, bad, "Because"))],
                    {"unreadable": "the ticket text is empty, binary, or not natural language"},
                    requires=("ticket-text", "ticket-id"), colon_blocks=True),
            Service("responder", "Responder", "Drafts a reply in the house voice.",
                    [Output("reply", "a customer-facing reply that greets the customer by "
                            "name and signs off as the Support Team", out_reply),
                     Output("macros-used", "a markdown list of the macros applied",
                            lambda rng, bad: out_list(rng, bad, 1, 4, urls=False)),
                     Output("internal-note", "at most 120 words for the next agent",
                            out_notes)],
                    {"policy-block": "the reply would breach the refund policy"},
                    [("the reply is blocked by policy", "an internal note explaining the "
                      "block, and no reply")],
                    ("ticket", "ticket-text", "customer"), colon_blocks=True),
            Service("escalation-router", "Escalation router",
                    "Decides whether the reply can go out or a human takes over.",
                    [Output("decision", "the routing decision as JSON, with `route`, "
                            "`confidence` (a number between 0 and 1) and `reasons` (an array "
                            "of 1-4 strings)", out_json_decision, "json"),
                     Output("handoff", "2-3 paragraphs summarising the case for a human",
                            out_paragraphs)],
                    {"crm-unavailable": "account lookups failed"},
                    [("the crm is unavailable", "a decision based on cached data, flagged "
                      "as stale")],
                    ("ticket", "reply"), colon_blocks=True),
        ],
        {"reply": "responder", "decision": "escalation-router"},
        {"ticket-text": lambda rng: _paragraph(rng, rng.randint(3, 10)),
         "ticket-id": lambda rng: f"ZD-{rng.randint(100000, 999999)}",
         "customer": lambda rng: f"{rng.choice(_NAMES)} — {rng.choice(('Pro', 'Team'))} plan"},
        [("reply", "a customer-facing reply ready to send"),
         ("decision", "the routing decision as JSON")],
        errors={"crm-unavailable": "account lookups failed and routing used cached data"},
    )
    quality = Program(
        "data-quality", "data-team", "Nightly data quality",
        "Profiles the warehouse, flags anomalies and writes the morning report.",
        [
            Service("profiler", "Profiler", "Profiles every table of the warehouse.",
                    [Output("metrics", "a JSON object with fields:", out_json_metrics, "json",
                            ("`profiled`: the number of tables profiled, a positive integer",
                             "`tables`: one object per table with rows and null_rate"))],
                    {"warehouse-down": "the warehouse could not be reached"},
                    [("the warehouse is down", "yesterday's metrics, flagged as stale")],
                    ("schema",)),
            Service("anomaly-detector", "Anomaly detector",
                    "Compares today's metrics against the last 30 days.",
                    [Output("anomalies", "a markdown table with columns `table`, `metric`, "
                            "`severity`",
                            lambda rng, bad: out_table(rng, bad, ("table", "metric",
                                                                  "severity"))),
                     Output("summary", "exactly 3 bullet points", out_bullets)],
                    {"no-baseline": "fewer than 7 days of history"},
                    [("no baseline exists", "the metrics, marked as baseline-only")],
                    ("metrics",)),
            Service("reporter", "Reporter", "Writes the morning report.",
                    [Output("report", "2-3 paragraphs for the data team", out_paragraphs),
                     Output("score", "a score from 0-100 for overall data health",
                            out_score)],
                    {}, requires=("anomalies", "summary")),
        ],
        {"report": "reporter"},
        {"schema": lambda rng: rng.choice(("analytics", "finance", "product"))},
        [("report", "2-3 paragraphs for the data team")],
    )
    release = Program(
        "release-notes", "platform-eng", "Release notes",
        "Turns merged pull requests into release notes.",
        [
            Service("collector", "Collector", "Lists the merged pull requests.",
                    [Output("changes", "a markdown list of at least 5 merged changes",
                            lambda rng, bad: out_list(rng, bad, 5, 14, urls=True))],
                    {"api-unavailable": "the code host API was unreachable"},
                    [("the api is unavailable", "the cached list, flagged as stale")],
                    ("since",)),
            Service("drafter", "Drafter", "Writes the notes.",
                    [Output("notes", "2-3 paragraphs grouped by area", out_paragraphs),
                     Output("highlights", "exactly 3 bullet points", out_bullets)],
                    {}, requires=("changes",)),
        ],
        {"notes": "drafter"},
        {"since": lambda rng: f"v{rng.randint(1, 4)}.{rng.randint(0, 20)}.0"},
        [("notes", "release notes for the public changelog")],
        inline_services=True,
    )
    return [research, triage, quality, release]


PROGRAMS = _programs()
PROGRAM_SHARES = (0.4, 0.3, 0.2, 0.1)


# -- contract and manifest text ------------------------------------------------------------
def _items(pairs) -> list[str]:
    return [f"- `{name}`: {text}" for name, text in pairs]


def _output_items(outputs: list[Output], conditionals, indent: str) -> list[str]:
    lines = []
    for o in outputs:
        lines.append(f"- `{o.name}`: {o.description}")
        lines += [f"{indent}- {d}" for d in o.details]
    lines += [f"- if {cond}: {what}" for cond, what in conditionals]
    return lines


def service_text(svc: Service, revision: int) -> str:
    """A service snapshot; revision 2 is a later edit of the same service."""
    indent = "    " if revision == 1 else "   "
    ensures = _output_items(svc.outputs, svc.conditionals, indent)
    errors = _items(svc.errors.items())
    requires = [f"- `{r}`: the {r.replace('-', ' ')}" for r in svc.requires] or ["- (none)"]
    model = "\nmodel: sonnet" if revision == 2 else ""
    head = f"---\nname: {svc.name}\nkind: service{model}\n---\n\n# {svc.title}\n\n"
    if svc.colon_blocks:
        body = (f"{svc.description}\n\nrequires:\n" + "\n".join(requires)
                + "\n\nensures:\n" + "\n".join(ensures)
                + ("\n\nerrors:\n" + "\n".join(errors) if errors else ""))
    else:
        body = (f"### Description\n\n{svc.description}\n\n### Requires\n\n"
                + "\n".join(requires) + "\n\n### Ensures\n\n" + "\n".join(ensures)
                + ("\n\n### Errors\n\n" + "\n".join(errors) if errors else ""))
    if revision == 2:
        body += "\n\n### Strategies\n\n- when the input is thin: say so rather than pad\n"
    return head + body + "\n"


def program_text(prog: Program, with_services: bool = True) -> str:
    services = f"\nservices: [{', '.join(s.name for s in prog.services)}]" if with_services \
        else ""
    lines = [f"---\nname: {prog.name}\nkind: program{services}\n---\n", f"# {prog.title}\n",
             "### Description\n", prog.description + "\n"]
    if with_services:
        lines += ["### Services\n", "\n".join(f"- `{s.name}`" for s in prog.services) + "\n"]
    lines += ["### Requires\n", "\n".join(f"- `{k}`: caller input" for k in prog.inputs) + "\n",
              "### Ensures\n",
              "\n".join([*_items(prog.program_ensures),
                         *(f"- if {c}: {w}" for c, w in prog.conditionals)]) + "\n"]
    if prog.errors:
        lines += ["### Errors\n", "\n".join(_items(prog.errors.items())) + "\n"]
    if with_services and prog.inline_services:
        for svc in prog.services:
            lines += [f"## {svc.name}\n", svc.description + "\n", "### Ensures\n",
                      "\n".join(_output_items(svc.outputs, svc.conditionals, "   ")) + "\n"]
            if svc.errors:
                lines += ["### Errors\n", "\n".join(_items(svc.errors.items())) + "\n"]
    return "\n".join(lines)


def manifest_text(prog: Program, when: datetime, ascii_arrows: bool) -> str:
    right, left = ("->", "<-") if ascii_arrows else ("→", "←")
    parts = [f"# Manifest: {prog.name}\n\nGenerated by Forme at {when:%Y-%m-%dT%H:%M:%SZ}\n"
             f"Source: ./{prog.name}.md\n", "## Caller Interface\n\nrequires:\n"
             + "\n".join(f"- {k} (from caller): caller input" for k in prog.inputs)
             + "\n\nreturns:\n"
             + "\n".join(f"- {k} (from {v}): {k}" for k, v in prog.returns.items()) + "\n"]
    graph = ["## Graph\n"]
    produced: dict[str, str] = {}
    for svc in prog.services:
        block = [f"### {svc.name}\n"]
        if not prog.inline_services:
            block.append(f"source: services/{svc.name}.md")
        block.append(f"workspace: workspace/{svc.name}/\n\ninputs:")
        for r in svc.requires:
            src = produced.get(r, f"bindings/caller/{r}.md")
            block.append(f"- {r} {left} {src}")
        block.append("\noutputs:")
        for o in svc.outputs:
            target = f"bindings/{svc.name}/{o.name}.{o.ext}"
            produced[o.name] = target
            block.append(f"- (public) {o.name} {right} {target}")
        if svc.errors:
            block.append("\nerrors:\n" + "\n".join(f"- {e}" for e in svc.errors))
        graph.append("\n".join(block) + "\n")
    order = ["## Execution Order\n"] + [
        f"{i + 1}. {s.name} (depends on: {'caller' if i == 0 else prog.services[i - 1].name})"
        for i, s in enumerate(prog.services)]
    parts.append("\n---\n\n".join(graph))
    parts.append("\n".join(order) + "\n")
    return "\n---\n\n".join(parts)


# -- one run ---------------------------------------------------------------------------------
BASE_TIME = datetime(2026, 3, 1, tzinfo=UTC)
_SUFFIX_ALPHABETS = ("0123456789abcdef", "abcdefghijklmnopqrstuvwxyz0123456789",
                     "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789_-")


def _pick(rng: random.Random, weighted) -> str:
    x, acc = rng.random(), 0.0
    for name, share in weighted:
        acc += share
        if x < acc:
            return name
    return weighted[-1][0]


def run_name(rng: random.Random, index: int) -> tuple[str, datetime]:
    when = BASE_TIME + timedelta(seconds=index * 53 + rng.randrange(53))
    alphabet = rng.choice(_SUFFIX_ALPHABETS)
    suffix = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 14)))
    return f"{when:%Y%m%d-%H%M%S}-{suffix}", when


def make_run(seed: int, index: int) -> tuple[str, dict[str, str], str]:
    """Return (relative run folder, {relative file path: text}, outcome) for run `index`."""
    rng = random.Random(f"{seed}:{index}")
    prog = PROGRAMS[int(_pick(rng, [(str(i), s) for i, s in enumerate(PROGRAM_SHARES)]))]
    outcome = _pick(rng, OUTCOMES)
    name, when = run_name(rng, index)
    files: dict[str, str] = {}
    revision = 2 if rng.random() < 0.1 else 1  # a later edit of the services, in a few runs

    files["program.md"] = program_text(prog, with_services=outcome != "missing-manifest")
    if outcome != "missing-manifest":
        files["manifest.md"] = manifest_text(prog, when, ascii_arrows=rng.random() < 0.2)
        if not prog.inline_services:
            for svc in prog.services:
                files[f"services/{svc.name}.md"] = service_text(svc, revision)
    for key, make in prog.inputs.items():
        files[f"bindings/caller/{key}.md"] = f"kind: input\nsource: caller\n---\n{make(rng)}\n"

    failing = rng.randrange(len(prog.services))
    log = [f"# run:{name} {prog.name}", f"program: {prog.project}/{prog.name}"]
    step = 1
    for key in prog.inputs:
        log.append(f"{step}→ [input] {key} ✓")
        step += 1
    stop_at = rng.randrange(len(prog.services)) if outcome == "incomplete-run" else None
    for i, svc in enumerate(prog.services):
        if stop_at is not None and i > stop_at:
            break
        mark = rng.choice(("✓", "✓", "ok"))
        if i == stop_at:
            log.append(f"{step}→ {svc.name}")
            break
        errored = outcome in ("errored", "undeclared-error") and i == failing
        skip = outcome == "no-outputs" or (outcome == "missing-binding" and i == failing)
        if errored:
            declared = list(svc.errors) or ["unexpected"]
            error = rng.choice(declared) if outcome == "errored" else "disk-full"
            mark = f"✗ {error}"
            files[f"workspace/{svc.name}/__error.md"] = (
                f"# Error: {error}\n\n{_paragraph(rng, rng.randint(1, 3))}\n")
        for o in svc.outputs:
            if skip or (errored and rng.random() < 0.5):
                continue
            bad = outcome == "sloppy" and rng.random() < 0.4
            text = out_large(rng) if rng.random() < LARGE_BINDING_SHARE else o.make(rng, bad)
            files[f"bindings/{svc.name}/{o.name}.{o.ext}"] = text
        if rng.random() < 0.8:
            files[f"workspace/{svc.name}/notes.md"] = out_notes(rng, False)
        if rng.random() < 0.3:
            files[f"agents/{svc.name}/memory.md"] = out_notes(rng, False)
        note = f" ({rng.choice(_TAILS).strip(' ,;—()')})" if rng.random() < 0.15 else ""
        log.append(f"{step}→ {svc.name} {mark}{note if not errored else ''}")
        step += 1
    if outcome != "incomplete-run":
        end = when + timedelta(seconds=rng.randint(40, 1800))
        log.append(f"---end {end:%Y-%m-%dT%H:%M:%SZ}")
    elif rng.random() < 0.2:
        log.append(f"---error {when:%Y-%m-%dT%H:%M:%SZ} worker lost")
    if outcome != "incomplete-run" or rng.random() > 0.15:  # a few crashed before any log
        files["state.md"] = "\n".join(log) + "\n"

    if outcome == "missing-program":
        del files["program.md"]
    if outcome == "era-b":
        files = {"root.prose.md": files["program.md"], "vm.log.md": files.get("state.md", ""),
                 "manifest.run.md": files.get("manifest.md", ""),
                 **{k.replace("services/", "sources/").replace(".md", ".prose.md"): v
                    for k, v in files.items() if k.startswith("services/")},
                 **{k: v for k, v in files.items() if k.startswith("bindings/")}}
    return f"{prog.project}/.prose/runs/{name}", files, outcome


def _write_range(args: tuple[str, int, int, int]) -> tuple[Counter, int, int]:
    out, seed, start, stop = args
    outcomes: Counter = Counter()
    count = size = 0
    made: set[str] = set()
    for index in range(start, stop):
        folder, files, outcome = make_run(seed, index)
        outcomes[outcome] += 1
        base = os.path.join(out, folder)
        for rel, text in files.items():
            path = os.path.join(base, rel)
            parent = os.path.dirname(path)
            if parent not in made:
                os.makedirs(parent, exist_ok=True)
                made.add(parent)
            data = text.encode()
            with open(path, "wb") as handle:
                handle.write(data)
            count += 1
            size += len(data)
        if len(made) > 10_000:
            made.clear()
    return outcomes, count, size


@dataclass
class SynthSummary:
    out: str
    runs: int
    files: int
    bytes: int
    outcomes: dict[str, int]


def synthesize(out: str, runs: int, seed: int = 0, start: int = 0,
               workers: int | None = None) -> SynthSummary:
    """Write runs `start`…`start + runs - 1` of the corpus for `seed` under `out`.

    Returns what was written (run, file and byte counts; runs per outcome). Refuses nothing:
    existing run folders of the same indexes are overwritten with the same bytes.
    """
    workers = max(1, workers or os.cpu_count() or 1)
    step = max(1, min(500, runs // (workers * 4) or 1))
    jobs = [(out, seed, i, min(i + step, start + runs)) for i in range(start, start + runs, step)]
    outcomes: Counter = Counter()
    files = size = 0
    if workers == 1 or len(jobs) == 1:
        results = map(_write_range, jobs)
    else:
        # forked from the clean fork server, never from this process: a process that has
        # used polars, DuckDB or a Jupyter kernel's sockets cannot be forked safely
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=process_context())
        results = pool.map(_write_range, jobs)
    for counts, n, b in results:
        outcomes.update(counts)
        files += n
        size += b
    if workers > 1 and len(jobs) > 1:
        pool.shutdown()
    return SynthSummary(out, runs, files, size, dict(sorted(outcomes.items())))
