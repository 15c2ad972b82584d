"""Orchestrate a verify session: model, engines in subprocesses, the reference, the verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import BackportError, UsageError
from . import drafts, model, scenarios
from .oracle import Reference, judge

# The plain engine's worst regret is bf16 noise at near-ties; twice that, and at least one nat,
# separates it from a corrupted state (whose choices sit several nats down). A baseline worse than
# the cap means vLLM and the reference disagree without speculation: nothing can be concluded.
CALIBRATION_FACTOR, CALIBRATION_FLOOR, CALIBRATION_CAP = 2.0, 1.0, 3.0


def calibrated_threshold(baseline_worst: float) -> float:
    return max(CALIBRATION_FLOOR, CALIBRATION_FACTOR * baseline_worst)


@dataclass(frozen=True)
class Plan:
    batches: tuple[int, ...]
    modes: tuple[str, ...]  # "eager", "graphs"
    presets: tuple[str, ...]
    tp: int
    threshold: float | None  # None: calibrated on this session's baselines
    work: Path
    additional_config: dict
    kv_cache: str = "auto"  # or a TurboQuant preset: baselines and speculative runs alike


def check_kv_cache(vllm_version: str, kv_cache: str) -> None:
    """Refuse before any engine starts what this vLLM would refuse after loading the model."""
    from packaging.version import Version

    if kv_cache in scenarios.TURBOQUANT and Version(vllm_version) < Version(scenarios.TURBOQUANT_ON_HYBRIDS_FROM):
        raise UsageError(f"vLLM {vllm_version} refuses TurboQuant KV on hybrid models "
                         f"(from {scenarios.TURBOQUANT_ON_HYBRIDS_FROM} it accepts them); verify's model is hybrid")


def preflight() -> str:
    """The vLLM version verify will run; a one-line error when this machine cannot run it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        vllm_version = version("vllm")
    except PackageNotFoundError:
        raise UsageError("verify needs vLLM installed in this Python (run it in the image or after apply.py)")
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"verify needs torch and transformers: {exc}")
    if not torch.cuda.is_available():
        raise UsageError("verify needs a CUDA GPU; none is visible")
    return vllm_version


# The engine runs as `python -m vllm_backports.verify.engine`; from an image, apply.py is started by
# path from any directory, so the child must be told where this package lives.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def engine_env(script_path: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    env.pop(drafts.ENV, None)
    if script_path is not None:
        env[drafts.ENV] = str(script_path)
    return env


def run_engine(spec: dict, work: Path, tag: str, script: drafts.Script | None) -> dict:
    spec_path, out_path, log_path = work / f"{tag}.spec.json", work / f"{tag}.out.json", work / f"{tag}.log"
    spec_path.write_text(json.dumps(spec))
    script_path = None
    if script is not None:
        script_path = work / f"{tag}.drafts.json"
        script_path.write_text(script.to_json())
    env = engine_env(script_path)
    with open(log_path, "w") as log:
        rc = subprocess.run([sys.executable, "-m", "vllm_backports.verify.engine", str(spec_path), str(out_path)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0 or not out_path.exists():
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise BackportError(f"engine run {tag} failed (exit {rc}): {tail[0][:300]}; full log: {log_path}")
    return json.loads(out_path.read_text())


def exercised(script: drafts.Script, outputs: list[list[int]]) -> dict[str, int]:
    """Totals of drafts.transitions over every request of one run."""
    total: dict[str, int] = {}
    for i, out in enumerate(outputs):
        for key, n in drafts.transitions(script.replay(i, out)).items():
            total[key] = total.get(key, 0) + n
    return total


def execute(plan: Plan, progress: Callable[[str], None]) -> dict:
    vllm_version = preflight()
    check_kv_cache(vllm_version, plan.kv_cache)
    plan.work.mkdir(parents=True, exist_ok=True)
    model_dir = model.write_model(plan.work / "model", mtp=bool(scenarios.NEEDS_MTP_LAYER & set(plan.presets)))
    vocab = model.vocab_size()
    runs: list[dict] = []
    for batch in plan.batches:
        shape = scenarios.SHAPES[batch]
        ps = scenarios.prompts(shape.prompts, vocab)
        for mode in plan.modes:
            extra = {"additional_config": plan.additional_config}
            if plan.kv_cache != "auto":
                extra["kv_cache_dtype"] = plan.kv_cache
            eager = mode == "eager"
            tag = f"b{batch}-{mode}-baseline"
            progress(f"engine: {tag}")
            base = run_engine(shape.engine_spec(str(model_dir), ps, eager, plan.tp, extra), plan.work, tag, None)
            runs.append({"scenario": "baseline", "batch": batch, "mode": mode, "prompts": ps,
                         "baseline_tokens": base["tokens"], **base})
            for preset in plan.presets:
                tag = f"b{batch}-{mode}-{preset}"
                progress(f"engine: {tag}")
                cfg = dict(extra, speculative=scenarios.PRESETS[preset])
                script = None
                if preset in scenarios.SCRIPTED:
                    script = drafts.Script(ps, base["tokens"], k=cfg["speculative"]["num_speculative_tokens"], vocab=vocab)
                out = run_engine(shape.engine_spec(str(model_dir), ps, eager, plan.tp, cfg), plan.work, tag, script)
                # A model drafter's proposals are not known offline: vLLM's own counters stand in.
                hit = exercised(script, out["tokens"]) if script else out.get("spec_counters")
                runs.append({"scenario": preset, "batch": batch, "mode": mode, "prompts": ps, "exercised": hit,
                             "baseline_tokens": base["tokens"], **out})
    progress("reference: float32 teacher forcing")
    ref = Reference(str(model_dir))
    scored = [(r, [ref.regrets(p, t) for p, t in zip(r["prompts"], r["tokens"])]) for r in runs]
    noise = max((x for r, regrets in scored if r["scenario"] == "baseline" for seq in regrets for x in seq), default=0.0)
    threshold = plan.threshold if plan.threshold is not None else calibrated_threshold(noise)
    rows = []
    for r, regrets in scored:
        verdict = judge(regrets, threshold)
        same = sum(a == b for a, b in zip(r["tokens"], r["baseline_tokens"], strict=True))
        rows.append({"scenario": r["scenario"], "batch": r["batch"], "mode": r["mode"], **verdict.as_dict(),
                     "exercised": r.get("exercised"),
                     "same_as_baseline": same, "tokens_per_s": round(r["tokens_per_s"], 1),
                     "regrets": [[round(x, 3) for x in s] for s in regrets]})
    calibration = [x for x in rows if x["scenario"] == "baseline"]
    return {"vllm": vllm_version, "kv_cache": plan.kv_cache, "threshold": threshold, "baseline_worst_regret": round(noise, 3), "tp": plan.tp,
            "calibrated": all(x["errors"] == 0 for x in calibration) and noise <= CALIBRATION_CAP,
            "passed": all(x["errors"] == 0 for x in rows), "rows": rows}
