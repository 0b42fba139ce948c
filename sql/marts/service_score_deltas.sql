-- service_score_deltas: one row per pair of grader ids × run × service scored under both,
-- of the runs both graded from the same files (paired_runs).
--   score_delta = head_score - base_score (service_score; null when either is null).
--   passes_changed = whether the service passes differs between the two ids.
-- Reads: paired_runs, service_scores.

with

compared as (
    select base_grader_id, head_grader_id, run_uri
    from paired_runs
    where same_files
),

scores as (
    select grader_id, run_id, run_uri, service, service_score, passes
    from service_scores
),

paired as (
    select
        compared.base_grader_id,
        compared.head_grader_id,
        base.run_id,
        base.run_uri,
        base.service,
        base.service_score as base_score,
        head.service_score as head_score,
        base.passes as base_passes,
        head.passes as head_passes
    from compared
    inner join scores as base
        on base.grader_id = compared.base_grader_id and base.run_uri = compared.run_uri
    inner join scores as head
        on head.grader_id = compared.head_grader_id
        and head.run_uri = base.run_uri
        and head.service = base.service
)

select
    base_grader_id,
    head_grader_id,
    run_id,
    run_uri,
    service,
    base_score,
    head_score,
    head_score - base_score as score_delta,
    base_passes,
    head_passes,
    base_passes is distinct from head_passes as passes_changed
from paired
order by base_grader_id, head_grader_id, run_uri, service
