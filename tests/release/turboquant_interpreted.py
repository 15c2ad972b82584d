"""turboquant-spec-decode's decode kernel on the CPU, under Triton's interpreter, for the installed
vLLM release: the patched copies of its decode kernel and backend (loaded beside the pristine
install), the expanded verify rows against the release's own per-request path (bit-exact) and
against float32 attention (causal). The kernel the GPU runs, interpreted: no GPU, no CUDA graphs.

    TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= python tests/release/turboquant_interpreted.py PRESET...

Both variables must be set before vLLM is imported (the second keeps vLLM from swapping Triton
for a placeholder when no GPU driver is active), hence a script of its own, run by
test_turboquant_interpreted.py. Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1])]

import torch  # noqa: E402

from tests.release import installed  # noqa: E402
from turboquant_case import Case, builder, check_causal, rel  # noqa: E402

DECODE = "vllm/v1/attention/ops/triton_turboquant_decode.py"
BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"


def main(presets: list[str]) -> dict:
    from vllm.triton_utils import HAS_TRITON

    if not HAS_TRITON:
        raise SystemExit("vLLM put a placeholder in Triton's place: run with TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES=")
    _torch, release = installed.served("turboquant-spec-decode")
    out = {"vllm": release.version, "presets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        ops = installed.load(Path(tmp), release, DECODE, True)
        attn = installed.load(Path(tmp), release, BACKEND, True)
        for preset in presets:
            # Short contexts: the interpreter runs every program of the grid in Python.
            case = Case(ops, attn, preset, context=[9, 2, 20], seed=1, device="cpu")
            rows, lens = case.expanded(builder(attn, "cpu"), case.seq_lens)
            got = case.decode(case.q, case.block_table, lens, rows)
            causal, full = case.dense(causal=True), case.dense(causal=False)
            check_causal(preset, got, causal, full)
            out["presets"][preset] = {"same_as_per_request": bool(torch.equal(got, case.per_request())),
                                      "rel_causal": round(rel(got, causal), 4), "rel_full": round(rel(got, full), 4)}
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
