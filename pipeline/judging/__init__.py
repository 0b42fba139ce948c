"""Judges: settle the clauses code checks leave undecided, with a content-addressed cache.

`make_judge` builds the judge `rungrade grade --judge-cmd/--judge-url` uses; `Judge.settle`
is the step `grade_tables` runs between the code checks and the clause verdicts.
"""

from __future__ import annotations

import math
import os

from .answers import OUTCOMES, Answer, Failure
from .cache import JudgmentCache
from .command import CommandJudge
from .identity import JudgeConfigError, judged_grader_id
from .judge import Judge, JudgeStats
from .openai_compat import ChatJudge
from .prompt import TEMPLATE_VERSION, PromptTemplate, load_template

API_KEY_VARS = ("RUNGRADE_JUDGE_API_KEY", "OPENAI_API_KEY")


def make_judge(results_uri: str, *, command: str | None = None, url: str | None = None,
               model: str | None = None, name: str | None = None,
               api_key_env: str | None = None, max_calls: int | None = None,
               timeout: float = 120.0, concurrency: int = 4, batch_size: int | None = None,
               retries: int = 2, endpoint_url: str | None = None) -> Judge | None:
    """The judge the options describe (None when neither a command nor a URL is given), with
    its cache under `results_uri`; raises JudgeConfigError on options that cannot work."""
    for option, value in (("--judge-cmd", command), ("--judge-url", url)):
        if value is not None and not value.strip():  # (an unset variable in a script)
            raise JudgeConfigError(f"{option} is empty: give the judge's command or URL, or "
                                   "leave the option out to grade without a judge")
    if command and url:
        raise JudgeConfigError("give either --judge-cmd or --judge-url, not both")
    # (an option of the other judge would be ignored without a word)
    other = ((("--judge-model", model), ("--judge-api-key-env", api_key_env)) if command
             else (("--judge-batch-size", batch_size),) if url else ())
    if given := [opt for opt, value in other if value is not None]:
        raise JudgeConfigError(
            f"{given[0]} applies to --judge-url only: a --judge-cmd script picks its model and "
            "key itself; leave it out" if command else
            f"{given[0]} applies to --judge-cmd only (requests per judge process): a chat "
            "endpoint is sent one request per question; leave it out")
    if not command and not url:
        given = [opt for opt, value in (("--judge-model", model), ("--judge-name", name),
                                        ("--judge-api-key-env", api_key_env),
                                        ("--judge-max-calls", max_calls)) if value is not None]
        if given:
            raise JudgeConfigError(f"{given[0]} needs --judge-cmd or --judge-url")
        return None
    for option, value, least in (("--judge-timeout", timeout, 0.001),
                                 ("--judge-concurrency", concurrency, 1),
                                 ("--judge-batch-size", batch_size, 1),
                                 ("--judge-retries", retries, 0),
                                 ("--judge-max-calls", max_calls, 0)):
        if value is not None and not (math.isfinite(value) and value >= least):
            raise JudgeConfigError(f"{option} must be a number, at least {least:g}, got "
                                   f"{value}")
    if command:
        sized = {} if batch_size is None else {"batch_size": batch_size}
        client = CommandJudge(command, name=name, **sized)
    else:
        names = (api_key_env,) if api_key_env else API_KEY_VARS
        key = next((os.environ[v] for v in names if os.environ.get(v)), None)
        if api_key_env and key is None:
            raise JudgeConfigError(f"--judge-api-key-env {api_key_env}: that environment "
                                   "variable is not set")
        client = ChatJudge(url, model or "", name=name, api_key=key)
    client.check_ready()
    return Judge(client, JudgmentCache(results_uri, endpoint_url), max_calls=max_calls,
                 timeout=timeout, concurrency=concurrency, retries=retries)


__all__ = ["API_KEY_VARS", "OUTCOMES", "TEMPLATE_VERSION", "Answer", "ChatJudge",
           "CommandJudge", "Failure", "Judge", "JudgeConfigError", "JudgeStats",
           "JudgmentCache", "PromptTemplate", "judged_grader_id", "load_template",
           "make_judge"]
