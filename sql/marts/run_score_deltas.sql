-- run_score_deltas: one row per pair of grader ids × run graded under both from the same
-- files (paired_runs).
--   score_delta = head_score - base_score (overall_score; null when either is null).
--   verdict_changed = the run's overall_verdict differs between the two ids.
--   outcome_changed = its outcome_verdict (failed > undecided > passed: a moltzap ledger's
--                     own verdict) differs between the two ids.
-- Reads: paired_runs, run_scores.

with

compared as (
    select base_grader_id, head_grader_id, run_uri
    from paired_runs
    where same_files
),

scores as (
    select grader_id, run_id, run_uri, program, overall_score, overall_verdict, outcome_verdict
    from run_scores
),

paired as (
    select
        compared.base_grader_id,
        compared.head_grader_id,
        base.run_id,
        base.run_uri,
        base.program,
        base.overall_score as base_score,
        head.overall_score as head_score,
        base.overall_verdict as base_verdict,
        head.overall_verdict as head_verdict,
        base.outcome_verdict as base_outcome,
        head.outcome_verdict as head_outcome
    from compared
    inner join scores as base
        on base.grader_id = compared.base_grader_id and base.run_uri = compared.run_uri
    inner join scores as head
        on head.grader_id = compared.head_grader_id and head.run_uri = base.run_uri
)

select
    base_grader_id,
    head_grader_id,
    run_id,
    run_uri,
    program,
    base_score,
    head_score,
    head_score - base_score as score_delta,
    base_verdict,
    head_verdict,
    base_verdict <> head_verdict as verdict_changed,
    base_outcome,
    head_outcome,
    base_outcome <> head_outcome as outcome_changed
from paired
order by base_grader_id, head_grader_id, run_uri
