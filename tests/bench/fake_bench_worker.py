"""A stand-in for vllm_backports.bench.worker speaking its protocol without vLLM: an engine with
speculation decodes twice as fast as one without; every request is logged beside the spec, and
"die_at_round" in the spec ends the process at that round (an engine crash). With "report_cores"
its ready reply says the cores it may run on and those of a process it starts (as vLLM starts its
EngineCore)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    spec_path = Path(sys.argv[1])
    spec = json.loads(spec_path.read_text())
    log = spec_path.with_suffix(".ops")
    print("engine starting (a line of vLLM's log)", file=sys.stderr)
    ready = {"ok": True, "start_s": 1.0, "engine": {"speculative": spec.get("speculative")}}
    if spec.get("report_cores"):
        child = "import json, os; print(json.dumps(sorted(os.sched_getaffinity(0))))"
        done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
        ready["cores"] = {"own": sorted(os.sched_getaffinity(0)), "child": json.loads(done.stdout)}
    print(json.dumps(ready), flush=True)
    rounds = 0
    for line in sys.stdin:
        op = json.loads(line)["op"]
        with open(log, "a") as f:
            f.write(op + "\n")
        if op == "stop":
            print(json.dumps({"ok": True}), flush=True)
            return 0
        out: dict = {}
        if op == "round":
            rounds += 1
            if spec.get("die_at_round") == rounds:
                print("CUDA error: an illegal memory access was encountered", file=sys.stderr)
                return 1
            decode = 0.6 if spec.get("speculative") else 1.1
            out = {
                "levels": {
                    str(lv): {
                        "requests": lv,
                        "max_tokens": spec["max_tokens"],
                        "tokens": 0,
                        "ttft_s": 0.1,
                        "decode_s": decode,
                        "decode_window": [time.time(), time.time()],
                        "drafts": 10 if spec.get("speculative") else None,
                        "accepted": 9 if spec.get("speculative") else None,
                    }
                    for lv in spec["levels"]
                }
            }
        elif op == "profile":
            out = {"trace": "x"}
        print(json.dumps({"ok": True, **out}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
