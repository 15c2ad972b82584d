#!/usr/bin/env bash
# Moved to lab/flashinfer.py (`python -m lab flashinfer REL`); kept so that the command lines
# recorded in docs/ still run, PART_MB included.
cd "$(dirname "$0")/../.." && exec python3 -m lab flashinfer "$@"
