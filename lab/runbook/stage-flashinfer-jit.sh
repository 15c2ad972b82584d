#!/usr/bin/env bash
# Moved to lab/flashinfer.py (`python -m lab flashinfer-jit REL`); kept so that the command lines
# recorded in docs/ still run, MODULE, SAME_AS, PY, WORK, MAX_JOBS and CUDA_HOME included.
cd "$(dirname "$0")/../.." && exec python3 -m lab flashinfer-jit "$@"
