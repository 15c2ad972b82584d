#!/usr/bin/env bash
# The runbook's steps moved to Python: `python3 -m lab.steps STEP ...` (lab/steps.py lists them;
# lab/chain.py, lab/sites.py, lab/verifies.py, lab/bench_queue.py and lab/model.py hold them).
# This keeps the command lines of earlier runs, recorded in docs/, working from the repo root:
#   REL=0.26.0 bash lab/runbook/steps.sh setup   is   REL=0.26.0 python3 -m lab.steps setup
cd "$(dirname "$0")/../.." && exec python3 -m lab.steps "$@"
