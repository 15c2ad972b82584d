"""`apply.py verify --model PATH`: speculative decoding judged on the user's own checkpoint, GPU
and prompts, under the model as this vLLM release serves it.

Engines run one at a time, each in a process of its own (engine.py, as for the tiny model), all
on this Python's vLLM except a control's speculative engines:

1. the plain engine (no speculation) decodes every prompt greedily: the baseline;
2. each speculative preset decodes them again (vLLM's own ngram proposer, and the checkpoint's
   MTP layers where it has them), on the target and, with --control, on the control site;
3. the reference: an engine of the same release without speculation, eager and without prefix
   caching, teacher-forced over every distinct (prompt, output) of 1 and 2 (teacher.py).

The regrets of the baseline's own tokens calibrate the threshold as the tiny model's float32
reference does (run.score); where the plain engine strays from its own prefill by more than
run.CALIBRATION_CAP, nothing is concluded. With --float32-reference (the tiny checkpoint written
by tokenizer.py) the same outputs are judged by transformers in float32 as well, and the two
references must agree on every verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BackportError, UsageError
from . import checkpoint, engine, prompts, run, scenarios
from .oracle import judge

# Presets a user's model runs: vLLM's own drafters, unscripted (scenarios.PRESETS' settings).
MODEL_PRESETS = ("ngram", "mtp")
MODEL_GPU_MEMORY_UTILIZATION = 0.90
MAX_TOKENS = 256
# Room past the longest prompt and its output: a speculative step looks k tokens ahead, and the
# reference generates one token after the longest sequence.
LENGTH_SLACK = 8
# The reference takes log-probabilities over the whole vocabulary at every prompt position of a
# step: a step of 2048 positions of a 150k vocabulary holds about 2.5 GB of float32 logits and
# their log-softmax, which has to fit beside the engine's share of the GPU.
REFERENCE_BATCHED_TOKENS = 2048
REFERENCE_MAX_SEQS = 16
# The float32 cross-check loads the whole checkpoint in float32 on the first GPU: for the tiny
# model, refused above this much weight on disk.
FLOAT32_MAX_WEIGHT_BYTES = 2 * 2**30
VLLM_REFERENCE = "vllm-teacher-forced"


@dataclass(frozen=True)
class ModelPlan:
    model: Path
    prompts: Path | None  # None: the built-in set
    presets: tuple[str, ...]  # (): ngram, and mtp where the checkpoint has MTP layers
    batch: int
    modes: tuple[str, ...]
    tp: int
    threshold: float | None
    work: Path
    additional_config: dict
    kv_cache: str = "auto"
    prefix_caching: str = "default"
    async_scheduling: str = "default"
    control: Path | None = None
    gpu_memory_utilization: float = MODEL_GPU_MEMORY_UTILIZATION
    kv_cache_gib: float | None = None
    max_tokens: int = MAX_TOKENS
    max_num_batched_tokens: int | None = None  # None: the release's own budget
    float32_reference: bool = False


def check_model_options(
    *,
    model_class: str | None,
    batches: tuple[str, ...],  # --batch as given, each one a word
    prompt_set: str | None,
    calibrate_kv: str | None,
    rounds: int,
    prompt_logprobs: bool,
    check_accepted_counts: bool,
    count_align_shifts: bool = False,
    model_runner: str = "default",
    output_logprobs: bool = False,
) -> Path | None:
    """Refuse the command line's options that a ModelPlan cannot take: those of the tiny model and
    its float32 reference, more than one batch size, a tiny model's prompt set for a prompts file.
    `model_class`: as given on the command line, None when left at its default. Returns the
    prompts file, None for the built-in set."""
    if calibrate_kv is not None:
        raise UsageError("--calibrate-kv goes with the tiny model's prompt sets, not with --model")
    for name, value in (
        ("--rounds", rounds if rounds != 1 else None),
        ("--prompt-logprobs", prompt_logprobs or None),
        ("--output-logprobs", output_logprobs or None),
        ("--check-accepted-counts", check_accepted_counts or None),
        ("--count-align-shifts", count_align_shifts or None),
        # with --model the drafts are the drafter's own; the runner stays the release's choice
        ("--model-runner", model_runner if model_runner != "default" else None),
    ):
        if value is not None:
            raise UsageError(f"{name} goes with the tiny model (the float32 reference), not with --model")
    if model_class is not None:
        raise UsageError("--model-class picks the tiny model's family; with --model the checkpoint decides")
    if len(set(batches)) > 1:
        raise UsageError("--model runs one batch size: give --batch once")
    if prompt_set is None:
        return None
    prompts_file = Path(prompt_set)
    if prompt_set in scenarios.PROMPT_SETS and not prompts_file.exists():
        raise UsageError(
            f"--prompts {prompt_set} is one of the tiny model's prompt sets; with --model, --prompts is a "
            "JSONL file of prompts"
        )
    return prompts_file


@dataclass(frozen=True)
class Prepared:
    """What the checks before any engine found: the checkpoint, the prompts as token ids."""

    checkpoint: checkpoint.Checkpoint
    source: str
    records: list[prompts.Record]
    prompts: list[list[int]]
    presets: tuple[str, ...]
    stop_token_ids: list[int]
    max_model_len: int


def prepare(plan: ModelPlan) -> Prepared:
    """Every check that needs no GPU and writes nothing: the prompts file, the checkpoint, the
    presets it can run, the prompts through its tokenizer and chat template, their lengths."""
    for preset in plan.presets:
        if preset not in MODEL_PRESETS:
            raise UsageError(f"--preset {preset}: with --model, one of {', '.join(MODEL_PRESETS)}")
    source, records = prompts.load(plan.prompts)
    ck = checkpoint.inspect(plan.model)
    presets = plan.presets or (("ngram", "mtp") if ck.mtp_layers else ("ngram",))
    if "mtp" in presets and not ck.mtp_layers:
        raise UsageError(
            f"--preset mtp: --model {plan.model} has no MTP layer "
            f"(its config sets none of {', '.join(checkpoint.MTP_KEYS)})"
        )
    if plan.float32_reference:
        if ck.model_class is None:
            raise UsageError(
                f"--float32-reference: {ck.architecture} is not one of the tiny model's classes "
                "(the float32 cross-check is for the checkpoint `python -m vllm_backports.verify.tokenizer` writes)"
            )
        if ck.weight_bytes > FLOAT32_MAX_WEIGHT_BYTES:
            raise UsageError(
                f"--float32-reference: {ck.weight_bytes / 2**30:.1f} GiB of weights is too much to hold in float32 "
                "(the cross-check is for the tiny model)"
            )
    tokenizer, template = prompts.load_tokenizer(plan.model)
    where = f"--prompts {plan.prompts}" if plan.prompts else f"{prompts.BUILTIN} prompts"
    ids = prompts.render(records, tokenizer, template, where, plan.model)
    longest = max(range(len(ids)), key=lambda i: len(ids[i]))
    need = len(ids[longest]) + plan.max_tokens + LENGTH_SLACK
    if ck.max_positions is not None and need > ck.max_positions:
        raise UsageError(
            f"{where} line {records[longest].line}: {len(ids[longest])} tokens and --max-tokens {plan.max_tokens} "
            f"do not fit the {ck.max_positions} positions of --model {plan.model}"
        )
    eos = getattr(tokenizer, "eos_token_id", None)
    stop = sorted(set(ck.eos_token_ids) | ({eos} if isinstance(eos, int) else set()))
    return Prepared(ck, source, records, ids, presets, stop, need)


def engine_count(plan: ModelPlan, presets: tuple[str, ...]) -> int:
    """Per mode a baseline and each preset on each site; then the reference, once."""
    sites = 2 if plan.control else 1
    return len(plan.modes) * (1 + len(presets) * sites) + 1


def check_gpus(tp: int) -> None:
    import torch

    if (visible := torch.cuda.device_count()) < tp:
        raise UsageError(f"--tp {tp} needs {tp} GPUs; {visible} visible")


def common_spec(plan: ModelPlan, prep: Prepared) -> dict:
    """What every engine of the run shares: the checkpoint's own dtype, TP, memory, KV, backend."""
    spec: dict[str, Any] = {
        "model": str(plan.model),
        "dtype": "auto",
        "tp": plan.tp,
        "max_model_len": prep.max_model_len,
        "gpu_memory_utilization": plan.gpu_memory_utilization,
        "kv_cache_memory_bytes": plan.kv_cache_gib and int(plan.kv_cache_gib * 2**30),
        "additional_config": plan.additional_config,
    }
    if plan.kv_cache != "auto":
        spec["kv_cache_dtype"] = plan.kv_cache
    return spec


def generation_spec(plan: ModelPlan, prep: Prepared, eager: bool, preset: str | None) -> dict:
    spec = common_spec(plan, prep) | {
        "prompts": prep.prompts,
        "max_num_seqs": plan.batch,
        "max_tokens": plan.max_tokens,
        "eager": eager,
        "stop_token_ids": prep.stop_token_ids,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
        "enable_prefix_caching": scenarios.switch(plan.prefix_caching),
        "async_scheduling": scenarios.switch(plan.async_scheduling),
    }
    if preset is not None:
        spec["speculative"] = scenarios.PRESETS[preset]
    return spec


def reference_spec(plan: ModelPlan, prep: Prepared, pairs: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> dict:
    """The teacher-forced engine: no speculation, eager (one prefill per sequence needs no decode
    graphs), no prefix caching (every position computed in the request's own prefill)."""
    return common_spec(plan, prep) | {
        "prompts": [],
        "teacher_force": {"sequences": [list(p) + list(o) for p, o in pairs], "starts": [len(p) for p, _ in pairs]},
        "max_num_seqs": REFERENCE_MAX_SEQS,
        "max_tokens": 1,
        "eager": True,
        "max_num_batched_tokens": REFERENCE_BATCHED_TOKENS,
        "enable_prefix_caching": False,
    }


def acceptance(counters: dict | None) -> dict | None:
    """vLLM's spec-decode counters as a rate (accepted of drafted tokens) and the mean number of
    tokens a speculative step emits (1 + accepted per draft)."""
    counters = counters or {}
    drafts, drafted = counters.get("num_drafts"), counters.get("num_draft_tokens")
    accepted = counters.get("num_accepted_tokens")
    if not drafted or accepted is None:
        return None
    return {
        "drafts": int(drafts or 0),
        "draft_tokens": int(drafted),
        "accepted_tokens": int(accepted),
        "rate": round(accepted / drafted, 3),
        "mean_accepted_length": round(1 + accepted / drafts, 2) if drafts else None,
    }


def by_group(records: list[prompts.Record], regrets: list[list[float]], threshold: float) -> dict:
    """The verdict of each group of prompts (the built-in set's kinds of request)."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(r.group, []).append(i)
    return {g: judge([regrets[i] for i in idx], threshold).as_dict() for g, idx in groups.items()}


def cross_check(rows: list[dict], rows32: list[dict], noise32: float, threshold32: float) -> dict:
    """The float32 reference's verdicts on the same outputs beside the vLLM reference's: a row
    agrees when both find errors or both find none (an engine that died is no verdict of
    either)."""
    pairs = []
    for a, b in zip(rows, rows32, strict=True):
        pairs.append(
            {
                "scenario": a["scenario"],
                "site": a["site"],
                "mode": a["mode"],
                "errors": a["errors"],
                "float32_errors": b["errors"],
                "worst_regret": a["worst_regret"],
                "float32_worst_regret": b["worst_regret"],
                "agrees": bool(a.get("crashed")) or (a["errors"] > 0) == (b["errors"] > 0),
            }
        )
    calibrated = run.verdicts(rows32, noise32, False)["calibrated"]
    return {
        "threshold": threshold32,
        "baseline_worst_regret": round(noise32, 3),
        "calibrated": calibrated,
        "rows": pairs,
        "agree": calibrated and all(p["agrees"] for p in pairs),
    }


def execute(plan: ModelPlan, progress: Callable[[str], None]) -> dict:
    prep = prepare(plan)
    ck = prep.checkpoint
    vllm_version = run.preflight(ck.model_class if plan.float32_reference else None)
    check_gpus(plan.tp)
    run.check_kv_cache(vllm_version, plan.kv_cache)
    # the checkpoint's heads are its own: only an asked prefill the release would ignore is refused
    run.check_prefill(vllm_version, None, str(plan.additional_config.get("gdn_prefill_backend", "default")))
    run.check_control(plan.control, vllm_version)
    ran_on = run.machine()
    run.make_work_dir(plan.work)
    sites: list[tuple[str, Path | None]] = [("target", None)] + ([("control", plan.control)] if plan.control else [])
    clock = run.EngineClock(engine_count(plan, prep.presets))
    runs: list[dict] = []
    backports = None
    for mode in plan.modes:
        eager = mode == "eager"
        at = {"batch": plan.batch, "mode": mode, "prompts": prep.prompts}
        tag = f"model-{mode}-baseline"
        progress(clock.next(tag))
        base = run.run_engine(generation_spec(plan, prep, eager, None), plan.work, tag, None)
        backports = (base.get("engine") or {}).get("backports", backports)
        runs.append({"scenario": "baseline", "site": "target", **at, "baseline_tokens": base["tokens"], **base})
        for preset in prep.presets:
            for site, where in sites:
                tag = f"model-{mode}-{preset}" + ("" if where is None else f"-{site}")
                progress(clock.next(tag))
                where_run = {"scenario": preset, "site": site, **at}
                try:
                    out = run.run_engine(generation_spec(plan, prep, eager, preset), plan.work, tag, None, where)
                except BackportError as exc:
                    if where is None:
                        raise
                    # a control that dies has failed; the target's runs are still judged
                    carried = engine.manifest_backports(Path(where) / "vllm")
                    runs.append({**where_run, "crashed": str(exc), "tokens": None, "backports": carried})
                    continue
                counters = out.get("spec_counters")
                runs.append({**where_run, "exercised": counters, "baseline_tokens": base["tokens"], **out})
    pairs = list(
        dict.fromkeys(
            (tuple(p), tuple(t))
            for r in runs
            if r.get("tokens") is not None
            for p, t in zip(r["prompts"], r["tokens"], strict=True)
        )
    )
    progress(clock.next(f"model-reference: {len(pairs)} distinct outputs teacher-forced"))
    forced = run.run_engine(reference_spec(plan, prep, pairs), plan.work, "model-reference", None)
    regrets_of = dict(zip(pairs, forced["regrets"], strict=True))
    progress(clock.done("reference: teacher forcing on the plain engine"))

    def scored_by(regrets: Callable[[list[int], list[int]], list[float]]) -> list:
        return [
            (
                r,
                [regrets(p, t) for p, t in zip(r["prompts"], r["tokens"], strict=True)]
                if r.get("tokens") is not None
                else None,
            )
            for r in runs
        ]

    scored = scored_by(lambda p, t: regrets_of[(tuple(p), tuple(t))])
    rows, noise, threshold = run.score(scored, plan.threshold)
    for row, (r, regrets) in zip(rows, scored, strict=True):
        row["acceptance"] = acceptance(r.get("spec_counters"))
        row["groups"] = by_group(prep.records, regrets, threshold) if regrets is not None else None
    result: dict[str, Any] = {
        "vllm": vllm_version,
        "reference": VLLM_REFERENCE,
        "backports": backports,
        "model": ck.describe(),
        "kv_cache": plan.kv_cache,
        "threshold": threshold,
        "baseline_worst_regret": round(noise, 3),
        "tp": plan.tp,
        "scenario": {
            "prompts": prep.source,
            "prompt_count": len(prep.prompts),
            "max_prompt_tokens": max(map(len, prep.prompts)),
            "groups": {
                g: sum(r.group == g for r in prep.records) for g in dict.fromkeys(r.group for r in prep.records)
            },
            "presets": list(prep.presets),
            "batch": plan.batch,
            "modes": list(plan.modes),
            "max_tokens": plan.max_tokens,
            "max_model_len": prep.max_model_len,
            "stop_token_ids": prep.stop_token_ids,
            "prefix_caching": plan.prefix_caching,
            "async_scheduling": plan.async_scheduling,
            "gdn_prefill_backend": plan.additional_config.get("gdn_prefill_backend", "default"),
            "gpu_memory_utilization": plan.gpu_memory_utilization,
            "kv_cache_gib": plan.kv_cache_gib,
            "max_num_batched_tokens": plan.max_num_batched_tokens,
            "reference_batched_tokens": REFERENCE_BATCHED_TOKENS,
        },
        "rows": rows,
        **run.verdicts(rows, noise, plan.control is not None),
        "machine": ran_on,
    }
    if plan.control is not None:
        result["control"] = str(plan.control)
    if plan.float32_reference:
        from .oracle import Reference

        progress("float32 reference: transformers on the same outputs")
        assert ck.model_class is not None  # prepare() refused the others
        ref = Reference(str(plan.model), model_class=ck.model_class)
        rows32, noise32, threshold32 = run.score(scored_by(ref.regrets), plan.threshold)
        result["float32"] = cross_check(rows, rows32, noise32, threshold32)
    return result
