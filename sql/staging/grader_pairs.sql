-- grader_pairs: every ordered pair of distinct grader ids that graded at least one run in
-- common. The diff marts (version_diffs, verdict_flips, run_score_deltas,
-- service_score_deltas, version_summary) hold one block of rows per pair: filter them on
-- base_grader_id and head_grader_id to compare two versions.
--   shared_runs = runs graded (not refused) under both ids from the same files: the runs
--   the diff marts compare (see paired_runs).
--   changed_runs = runs graded under both ids whose files changed between the two grades,
--   left out of the diff marts: grade the runs again under both ids to compare them.
--   base_first_batch / head_first_batch: the first batch each id committed (batch ids sort
--   by time; a compacted batch is named after the first it replaces), so
--   `where base_first_batch < head_first_batch` keeps old → new pairs only. Read from every
--   committed batch, not from the runs' latest rows: an id's first batch stays first once
--   its runs are graded again.
-- Reads: _commits (the committed batches: the catalog's table, or over the markers
-- `select batch_id, grader_id from read_json('RESULTS/_commits/*.json')`), paired_runs.

with

first_seen as (
    select grader_id, min(batch_id) as first_batch
    from _commits
    group by grader_id
),

shared as (
    select
        base_grader_id,
        head_grader_id,
        count(*) filter (where same_files) as shared_runs,
        count(*) filter (where not same_files) as changed_runs
    from paired_runs
    group by base_grader_id, head_grader_id
)

select
    shared.base_grader_id,
    shared.head_grader_id,
    shared.shared_runs,
    shared.changed_runs,
    base_seen.first_batch as base_first_batch,
    head_seen.first_batch as head_first_batch
from shared
inner join first_seen as base_seen on shared.base_grader_id = base_seen.grader_id
inner join first_seen as head_seen on shared.head_grader_id = head_seen.grader_id
order by shared.base_grader_id, shared.head_grader_id
