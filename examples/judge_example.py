"""A rungrade judge: one JSON request per stdin line in, one JSON answer per line out."""
import json
import sys

for line in sys.stdin:
    req = json.loads(line)
    words = {w.strip(".,:;`*\"").lower() for w in req["clause"].split() if len(w) > 5}
    hits = [ln.strip() for ln in req["output"].splitlines() if any(w in ln.lower() for w in words)]
    print(json.dumps({"id": req["id"], "outcome": "passed" if hits else "undecided",
                      "confidence": 60 if hits else 0, "evidence": hits[0] if hits else "",
                      "rationale": f"{len(hits)} output line(s) use the clause's key words"}))
