-- paired_runs: one row per ordered pair of distinct grader ids × run graded (not refused)
-- under both. A grader version is compared with another on the same files only: a run that
-- changed between its two grades (an output rewritten after the older id last graded it)
-- would show the change of its files as the grader's doing.
--   same_files = the run's fingerprint (its file names, sizes and mtimes) is the same in
--   both grades; the diff marts compare these runs only. A judge's question left unanswered
--   marks the fingerprint ('~unjudged', to grade the run again): the files are the same.
-- Reads: runs.

with

graded as (
    select grader_id, run_uri, regexp_replace(fingerprint, '~unjudged$', '') as fingerprint
    from runs
    where status = 'graded'
)

select
    base.grader_id as base_grader_id,
    head.grader_id as head_grader_id,
    base.run_uri,
    base.fingerprint = head.fingerprint as same_files
from graded as base
inner join graded as head
    on base.run_uri = head.run_uri and base.grader_id <> head.grader_id
order by base_grader_id, head_grader_id, base.run_uri
