from pipeline.sources.state_log import parse_error_file, parse_state_log
from pipeline.sources.vm_log import parse_vm_log

LOG = """# run:20260317-143052-a7b3c9 deep-research
program: research/deep-research
1→ [input] question ✓
2→ researcher ✓
3→ ∥start critic,fact-checker
3a→ critic ok
3b→ fact-checker ✗ no-results (after 3 searches)
3→ ∥done
4-> [vm-action] checkpoint ✓
5-> writer ⊘ (deferred)
6→ editor
---error 2026-03-17T14:35:00Z editor timed out
---resume
---end 2026-03-17T14:35:22Z
"""


def test_statuses_marks_and_tags():
    log = parse_state_log(LOG)
    assert log.run_id == "20260317-143052-a7b3c9" and log.program == "deep-research"
    status = {name: (s.status, s.error_name) for name, s in log.service_status().items()}
    assert status == {
        "researcher": ("completed", None), "critic": ("completed", None),
        "fact-checker": ("errored", "no-results"), "writer": ("terminated", None),
        "editor": ("started", None),
    }
    assert log.service_status()["fact-checker"].note == "(after 3 searches)"
    assert log.completed and log.ended_at == "2026-03-17T14:35:22Z"
    assert log.errors == ["editor timed out"] and log.resumed == 1


def test_complete_only_when_last_line_is_end():
    assert not parse_state_log(LOG.replace("---end 2026-03-17T14:35:22Z\n", "")).completed
    assert not parse_state_log(LOG + "7→ late ✓\n").completed
    assert parse_state_log(LOG + "\n\n   \n").completed


def test_error_file():
    err = parse_error_file("# Error: no-results\n\nNo relevant sources found for the topic.\n")
    assert err.name == "no-results"
    assert err.detail == "No relevant sources found for the topic."
    assert parse_error_file("just text").name is None


# Lines that made a parser's regex take time quadratic in their length: a long run of spaces
# that a pattern starting with `\s` (or a lazy group before `\s*`) scanned again from each of
# its spaces. 400,000 spaces took the patterns before from 4 minutes to an hour, holding a
# worker (and its grade) all that time. (test_linear_parsers.py holds the other parsers' lines.)
HOSTILE_PARSE = r'''
import sys
from pipeline.sources.manifest import parse_manifest
from pipeline.sources.state_log import parse_error_file, parse_state_log

blank = " " * 400_000
log = parse_state_log(f"# run:r p\n1→ writer{blank}x\n2→ editor ✗ boom{blank}x\n3→ a{blank}(b ✓\n"
                      "---end 2026-11-12T03:20:11Z\n")
assert [s.name for s in log.steps] == ["writer" + blank + "x", "editor", "a"], log.steps
assert log.steps[1].error_name == "boom" + blank + "x" and log.completed
assert parse_error_file(f"# Error: a{blank}b\n").name == f"a{blank}b"
manifest = parse_manifest(f"# Manifest: p\n\n## Services\n\n### writer{blank}x\n"
                          f"a{blank}x:\n- errors: boom{blank}x\n")
assert [s.name for s in manifest.services] == [f"writer{blank}x"], manifest.services
print("parsed")
'''


def test_hostile_lines_parse_in_linear_time(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", HOSTILE_PARSE], cwd=repo, capture_output=True,
                          text=True, timeout=120)  # (each took seconds to an hour before)
    assert done.returncode == 0 and done.stdout.strip() == "parsed", done.stderr[-2000:]


def test_an_error_line_keeps_its_message_not_its_time():
    # `---error TIMESTAMP msg`: the time's digits matched conditions ("if more than 14
    # sources fail") as words of the message
    log = parse_state_log("# run:r p\n1→ a ✓\n---error 2026-03-17T14:14:02Z disk full\n"
                          "---error 2026-03-17 09:30:02+01:00 quota\n---error timeout\n"
                          "---end 2026-03-17T14:15:00Z\n")
    assert log.errors == ["disk full", "quota", "timeout"]


def test_a_note_after_an_error_is_no_part_of_its_name():
    # v18 took the whole line for the name: no declared error matched it, and the service's
    # primary ensures were held against it rather than its degraded path
    text = ("# run:20261112-000001-x demo\n1→ a ✗ no-results — search returned 0 hits\n"
            "2→ b ✗ rate-limited: 429 from the API\n3→ c ✗ no-results (after 3 searches)\n"
            "4→ d ✗ timeout\n---end 2026-11-12T03:20:11Z\n")
    steps = {name: (s.error_name, s.note) for name, s in parse_state_log(text)
             .service_status().items()}
    assert steps == {"a": ("no-results", "search returned 0 hits"),
                     "b": ("rate-limited", "429 from the API"),
                     "c": ("no-results", "(after 3 searches)"), "d": ("timeout", None)}
    vm = parse_vm_log("---\nstatus: failed\n---\n### researcher — failed (no-results: search "
                      "returned 0 hits)\n")
    step = vm.service_status()["researcher"]
    assert (step.status, step.error_name) == ("errored", "no-results")
