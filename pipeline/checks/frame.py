"""The clause frame: one row per gradable clause, joined with its output and its service.

Checks are expressions over this frame. Its columns (beyond those of `clauses`):
  target_output (the output a clause is about: its own name, or for a conditional the first
  backticked output its degraded text names), output_scope ('named' | 'service' | null: a
  conditional naming no output is judged on everything its service published)
  binding_text, binding_uri, binding_size, binding_extension, binding_truncated, has_output
  service_kind, errored, error_name, error_detail, declared_errors, log_status
  service_outputs (non-empty bindings the service published), details (sub-item texts)
  condition_kind ('error' | 'branch'), triggered (bool, null when the log cannot tell),
  trigger (what triggered a conditional, or set a service's primary ensures aside)
  error_declared, on_degraded_path (primary ensures not held against an errored service)
plus what clause_analysis.py reads in each clause (formats, quantities, literals, ...) and
what output_analysis.py measures in each output (n_words, list_items, json_kind, ...).
"""

from __future__ import annotations

import re

import polars as pl

from ..sources.contract import OUTPUT_EXTENSION
from ..tables import collect
from .clause_analysis import clause_requirements
from .output_analysis import output_facts

# What joins a service's outputs into the one text a conditional naming no output is judged
# on: a blank line, a line separator (U+2028: a space to every pattern, so no word, line or
# paragraph is added; 3 characters more than the blank line alone), a blank line. A quote of
# that text never crosses it (`library.around`, `grader.finished`): v21 quoted the end of one
# file and the start of the next as one text.
JOINED_MARK = "\u2028"
OUTPUTS_JOINED = "\n\n" + JOINED_MARK + "\n\n"

# A service's error as messages name it: one the log records without a name (`---error …
# timeout`) is still told apart.
ERROR = pl.coalesce(pl.col("error_name"), pl.lit("(unnamed)"))
# Words no condition is told by: a note or another service's error sharing only these with a
# condition says nothing of it ("if no sources are found" and `no-results` share "no").
STOPWORDS = ("a", "all", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "if",
             "in", "is", "it", "its", "no", "not", "of", "on", "or", "that", "the", "there",
             "this", "to", "was", "were", "when", "with")
# Words that name a state a condition asks about (a failure, an absence): of a condition that
# has one, a log note must name one of them ("a cited page is unreachable" is told by a note
# "1 source unreachable", not by one saying "all pages checked"). A word after a negation is
# joined to it (`no_source`), so "no sources are found" is not told by "1 source unreachable".
STATE_WORDS = ("denied", "down", "empty", "error", "errored", "exceed", "exceeded", "fail",
               "failed", "failure", "invalid", "limited", "missing", "none", "nothing",
               "refused", "timed", "timeout", "unable", "unavailable", "unreachable")
NEGATED = r"\b(?:no|not|without|zero|never)\s+(?:(?:any|a|an|the)\s+)?(\p{L}+)"

# Words that mark a conditional ensures as an error fallback rather than a branch.
ERROR_WORDS = (
    r"(?i)\b(error|errors|errored|fail|fails|failed|failure|unavailable|down|timeout|timed out|"
    r"times out|cannot|can't|unable|missing|no |not |empty|invalid|unreachable|refused|denied|"
    r"exceed|exceeds|rate.limit)"
)


def normalised(expr: pl.Expr) -> pl.Expr:
    """Names compare case-insensitively with `-`, `_` and spaces treated alike, composed and
    decomposed accents alike (as `sources.contract.normalise_name` compares them)."""
    return expr.str.strip_chars().str.strip_chars("`").str.to_lowercase().str.normalize(
        "NFC").str.replace_all(r"[\s_\-]+", "-")


def whole_blocks(text: str) -> str:
    """The start of an output read only up to the read cap, ended after its last whole block
    (the text before its last blank line), else its last whole line, else its last whole
    word; as it is when what stays would be blank.

    What a check finds in it is then in the whole output as it is found there: no word, URL
    or line is cut short, and no paragraph becomes a heading or a table by the lines past the
    cap; so a count past an upper bound, or a forbidden text, found in it is established
    (`library.failed_on_part_read`)."""
    blank = -1
    for blank_line in _BLANK_LINE.finditer(text):  # (a blank line may hold spaces)
        blank = blank_line.start()
    for end in (blank, text.rfind("\n"), max(text.rfind(" "), text.rfind("\t"))):
        if end > 0 and not text[:end].isspace():
            return text[:end].rstrip()
    return text


_BLANK_LINE = re.compile(r"\n[ \t]*(?=\n)")


def _judged_texts(bindings: pl.DataFrame) -> pl.Series:
    """The text of each binding as the checks judge it: whole, or of one cut at the read cap
    its `whole_blocks` (in Python, for those alone: a few a batch, a search from the end of
    each, where a regex over the column passed over every one three times). The column as
    it is when none was cut."""
    text, cut = bindings["text"], bindings["truncated"].fill_null(False)
    if not cut.any():
        return text
    at = cut.arg_true()
    return text.scatter(at, [whole_blocks(t) for t in text.gather(at).to_list()])


def output_key(expr: pl.Expr) -> pl.Expr:
    """The key of an output a clause names: its name as `normalised`, without the extension
    of a binding's file (an item may name `report.md`; the binding's name is `report`)."""
    return normalised(expr.str.strip_chars().str.strip_chars("`")
                      .str.replace(OUTPUT_EXTENSION, ""))


BACKTICKED = r"`([^`\n]+)`"


def clause_frame(clauses: pl.DataFrame, services: pl.DataFrame,
                 bindings: pl.DataFrame, measured: bool = True) -> pl.DataFrame:
    """Return one row per non-detail clause, joined, analysed and measured (columns above).

    With `measured=False` the output measures are left out: `run_checks` then computes the
    ones its checks read, only where they read them. The joins are one polars query: a shard
    of few runs pays for one plan, not for seventy steps.
    """
    # (the judged text set in place before the query: a Series in a lazy query is a literal
    # that its optimiser hashes and compares, the whole column, wherever the query names it)
    outputs = (
        bindings.with_columns(_judged_texts(bindings).alias("text")).lazy().with_columns(
            normalised(pl.col("name")).alias("output_key"),
            pl.col("text").str.contains(r"\S").alias("_nonempty"),
        )
        # one name published twice: the first the reader wrote (the file the manifest wires,
        # else .md, then .json, then any other: see sources/prose.py, `_binding_order`)
        .unique(["run_uri", "service", "output_key"], keep="first", maintain_order=True)
    )
    nonempty = outputs.filter("_nonempty")
    programs = services.lazy().filter(pl.col("kind") == "program").select(
        "run_uri", pl.col("service").alias("program"))
    per_service = pl.concat([
        nonempty.group_by("run_uri", "service").agg(
            pl.col("name").sort().alias("service_outputs")),
        # a program's outputs are everything its services published
        nonempty.join(programs, on="run_uri")
        .group_by("run_uri", pl.col("program").alias("service"))
        .agg(pl.col("name").unique().sort().alias("service_outputs")),
    ])
    details = (
        clauses.lazy().filter(pl.col("kind") == "detail")
        .group_by("run_uri", "service", "parent_position")
        .agg(pl.col("text").sort_by("position").alias("details"))
        .rename({"parent_position": "position"})
    )
    svc = services.lazy().select(
        "run_uri", "service", pl.col("kind").alias("service_kind"), "errored", "error_name",
        "error_detail", "declared_errors", "log_status", "log_note",
    )
    top = _targets(clauses.lazy().filter(pl.col("kind") != "detail"), outputs, programs,
                   services.lazy().select("run_uri", "service", "position"))
    # a conditional naming no output is judged on all its service published: only those
    # services' outputs are joined into one text
    wide = top.filter((pl.col("kind") == "conditional") & pl.col("target_output").is_null()) \
        .select("run_uri", pl.col("_output_service").alias("service")).unique()
    service_text = pl.concat([
        nonempty.join(wide, on=["run_uri", "service"], how="semi")
        .group_by("run_uri", "service").agg(
            pl.col("text").sort_by("name").str.join(OUTPUTS_JOINED).alias("_service_text"),
            pl.col("truncated").any().alias("_service_cut")),
        nonempty.join(programs.join(wide.rename({"service": "program"}),
                                    on=["run_uri", "program"], how="semi"), on="run_uri")
        .group_by("run_uri", pl.col("program").alias("service"))
        .agg(pl.col("text").sort_by("service", "name").str.join(OUTPUTS_JOINED)
             .alias("_service_text"), pl.col("truncated").any().alias("_service_cut")),
    ])
    frame = (
        top.join(svc, on=["run_uri", "service"], how="left")
        .join(
            outputs.select(
                "run_uri", pl.col("service").alias("_output_service"), "output_key",
                pl.col("text").alias("binding_text"), pl.col("uri").alias("binding_uri"),
                pl.col("size_bytes").alias("binding_size"),
                pl.col("extension").alias("binding_extension"),
                pl.col("truncated").alias("binding_truncated"),
            ),
            on=["run_uri", "_output_service", "output_key"], how="left",
        )
        .join(per_service.rename({"service": "_output_service"}),
              on=["run_uri", "_output_service"], how="left")
        .join(service_text.rename({"service": "_output_service"}),
              on=["run_uri", "_output_service"], how="left")
        .join(details, on=["run_uri", "service", "position"], how="left")
        .with_columns(
            pl.when(pl.col("target_output").is_not_null()).then(pl.lit("named"))
            .when(pl.col("kind") == "conditional").then(pl.lit("service"))
            .alias("output_scope"),
        )
        .with_columns(
            # a conditional naming no output is judged on all its service published (read in
            # part where one of them was cut at the read cap)
            pl.when(pl.col("output_scope") == "service").then(pl.col("_service_text"))
            .otherwise(pl.col("binding_text")).alias("binding_text"),
            pl.when(pl.col("output_scope") == "service").then(pl.col("_service_cut"))
            .otherwise(pl.col("binding_truncated")).alias("binding_truncated"),
            pl.col("service_outputs").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            pl.col("details").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            pl.col("errored").fill_null(False),
        )
        .with_columns(
            pl.col("binding_text").str.contains(r"\S")
            .fill_null(False).alias("has_output"),
        )
    )
    frame = collect(_conditionals(frame, svc).drop("_output_service", "_service_text",
                                                   "_service_cut"))
    frame = clause_requirements(frame)
    return output_facts(frame) if measured else frame


def _targets(top: pl.LazyFrame, outputs: pl.LazyFrame, programs: pl.LazyFrame,
             positions: pl.LazyFrame) -> pl.LazyFrame:
    """Add target_output, output_key and _output_service (where the output is published).

    A conditional's target is the first backticked name in its degraded text that is an output
    of its component: an ensures item's name, or a binding its service (for a program: any
    service of the run) published; naming none, a conditional sub-item's is the output of the
    item it stands under.
    """
    top = top.with_row_index("_row")
    parent = top.select("run_uri", "service", pl.col("position").alias("parent_position"),
                        pl.col("output_name").alias("_parent_output"),
                        pl.col("output_service").alias("_parent_service"))
    declared = top.filter(pl.col("output_name").is_not_null()).select(
        "run_uri", "service", output_key(pl.col("output_name")).alias("key"))
    published = pl.concat([
        outputs.select("run_uri", "service", pl.col("output_key").alias("key")),
        outputs.join(programs, on="run_uri")
        .select("run_uri", pl.col("program").alias("service"), pl.col("output_key").alias("key")),
    ])
    known = pl.concat([declared, published]).unique()
    refs = (
        top.filter(pl.col("kind") == "conditional")
        .select("_row", "run_uri", "service",
                pl.col("description").fill_null("").str.extract_all(BACKTICKED).alias("ref"))
        .explode("ref").drop_nulls("ref")
        .with_columns(pl.col("ref").str.strip_chars("`").str.strip_chars())
        .with_row_index("_order")
        .with_columns(output_key(pl.col("ref")).alias("key"))
        .join(known, on=["run_uri", "service", "key"], how="inner")
        .sort("_order").unique("_row", keep="first")
        .select("_row", pl.col("ref").alias("_ref"))
    )
    # of several services publishing one name, the last in the manifest's order (`positions`)
    publisher = (
        outputs.join(positions, on=["run_uri", "service"], how="left")
        .sort(pl.col("position").fill_null(-1), "service")
        .group_by("run_uri", "output_key", maintain_order=True)
        .agg(pl.col("service").last().alias("_publisher"))
    )
    return (
        top.join(refs, on="_row", how="left")
        .join(parent, on=["run_uri", "service", "parent_position"], how="left")
        .with_columns(pl.coalesce("output_name", "_ref", "_parent_output").alias("target_output"),
                      # (the parent's output where the parent publishes it: a program's
                      # "`findings` (from researcher)")
                      pl.when(pl.col("output_name").is_null() & pl.col("_ref").is_null()
                              & pl.col("_parent_output").is_not_null())
                      .then(pl.col("_parent_service")).otherwise(pl.col("output_service"))
                      .alias("output_service"))
        .with_columns(output_key(pl.col("target_output")).alias("output_key"))
        .join(publisher, on=["run_uri", "output_key"], how="left")
        .join(programs.rename({"program": "service"}).with_columns(pl.lit(True).alias("_prog")),
              on=["run_uri", "service"], how="left")
        .with_columns(
            # a program's conditional names an output some service of the run published
            pl.when(pl.col("_prog").fill_null(False) & pl.col("output_service").is_null())
            .then(pl.coalesce("_publisher", "service"))
            .otherwise(pl.coalesce("output_service", "service")).alias("_output_service"))
        .sort("_row").drop("_row", "_ref", "_parent_output", "_parent_service", "_publisher",
                           "_prog")
    )


def _tokens(expr: pl.Expr, content: bool = False) -> pl.Expr:
    """Lowercase word tokens with a plural 's' dropped, for matching errors to conditions;
    with `content`, STOPWORDS left out and a word after a negation joined to it (`no_source`,
    see NEGATED)."""
    text = expr.fill_null("").str.to_lowercase()
    if not content:
        words = text.str.extract_all(r"[\p{L}\p{N}]+")
    else:
        words = text.str.replace_all(NEGATED, "no_${1}").str.extract_all(r"[\p{L}\p{N}_]+") \
            .list.eval(pl.element().filter(~pl.element().is_in(STOPWORDS)))
    return words.list.eval(pl.element().str.replace(r"(\w\w)s$", "$1")).list.unique()


def _conditionals(frame: pl.LazyFrame, services: pl.LazyFrame) -> pl.LazyFrame:
    """Decide, per conditional clause, whether its condition was triggered in this run
    (`services`: the services' rows, with `service_kind`, the errors and `declared_errors`).

    Error conditionals of an errored service are matched to the error by shared words
    ('no-results' ~ 'if no sources or results are found'); the best-matching ones trigger,
    and when none shares a word, every error conditional of the service triggers. A
    program errs by its services' errors: each of its conditionals that shares a word with
    the name or the error of a service that errored triggers ("if the fact-checker fails",
    "if fact-checking finds no sources" for the fact-checker's `no-results`; not for the
    critic's `empty-input`), and a declared error among them opens its degraded path. An
    error the log records without a name (`---error … timeout`) triggers only the
    conditionals that share a word with its message. A service that did not err meets a
    condition its log note names, or another service's error its error conditional names
    (see `quiet` below).
    """
    cond = pl.col("condition").fill_null("")
    declared = pl.col("declared_errors").list.eval(
        pl.element().str.to_lowercase().str.replace_all(r"[\s_\-]+", "-")
    ).list.contains(pl.col("error_name").fill_null("").str.to_lowercase()
                    .str.replace_all(r"[\s_\-]+", "-")).fill_null(False)
    # an error the log records without a name is matched by the words of its message
    own = _tokens(pl.coalesce("error_name", "error_detail"))
    # per run, the words of its errored services (their names and errors) and whether one's
    # error is declared: the program's (read from the services, not the clause frame, which
    # a plan of its own would compute twice)
    errored = (pl.col("service_kind") == "service") & pl.col("errored").fill_null(False)
    by_run = (
        services.filter(errored)
        .select("run_uri", pl.concat_list(_tokens(pl.col("service")), own).alias("_words"),
                declared.alias("_declared"),
                pl.format("`{}` erred ('{}')", "service",
                          pl.coalesce("error_name", pl.lit("unnamed"))).alias("_error"))
        .group_by("run_uri")
        .agg(pl.col("_words").list.explode(keep_nulls=False, empty_as_null=False).unique()
             .alias("_run_words"),
             pl.col("_declared").any().alias("_run_declared"),
             pl.col("_error").alias("_run_errors"))
        # the words another service's conditional may share (once a run, not once a clause)
        .with_columns(pl.col("_run_words").list.eval(
            pl.element().filter(~pl.element().is_in(STOPWORDS))).alias("_run_content_words"))
    )
    frame = frame.join(by_run, on="run_uri", how="left")
    program = pl.col("service_kind") == "program"
    words = pl.when(program).then(pl.concat_list(own, pl.col("_run_words").fill_null([])))
    overlap = words.otherwise(own).list.set_intersection(_tokens(pl.col("condition"))).list.len()
    is_error_kind = cond.str.contains(ERROR_WORDS) | (overlap > 0)
    frame = frame.with_columns(
        pl.when(pl.col("kind") != "conditional").then(None)
        .when(is_error_kind).then(pl.lit("error")).otherwise(pl.lit("branch"))
        .alias("condition_kind"),
        pl.when(pl.col("kind") == "conditional").then(overlap).alias("_overlap"),
    )
    # A service that did not error may still have met a condition: the log's note after its
    # mark says so ("⊘ (deferred: no blocker/major comments …)" for "if no blocker or major
    # comments exist"), naming a state the condition asks about (STATE_WORDS, or a word a
    # negation governs; of a condition naming none, any word of it), or another service's
    # error does, sharing a word with an error conditional as it would with the program's
    # ("if fact-checking finds no sources" for the fact-checker's `no-results`).
    quiet = ((pl.col("service_kind") == "service") & ~pl.col("errored")
             & (pl.col("kind") == "conditional"))
    claims = _tokens(pl.col("condition"), content=True)
    states = claims.list.eval(pl.element().filter(
        pl.element().str.starts_with("no_") | pl.element().is_in(STATE_WORDS)))
    said = _tokens(pl.col("log_note"), content=True)
    noted = quiet & pl.col("log_note").is_not_null() & (
        pl.when(states.list.len() > 0).then(said.list.set_intersection(states))
        .otherwise(said.list.set_intersection(claims)).list.len() > 0)
    heard = quiet & (pl.col("condition_kind") == "error") & (
        pl.col("_run_content_words").fill_null([])
        .list.set_intersection(_tokens(pl.col("condition"))).list.len() > 0)
    frame = frame.with_columns(noted.alias("_noted"), heard.alias("_heard"))
    best = pl.col("_overlap").filter(pl.col("condition_kind") == "error").max().over(
        "run_uri", "service")
    triggered = (
        pl.when(pl.col("_noted") | pl.col("_heard")).then(True)
        .when(pl.col("condition_kind") != "error").then(None)
        .when(~pl.col("errored")).then(False)
        # each of a program's conditionals names the failure it covers (of one service or
        # another, several may have failed), and an unnamed error triggers only those that
        # share a word with its message: one sharing no word is not what happened
        .when(program | pl.col("error_name").is_null()).then(pl.col("_overlap") > 0)
        .otherwise(pl.col("_overlap") == best)
    )
    frame = frame.with_columns(
        triggered.alias("triggered"),
        (pl.col("errored") & (declared | (program & pl.col("_run_declared").fill_null(False))))
        .alias("error_declared"),
    )
    # What triggered a conditional: its service's error, the log's note, others' errors.
    trigger = (
        pl.when((pl.col("kind") != "conditional") | ~pl.col("triggered").fill_null(False))
        .then(None)
        .when(pl.col("errored"))
        .then(pl.format("error '{}'", ERROR))
        .when(pl.col("_noted"))
        .then(pl.format("the log's note “{}”", pl.col("log_note")
                        .str.replace(r"^\((.*)\)$", "$1").str.slice(0, 200)))
        .otherwise(pl.col("_run_errors").list.join(", "))
    )
    frame = frame.with_columns(trigger.alias("trigger"))
    # An errored service with a declared error and a triggered conditional is graded on its
    # degraded path: its primary ensures are not held against it. So is a service the log
    # marks ⊘ (terminated or deferred) whose conditional met what happened.
    degraded = (
        ((pl.col("triggered").fill_null(False) & pl.col("error_declared"))
         | ((pl.col("_noted") | pl.col("_heard")) & (pl.col("log_status") == "terminated")))
        .any().over("run_uri", "service")
    )
    on_path = degraded & (pl.col("kind") != "conditional")
    return frame.with_columns(
        on_path.alias("on_degraded_path"),
        # (on its degraded path, a primary ensures says what set it aside)
        pl.when(on_path).then(pl.col("trigger").drop_nulls().first().over("run_uri", "service"))
        .otherwise(pl.col("trigger")).alias("trigger"),
    ).drop("_overlap", "_run_words", "_run_content_words", "_run_declared", "_run_errors",
           "_noted", "_heard")
