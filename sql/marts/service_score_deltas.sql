-- service_score_deltas: one row per pair of grader ids × run × service scored under both.
--   score_delta = head_score - base_score (service_score; null when either is null).
--   passes_changed = whether the service passes differs between the two ids.
-- Reads: grader_pairs, service_scores.

with

pairs as (
    select base_grader_id, head_grader_id
    from grader_pairs
),

scores as (
    select grader_id, run_id, run_uri, service, service_score, passes
    from service_scores
),

paired as (
    select
        pairs.base_grader_id,
        pairs.head_grader_id,
        base.run_id,
        base.run_uri,
        base.service,
        base.service_score as base_score,
        head.service_score as head_score,
        base.passes as base_passes,
        head.passes as head_passes
    from pairs
    inner join scores as base
        on base.grader_id = pairs.base_grader_id
    inner join scores as head
        on head.grader_id = pairs.head_grader_id
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
