"""A GPU evidence file as `apply.py verify --json` writes it, without a GPU: the rows as
verify/run.py execute() builds them (regrets left out, as the --json payload does), the verdicts
from verify/run.py conclude() itself, the machine as run.machine() reports it."""

from __future__ import annotations

import json
from pathlib import Path

from vllm_backports.verify.run import Plan, conclude, crashed_row

FIX = ["turboquant-spec-decode", "gdn-spec-state", "gdn-spec-state-v2-runner"]
SEQUENCES, MAX_TOKENS = 24, 128  # scenarios.SHAPES[16]


_UNRECORDED = object()
EXERCISED = {"accepted_drafts": 913, "accepted_then_no_drafts": 57, "partial_acceptance": 104, "steps": 1208}


def engine(release: str, backports: list[str] | None, preset: str | None, *, prefix_caching: bool = False,
           hits: int | None = None, patches=_UNRECORDED) -> dict:
    """verify/engine.py describe() of one engine; `patches` (its series digest) only where given,
    as files written before verify recorded it lack the key."""
    return {
        **({} if patches is _UNRECORDED else {"patches": patches}),
        "vllm": release, "backports": backports, "architecture": "Qwen3NextForCausalLM",
        "prefix_caching": prefix_caching, "mamba_cache_mode": "align" if prefix_caching else "none",
        "block_size": 144 if prefix_caching else 16, "kv_cache_dtype": "auto", "async_scheduling": preset == "mtp",
        "cudagraph_mode": "FULL_AND_PIECEWISE", "model_runner": "v1", "tp": 1,
        "speculative": None if preset is None else {"method": preset, "k": 3}, "gdn_prefill_backend": "triton",
        "prefix_cache": None if hits is None else {"queries": 4 * hits, "hits": hits},
    }


def row(scenario: str, site: str, errors: int, eng: dict | None, exercised: dict | None = EXERCISED) -> dict:
    bad = min(errors, SEQUENCES)
    return {"scenario": scenario, "site": site, "batch": 16, "mode": "graphs", "sequences": SEQUENCES,
            "tokens": SEQUENCES * MAX_TOKENS, "errors": errors, "worst_regret": 9.412 if errors else 0.418,
            "first_error_at": 17 if errors else None, "bad_sequences": bad,
            "exercised": None if scenario == "baseline" else exercised,
            "same_as_baseline": SEQUENCES - bad, "tokens_per_s": 812.4, "start_s": 41.3, "engine": eng}


def verify_json(release: str = "0.31.0", *, target_errors: int = 0, control_errors: int | None = 214,
                baseline_errors: int = 0, noise: float = 0.209, preset: str = "ngram",
                control_backports: list[str] | None = None, prompts: str = "random",
                prefix_caching: bool = False, hits: int | None = None, gpu: str = "NVIDIA H100 80GB HBM3",
                date: str = "2026-11-25T09:14:03Z", control_crashed: bool = False,
                target_backports: list[str] | None = None, target_patches=_UNRECORDED,
                exercised: dict | None = EXERCISED) -> dict:
    """One verify run at 16 a batch under graphs; control_errors None: no --control;
    control_crashed: the control's engine died (run.crashed_row); target_backports: what the
    target's engines carried (FIX unless given); target_patches: their engine.patches (absent,
    as before verify recorded it, unless given); exercised: each speculative row's."""
    plan = Plan(batches=(16,), modes=("graphs",), presets=(preset,), tp=1, threshold=None, work=Path("/tmp/v-gdn"),
                additional_config={"gdn_prefill_backend": "triton"}, prompt_set=prompts,
                control=None if control_errors is None else Path("/root/stage/raw"),
                gpu_memory_utilization=0.08, kv_cache_gib=2.0)
    on = dict(prefix_caching=prefix_caching)
    fix = FIX if target_backports is None else target_backports
    mine = dict(patches=target_patches)
    rows = [row("baseline", "target", baseline_errors, engine(release, fix, None, **on, **mine)),
            row(preset, "target", target_errors, engine(release, fix, preset, hits=hits, **on, **mine), exercised)]
    if control_crashed:
        rows.append({k: v for k, v in crashed_row({"scenario": preset, "site": "control", "batch": 16, "mode": "graphs",
                                                    "prompts": [[2]] * SEQUENCES, "crashed": "exit -6",
                                                    "backports": control_backports}).items()
                     if k != "regrets"})
    elif control_errors is not None:
        rows.append(row(preset, "control", control_errors,
                        engine(release, control_backports or [], preset, hits=hits, **on), exercised))
    result = {**conclude(rows, noise, max(1.0, 2 * noise), plan, release),
              "machine": {"gpu": gpu, "gpus": 1, "driver": "580.95.05", "cuda": "13.0", "torch": "2.13.0+cu130",
                          "transformers": "4.57.1", "python": "3.12.3", "arch": "x86_64", "date": date}}
    return {"command": "verify", **result}  # cli.verify_cmd's --json payload


def write(home: Path, release: str, name: str, data: dict | str) -> Path:
    path = home / "docs" / "evidence" / release / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2, sort_keys=True))
    return path
