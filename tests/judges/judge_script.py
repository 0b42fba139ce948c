"""A deterministic judge for the tests, run as `--judge-cmd`.

Rule: an output holding the word BAD fails its clause (quoting that line); any other output
passes (quoting its first line), confidence 80. `--mode` makes it misbehave instead, and
`--log FILE` appends one line per process and per request it receives, so tests count what
rungrade really sent.
"""

import argparse
import json
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="rule",
                    choices=["rule", "crash", "sleep", "garbage", "malformed", "misquote",
                             "unsure", "runaway", "separators"])
parser.add_argument("--log")
args = parser.parse_args()

requests = [json.loads(line) for line in sys.stdin if line.strip()]
if args.log:
    with open(args.log, "a", encoding="utf-8") as log:
        log.write(json.dumps({"process": len(requests)}) + "\n")
        for r in requests:
            log.write(json.dumps({"request": r}) + "\n")


def rule(request: dict) -> dict:
    lines = [ln.strip() for ln in request["output"].splitlines() if ln.strip()]
    bad = [ln for ln in lines if "BAD" in ln.split()]
    if bad:
        return {"id": request["id"], "outcome": "failed", "confidence": 80, "evidence": bad[0],
                "rationale": "the output says BAD"}
    return {"id": request["id"], "outcome": "passed", "confidence": 80, "evidence": lines[0],
            "rationale": "no BAD in the output"}


if args.mode == "sleep":
    time.sleep(60)
if args.mode == "runaway":  # a judge stuck printing (its answers would never come)
    line = "not an answer " * 100 + "\n"
    while True:
        sys.stdout.write(line)
for i, request in enumerate(requests):
    if args.mode == "crash" and i == 1:
        sys.stdout.flush()
        print("judge blew up on the second request", file=sys.stderr)
        sys.exit(3)
    if args.mode == "garbage":
        print("certainly! here is my verdict: PASSED")
        continue
    answer = rule(request)
    if args.mode == "malformed":
        answer["confidence"] = 150
    if args.mode == "misquote":
        answer["evidence"] = "a sentence that the output never contained"
    if args.mode == "separators":  # valid JSON Lines, written raw, as ensure_ascii=False does
        answer["rationale"] += " \u2028 and \u0085 and \u2029"
        print(json.dumps(answer, ensure_ascii=False), flush=True)
        continue
    if args.mode == "unsure":  # undecided: every other one "quoting" what is not there
        answer["outcome"] = "undecided"
        if i % 2 == 0:
            answer["evidence"] = "a sentence that the output never contained"
    print(json.dumps(answer), flush=True)
