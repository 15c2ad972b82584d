"""Orchestrate one verify run: model, engines in subprocesses, the reference, the verdicts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from ..errors import BackportError, DraftsNotServed, UsageError
from . import drafts, engine, model, scenarios
from .oracle import (
    Reference,
    judge,
    judge_output_logprobs,
    judge_prompt_logprobs,
    output_logprob_differences,
    prompt_logprob_differences,
)

# The plain engine's worst regret is bf16 noise at near-ties; twice that, and at least one nat,
# separates it from a corrupted state (whose choices sit several nats down). A baseline worse than
# the cap means vLLM and the reference disagree without speculation: nothing can be concluded.
CALIBRATION_FACTOR, CALIBRATION_FLOOR, CALIBRATION_CAP = 2.0, 1.0, 3.0
# Output logprobs are judged by a sequence's mean difference (oracle.judge_output_logprobs): a
# threshold of this many times the plain engine's worst sequence mean, never under the floor, and
# no conclusion when that worst mean is over the cap (the plain engine itself is off the model).
OUTPUT_LOGPROB_FACTOR, OUTPUT_LOGPROB_FLOOR, OUTPUT_LOGPROB_CAP = 3.0, 0.005, 0.5
# The judged logprob fields of a row (--prompt-logprobs, --output-logprobs): each counts among the
# row's errors, and each of its rounds holds that field's errors under round_errors_key.
JUDGED_LOGPROBS = ("prompt_logprobs", "output_logprobs")


def round_errors_key(field: str) -> str:
    """Where a round keeps a judged field's errors: prompt_logprobs -> prompt_logprob_errors."""
    return f"{field.removesuffix('s')}_errors"


def calibrated_threshold(baseline_worst: float) -> float:
    return max(CALIBRATION_FLOOR, CALIBRATION_FACTOR * baseline_worst)


@dataclass(frozen=True)
class Plan:
    batches: tuple[int, ...]
    modes: tuple[str, ...]  # "eager", "graphs"
    presets: tuple[str, ...]
    tp: int
    threshold: float | None  # None: calibrated on this run's baselines
    work: Path
    additional_config: dict
    kv_cache: str = "auto"  # or a TurboQuant preset: baselines and speculative runs alike
    prompt_set: str = "random"  # scenarios.PROMPT_SETS
    prefix_caching: str = "default"  # scenarios.SWITCHES
    async_scheduling: str = "default"
    model_runner: str = "default"  # scenarios.MODEL_RUNNERS
    # A second install of the same release (a site directory, e.g. the pristine files as a
    # control): its speculative engines run too and are judged against the same baseline.
    control: Path | None = None
    gpu_memory_utilization: float = 0.35
    kv_cache_gib: float | None = None  # None: vLLM sizes the KV cache from its memory profile
    model_class: str = model.MODEL_CLASS  # model.MODEL_CLASSES
    # Which KV the calibrating baseline runs on: "same" (the run's own), "auto" (bf16), None
    # (the prompt set decides: scenarios.PromptSet.calibrate_on_auto).
    calibrate_kv: str | None = None
    # Rounds of the prompt list on each warm engine, every one judged (docs/SIBLING-BUGS.md section 7).
    rounds: int = 1
    # Judge vLLM's prompt logprobs against the reference's too (section 8).
    prompt_logprobs: bool = False
    # Judge vLLM's logprobs of the tokens it chose against the reference's, by sequence (#53912:
    # context read wrong shifts them all while each token's regret stays small).
    output_logprobs: bool = False
    # The accepted-count range check on the speculative engines (section 4; verify/counts.py).
    check_accepted_counts: bool = False
    # Count the align-mode conv shifts within one block ([known.align-shift-copy-race]; shifts.py).
    count_align_shifts: bool = False


CALIBRATE_KV = ("same", "auto")
# The plain engine on the run's TurboQuant KV, judged like a speculative run when a bf16 baseline
# calibrates: its batches meet the bug too (scenarios.PromptSet.calibrate_on_auto).
NO_SPEC = "no-spec"


def calibrates_on_auto(plan: Plan) -> bool:
    """Whether a bf16-KV baseline calibrates this run instead of the plain engine on its own KV."""
    if plan.kv_cache == "auto":
        return False  # the run's own baseline already is one
    if plan.calibrate_kv is not None:
        return plan.calibrate_kv == "auto"
    return scenarios.PROMPT_SETS[plan.prompt_set].calibrate_on_auto


def check_plan(plan: Plan) -> None:
    """Refuse, before anything starts, a plan whose prompt set cannot do what it is for."""
    if plan.rounds < 1:
        raise UsageError(f"rounds {plan.rounds}: at least 1")
    if plan.model_runner not in scenarios.MODEL_RUNNERS:
        raise UsageError(f"model_runner {plan.model_runner!r} is not one of {', '.join(scenarios.MODEL_RUNNERS)}")
    if plan.calibrate_kv not in (None, *CALIBRATE_KV):
        raise UsageError(f"calibrate_kv {plan.calibrate_kv!r} is not one of {', '.join(CALIBRATE_KV)}")
    # Refused rather than switched on: the evidence records what was asked, and the release's
    # default differs (off for hybrids before 0.28), so the run would mean different things.
    if scenarios.PROMPT_SETS[plan.prompt_set].requires_prefix_caching and plan.prefix_caching != "on":
        raise UsageError(
            f"--prompts {plan.prompt_set} needs --prefix-caching on (its prompts are there to hit the prefix cache)"
        )


def check_tiny_model_options(
    *,
    model_class: str,
    prefill_backend: str,
    prompt_set: str | None,
    max_tokens: int | None,
    max_num_batched_tokens: int | None,
    float32_reference: bool,
) -> str:
    """Refuse the command line's options that a tiny-model Plan cannot take: those of a --model
    run, FlashInfer's prefill on a class whose GDN heads it does not run, a prompt set that is not
    one. Returns the prompt set, random when none was given."""
    for name, value, why in (
        ("--max-tokens", max_tokens, "the tiny model's runs fix their own"),
        ("--max-num-batched-tokens", max_num_batched_tokens, "the tiny model's runs fix their own"),
        ("--float32-reference", float32_reference or None, "without it, verify always judges by float32"),
    ):
        if value is not None:
            raise UsageError(f"{name} goes with --model ({why})")
    heads = model.MODEL_CLASSES[model_class].config["linear_key_head_dim"]
    if prefill_backend == "flashinfer" and heads != model.FLASHINFER_GDN_HEAD_DIM:
        # FlashInfer's GDN prefill kernel raises at the first prefill otherwise (vLLM 0.26.0,
        # 0.28.0 on sm_90, 2026-11-25): only the classes with real Qwen3.5 head sizes run it
        raise UsageError(
            f"--prefill-backend flashinfer: FlashInfer's GDN prefill runs heads of {model.FLASHINFER_GDN_HEAD_DIM} "
            f"only; the {model_class} tiny model has {heads} "
            f"(use --model-class {' or '.join(model.flashinfer_classes())})"
        )
    prompt_set = prompt_set or "random"
    if prompt_set not in scenarios.PROMPT_SETS:
        raise UsageError(
            f"--prompts {prompt_set}: not one of the tiny model's prompt sets "
            f"({', '.join(sorted(scenarios.PROMPT_SETS))}); a JSONL file of prompts goes with --model or --server"
        )
    return prompt_set


def engine_count(plan: Plan) -> int:
    """Engines the plan starts: per batch and mode, a baseline, each preset on each site, and with
    a bf16 calibration the plain TurboQuant engine on each site as well."""
    sites = 2 if plan.control else 1
    per = 1 + len(plan.presets) * sites + (sites if calibrates_on_auto(plan) else 0)
    return len(plan.batches) * len(plan.modes) * per


def check_kv_cache(vllm_version: str, kv_cache: str) -> None:
    """Refuse before any engine starts what this vLLM would refuse after loading the model."""
    from packaging.version import Version

    if kv_cache in scenarios.TURBOQUANT and Version(vllm_version) < Version(scenarios.TURBOQUANT_ON_HYBRIDS_FROM):
        raise UsageError(
            f"vLLM {vllm_version} refuses TurboQuant KV on hybrid models "
            f"(from {scenarios.TURBOQUANT_ON_HYBRIDS_FROM} it accepts them); verify's model is hybrid"
        )


def check_prefill(
    vllm_version: str, heads: int | None, backend: str, capability: Callable[[], tuple[int, int]] | None = None
) -> None:
    """Refuse before any engine starts what a release that ignores the prefill choice would run:
    on Hopper, vLLM before PREFILL_CHOICE_FROM runs FlashInfer's GDN prefill whatever `backend`
    (the command line's --prefill-backend) asks, and FlashInfer runs GDN heads of 128 only
    (`heads`: the model's, None where verify does not know them). `capability` (the GPU's, asked
    only of those releases) defaults to gpu_capability."""
    if scenarios.chooses_prefill(vllm_version) or (capability or gpu_capability)() != (9, 0):
        return
    why = (
        f"vLLM {vllm_version} runs FlashInfer's GDN prefill on every compute capability 9.0 GPU "
        f"whatever --prefill-backend asks (the choice arrived in {scenarios.PREFILL_CHOICE_FROM})"
    )
    if backend == "triton":
        raise UsageError(f"{why}: use --prefill-backend flashinfer or default")
    if heads is not None and heads != model.FLASHINFER_GDN_HEAD_DIM:
        raise UsageError(
            f"{why}; it runs GDN heads of {model.FLASHINFER_GDN_HEAD_DIM} only and the tiny model's class has "
            f"{heads}: use --model-class {' or '.join(model.flashinfer_classes())}"
        )


def preflight(model_class: str | None = model.MODEL_CLASS) -> str:
    """The vLLM version verify will run; a one-line error when this machine cannot run it.
    `model_class`: the tiny model's class whose transformers model the float32 reference needs
    (None: no float32 reference)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        vllm_version = version("vllm")
    except PackageNotFoundError:
        raise UsageError(
            "verify needs vLLM installed in this Python (run it in the image), "
            "or --server URL to check a running vLLM server"
        ) from None
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise UsageError(f"verify needs torch and transformers: {exc}") from None
    wanted = model.MODEL_CLASSES[model_class].transformers_model if model_class else None
    if wanted and not hasattr(transformers, wanted):
        raise UsageError(
            f"--model-class {model_class} needs transformers' {wanted}; "
            f"transformers {transformers.__version__} has none"
        )
    if not torch.cuda.is_available():
        raise UsageError("verify needs a CUDA GPU; none is visible")
    return vllm_version


def gpu_capability() -> tuple[int, int]:
    """The compute capability of the GPU verify's engines run on (CUDA's first visible device)."""
    import torch

    major, minor = torch.cuda.get_device_capability(0)
    return int(major), int(minor)


def registry_architectures() -> set[str]:
    """The architectures this Python's vLLM registers (a --control site holds the same release):
    what decides the layout of the tiny checkpoint (model.architecture_for)."""
    from vllm.model_executor.models import ModelRegistry

    return set(ModelRegistry.get_supported_archs())


# The engine runs as `python -m vllm_backports.verify.engine`; from an image, apply.py is started by
# path from any directory, so the child must be told where this package lives.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def site_version(site: Path) -> str:
    """The vLLM release installed in a site directory, read from its metadata without importing it."""
    from importlib.metadata import distributions

    found = [d.version for d in distributions(name="vllm", path=[str(site)])]
    if not found:
        raise UsageError(f"--control {site}: no vLLM installed there")
    return found[0]


def check_control(control: Path | None, vllm_version: str) -> None:
    if control is not None and (theirs := site_version(control)) != vllm_version:
        raise UsageError(
            f"--control {control} holds vLLM {theirs}, this Python {vllm_version}: a control must be the same release"
        )


def make_work_dir(work: Path) -> None:
    """The run's --work-dir, made before any engine starts: one it cannot have is this machine's
    to fix (exit 2), not tokens found wrong (exit 1)."""
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--work-dir {work}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def work_dir_for(work: Path) -> Iterator[None]:
    """The --work-dir made before a run, and the folders made for it removed again if the run
    fails or is refused before writing there."""
    made = []  # innermost first
    at = work
    try:
        while not at.exists() and at != at.parent:
            made.append(at)
            at = at.parent
    except OSError as exc:  # a parent it may not look into
        raise UsageError(f"--work-dir {work}: {exc.strerror or exc}") from None
    make_work_dir(work)
    try:
        yield
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # something was written there: it stays
                break
        raise


def machine() -> dict:
    """The GPU, driver and libraries a verify ran on, for its evidence."""
    import platform
    from datetime import datetime
    from importlib.metadata import version

    import torch

    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.split()
        driver = smi[0] if smi else None
    except (OSError, subprocess.SubprocessError):
        driver = None
    return {
        "gpu": torch.cuda.get_device_name(0),
        "gpus": torch.cuda.device_count(),
        "driver": driver,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "transformers": version("transformers"),
        "python": platform.python_version(),
        "arch": platform.machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def engine_env(script_path: Path | None, site: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(PACKAGE_ROOT), str(site) if site else None, env.get("PYTHONPATH")])
    )
    env.pop(drafts.ENV, None)
    if script_path is not None:
        env[drafts.ENV] = str(script_path)
    return env


def run_engine(spec: dict, work: Path, tag: str, script: drafts.Script | None, site: Path | None = None) -> dict:
    spec_path, out_path, log_path = work / f"{tag}.spec.json", work / f"{tag}.out.json", work / f"{tag}.log"
    spec_path.write_text(json.dumps(spec))
    script_path = None
    if script is not None:
        script_path = work / f"{tag}.drafts.json"
        script_path.write_text(script.to_json())
    env = engine_env(script_path, site)
    with open(log_path, "w") as log:
        rc = subprocess.run(
            [sys.executable, "-m", "vllm_backports.verify.engine", str(spec_path), str(out_path)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    if rc != 0 or not out_path.exists():
        reason = crash_line(log_path.read_text(errors="replace"))
        raise BackportError(f"engine run {tag} failed (exit {rc}): {reason[:300]}; full log: {log_path}")
    return json.loads(out_path.read_text())


# A Python exception as a traceback ends it ("RuntimeError: CUDA error: ..."), behind any of a
# process prefix ("(EngineCore_DP0 pid=12) "), torch.distributed's rank prefix ("[rank0]: ") and
# vLLM's logger prefix ("ERROR 11-27 17:04:12 [core.py:708] "); or a C++ exception's message as
# std::terminate prints it before an abort ("  what():  CUDA error: ...").
_EXCEPTION = re.compile(
    r"^(?:\(\S+ pid=\d+\) |\[rank\d+\]:\s*)*(?:ERROR \S+ \S+ \[[^\]]*\] )?"
    r"(?:(?:\w+\.)*\w*(?:Error|Exception|Exit|Interrupt): |what\(\):\s+\S)"
)
# Exceptions that only say another one happened first
_WRAPPER = re.compile(
    r"see root cause above|EngineDeadError|EngineGenerateError|collective_rpc method failed", re.IGNORECASE
)


def crash_line(log: str) -> str:
    """The line that says why an engine died. A dying vLLM engine logs teardown warnings after its
    error (NCCL's destroy_process_group, leaked semaphores), so the log's last line is rarely it:
    the last exception line that names a cause, else the last exception line, else the last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    if not lines:
        return "no output"
    exceptions = [line for line in lines if _EXCEPTION.match(line)]
    causes = [line for line in exceptions if not _WRAPPER.search(line)]
    return (causes or exceptions or lines)[-1]


def exercised(script: drafts.Script, outputs: list[list[int]], always_k: bool = False) -> dict[str, int]:
    """Totals of drafts.transitions over every request of one run (`always_k`: as the V2 model
    runner ran them, k drafts every step)."""
    total: dict[str, int] = {}
    for i, out in enumerate(outputs):
        for key, n in drafts.transitions(script.replay(i, out, always_k)).items():
            total[key] = total.get(key, 0) + n
    return total


class EngineClock:
    """Progress for a run of minutes: which engine of how many, and the time left at the pace
    of the engines so far (each is a fresh process: start-up dominates)."""

    def __init__(self, total: int, now: Callable[[], float] = time.monotonic):
        self.total, self.now, self.started, self.count = total, now, now(), 0

    def next(self, tag: str) -> str:
        self.count += 1
        line = f"engine {self.count}/{self.total}: {tag}"
        if self.count > 1:
            per = (self.now() - self.started) / (self.count - 1)
            line += f" (about {max(1, round(per * (self.total - self.count + 1) / 60))} min left)"
        return line

    def done(self, message: str) -> str:
        return f"{message} ({self.now() - self.started:.0f} s of engines)"


def execute(plan: Plan, progress: Callable[[str], None]) -> dict:
    check_plan(plan)
    vllm_version = preflight(plan.model_class)
    check_kv_cache(vllm_version, plan.kv_cache)
    check_control(plan.control, vllm_version)
    cls = model.MODEL_CLASSES[plan.model_class]
    backend = str(plan.additional_config.get("gdn_prefill_backend", "default"))
    check_prefill(vllm_version, cls.config["linear_key_head_dim"], backend)
    ran_on = machine()
    make_work_dir(plan.work)
    # only a class with a multimodal twin has a layout to choose (Qwen3.5 before vLLM 0.27.0)
    registered = registry_architectures() if cls.multimodal_architecture else set()
    architecture = model.architecture_for(plan.model_class, registered)
    model_dir = model.write_model(
        plan.work / "model",
        mtp=bool(scenarios.NEEDS_MTP_LAYER & set(plan.presets)),
        model_class=plan.model_class,
        architecture=architecture,
    )
    vocab = model.vocab_size(plan.model_class)
    k = max([scenarios.PRESETS[p]["num_speculative_tokens"] for p in plan.presets] or [1])
    sites: list[tuple[str, Path | None]] = [("target", None)] + ([("control", plan.control)] if plan.control else [])
    switches = {
        "enable_prefix_caching": scenarios.switch(plan.prefix_caching),
        "async_scheduling": scenarios.switch(plan.async_scheduling),
    }
    on_auto = calibrates_on_auto(plan)
    landing = scenarios.PROMPT_SETS[plan.prompt_set].land_drafts_on  # the scripts' align block, or 0
    clock = EngineClock(engine_count(plan))
    runs: list[dict] = []
    for batch in plan.batches:
        shape = scenarios.SHAPES[batch]
        ps = scenarios.prompts(shape.prompts, vocab, kind=plan.prompt_set, k=k)

        def spec(eager: bool, cfg: dict, ps=ps, shape=shape) -> dict:
            return shape.engine_spec(str(model_dir), ps, eager, plan.tp, cfg, plan.prompt_set)

        def judged(where_run: dict, cfg: dict, eager: bool, tag: str, script, where: Path | None) -> dict | None:
            """One engine to judge; a control that dies is recorded as such (None returned)."""
            progress(clock.next(tag))
            try:
                return run_engine(spec(eager, cfg), plan.work, tag, script, where)
            except BackportError as exc:
                if where is None:
                    raise
                # A control that dies (released TurboQuant + MTP reads out of bounds on
                # 0.27 and 0.28) has failed; the target's runs are still judged. Its engine never
                # described itself: what the site carries is read here.
                carried = engine.manifest_backports(Path(where) / "vllm")
                runs.append({**where_run, "crashed": str(exc), "tokens": None, "backports": carried})
                return None

        for mode in plan.modes:
            extra: dict[str, Any] = {
                "additional_config": plan.additional_config,
                **switches,
                "gpu_memory_utilization": plan.gpu_memory_utilization,
                "kv_cache_memory_bytes": plan.kv_cache_gib and int(plan.kv_cache_gib * 2**30),
                **judged_asks(plan),
            }
            if plan.model_runner != "default":
                extra["model_runner"] = plan.model_runner
            if model.is_multimodal(architecture):
                extra["text_only"] = True  # engine.text_only_kwargs
            eager = mode == "eager"
            at = {"batch": batch, "mode": mode, "prompts": ps}
            tag = f"b{batch}-{mode}-baseline"
            progress(clock.next(tag))
            # On bf16 KV (kv_cache_dtype left out: vLLM's "auto") when it calibrates a TurboQuant run.
            kv = {} if plan.kv_cache == "auto" or on_auto else {"kv_cache_dtype": plan.kv_cache}
            base = run_engine(spec(eager, extra | kv), plan.work, tag, None)
            runs.append({"scenario": "baseline", "site": "target", **at, "baseline_tokens": base["tokens"], **base})
            if plan.kv_cache != "auto":
                extra["kv_cache_dtype"] = plan.kv_cache
            if on_auto:
                # The plain TurboQuant engine on every site, judged as a run. Its tokens on the
                # target are what the scripted drafts follow (drafts come from the same KV's
                # plain output); both rows count their agreement with the bf16 baseline.
                plain = None
                for site, where in sites:
                    tag = f"b{batch}-{mode}-{NO_SPEC}" + ("" if where is None else f"-{site}")
                    where_run = {"scenario": NO_SPEC, "site": site, **at}
                    out = judged(where_run, extra, eager, tag, None, where)
                    if out is None:
                        continue
                    runs.append({**where_run, "exercised": None, "baseline_tokens": base["tokens"], **out})
                    if where is None:
                        plain = out
                assert plain is not None  # the target's engine raises rather than return None
                base = plain
            for preset in plan.presets:
                cfg = dict(extra, speculative=scenarios.PRESETS[preset])
                if plan.check_accepted_counts:
                    cfg["check_accepted_counts"] = True
                if plan.count_align_shifts:
                    cfg["count_align_shifts"] = True
                if landing:
                    # A landing shifts only if its draft is right. The plain engine the drafts
                    # follow runs another block size, so a speculative engine soon parts from it,
                    # but it repeats its own output round after round: later rounds follow that.
                    cfg["drafts_follow_own_output"] = True
                for site, where in sites:
                    tag = f"b{batch}-{mode}-{preset}" + ("" if where is None else f"-{site}")
                    script = None
                    if preset in scenarios.SCRIPTED:
                        script = drafts.Script(
                            ps,
                            base["tokens"],
                            k=cfg["speculative"]["num_speculative_tokens"],
                            vocab=vocab,
                            land_on=landing,
                        )
                    where_run = {"scenario": preset, "site": site, **at}
                    out = judged(where_run, cfg, eager, tag, script, where)
                    if out is None:
                        continue
                    if script is not None:
                        check_script_served(out, tag)
                    # A model drafter's proposals are not known offline: vLLM's own counters stand in.
                    v2 = (out.get("engine") or {}).get("model_runner") == "v2"
                    hit = exercised(script, out["tokens"], v2) if script else out.get("spec_counters")
                    runs.append({**where_run, "exercised": hit, "baseline_tokens": base["tokens"], **out})
    progress(clock.done("reference: float32 teacher forcing"))
    ref = Reference(str(model_dir), model_class=plan.model_class)
    scored = [
        (
            r,
            [ref.regrets(p, t) for rnd in rounds_of(r) for p, t in zip(r["prompts"], rnd["tokens"], strict=True)]
            if r.get("tokens") is not None
            else None,
        )
        for r in runs
    ]
    rows, noise, threshold = score(scored, plan.threshold)
    logprobs = None
    if plan.prompt_logprobs:
        reference = PromptLogprobs(ref)
        logprobs = score_prompt_logprobs(rows, [prompt_differences(r, reference) for r in runs])
    outputs = None
    if plan.output_logprobs:
        outputs = score_output_logprobs(rows, [output_differences(r, ref.output_logprobs) for r in runs])
    result = conclude(rows, noise, threshold, plan, vllm_version, logprobs, outputs)
    result["scenario"]["architecture"] = architecture
    result["scenario"]["max_prompt_tokens"] = max(r["max_prompt_tokens"] for r in rows)
    return {**result, "machine": ran_on}


def check_script_served(out: dict, tag: str) -> None:
    """Refuse a scripted run whose drafts never reached vLLM: its tokens would still be judged,
    clean, and a control's clean tokens read as the bug being gone, when nothing of the schedule
    ran. Raised outside the control's crash handling, so that it fails the whole verify."""
    if out.get("script_served") == 0:
        raise DraftsNotServed(
            f"engine run {tag}: vLLM never asked the scripted ngram drafts (no call of V1's proposer or V2's "
            "speculator had a row of their prompts); try --model-runner v1"
        )


def judged_asks(plan: Plan) -> dict:
    """What every engine of the plan is asked for beyond its tokens (nothing, by default, so that
    earlier plans send the specs they always sent)."""
    asks: dict[str, Any] = {}
    if plan.rounds > 1:
        asks["rounds"] = plan.rounds
    if plan.prompt_logprobs:
        asks["prompt_logprobs"] = True
    if plan.output_logprobs:
        asks["output_logprobs"] = True
    return asks


def rounds_of(run: dict) -> list[dict]:
    """An engine's judged rounds in order, each {"tokens": ..., and "prompt_logprobs" if asked}:
    the first is the run itself, the rest its "more_rounds" (verify/engine.py)."""
    return [run, *(run.get("more_rounds") or [])]


class PromptLogprobs:
    """The reference's logprobs of a prompt's tokens, each prompt's computed once: every engine of a
    plan runs the same prompts, and the reference's forward pass is the costly part."""

    def __init__(self, reference: Reference) -> None:
        self._reference = reference
        self._known: dict[tuple[int, ...], list[float]] = {}

    def __call__(self, prompt: list[int]) -> list[float]:
        key = tuple(prompt)
        if key not in self._known:
            self._known[key] = self._reference.prompt_logprobs(prompt)
        return self._known[key]


def prompt_differences(run: dict, reference: Callable[[list[int]], list[float]]) -> list[list[float]] | None:
    """|vLLM - reference| of each prompt token's logprob, per sequence over every round (None for
    an engine that died); `reference` gives the reference's prompt logprobs of a prompt."""
    if run.get("tokens") is None:
        return None
    out = []
    for rnd in rounds_of(run):
        given = rnd.get("prompt_logprobs") or [None] * len(run["prompts"])
        for prompt, lps in zip(run["prompts"], given, strict=True):
            out.append(prompt_logprob_differences(lps, reference(prompt)))
    return out


def output_differences(run: dict, reference: Callable[[list[int], list[int]], list[float]]) -> list[list[float]] | None:
    """|vLLM - reference| of each output token's logprob, per sequence over every round (None for
    an engine that died); `reference` gives the reference's logprobs of a prompt's outputs."""
    if run.get("tokens") is None:
        return None
    out = []
    for rnd in rounds_of(run):
        given = rnd.get("output_logprobs") or [None] * len(run["prompts"])
        for prompt, tokens, lps in zip(run["prompts"], rnd["tokens"], given, strict=True):
            out.append(output_logprob_differences(lps, reference(prompt, tokens)))
    return out


def score_output_logprobs(rows: list[dict], differences: list[list[list[float]] | None]) -> dict:
    """Judge every row's output logprobs (rows and differences in the same order), calibrated on
    the worst sequence mean of the "baseline" rows' first round. Adds each judged row's
    "output_logprobs" (and per round, its errors) and returns the calibration."""
    noise = max((sum(s) / len(s) for s in calibrating_sequences(rows, differences) if s), default=0.0)
    threshold = round(max(OUTPUT_LOGPROB_FLOOR, OUTPUT_LOGPROB_FACTOR * noise), 4)
    judge_rows(rows, differences, "output_logprobs", lambda d: judge_output_logprobs(d, threshold))
    return {
        "threshold": threshold,
        "baseline_worst_mean_difference": round(noise, 4),
        "calibrated": noise <= OUTPUT_LOGPROB_CAP,
    }


def score_prompt_logprobs(rows: list[dict], differences: list[list[list[float]] | None]) -> dict:
    """Judge every row's prompt logprobs (rows and differences in the same order), the threshold
    calibrated as for the outputs: on the worst difference of the "baseline" rows (the plain
    engine). Adds each judged row's "prompt_logprobs" (and per round, its errors) and returns the
    calibration: threshold, that worst difference and whether it is under the cap."""
    noise = max((x for s in calibrating_sequences(rows, differences) for x in s), default=0.0)
    threshold = calibrated_threshold(noise)
    judge_rows(rows, differences, "prompt_logprobs", lambda d: judge_prompt_logprobs(d, threshold))
    calibrated = noise <= CALIBRATION_CAP
    return {"threshold": threshold, "baseline_worst_difference": round(noise, 3), "calibrated": calibrated}


def calibrating_sequences(rows: list[dict], differences: list[list[list[float]] | None]) -> list[list[float]]:
    """What calibrates a judged field: the differences of the "baseline" rows' (the plain
    engine's) sequences in their first round."""
    return [
        s
        for r, d in zip(rows, differences, strict=True)
        if r["scenario"] == "baseline" and d
        for s in by_round(d, len(r.get("rounds") or [None]))[0]
    ]


def judge_rows(
    rows: list[dict], differences: list[list[list[float]] | None], key: str, judge_one: Callable[[list], dict]
) -> None:
    """Each row's verdict on a judged field under `key` (rows without differences: none), and in
    each of its rounds that round's errors (`prompt_logprob_errors`, `output_logprob_errors`)."""
    for r, d in zip(rows, differences, strict=True):
        if d is None:
            continue
        r[key] = judge_one(d)
        if rounds := r.get("rounds"):
            for rnd, part in zip(rounds, by_round(d, len(rounds)), strict=True):
                rnd[round_errors_key(key)] = judge_one(part)["errors"]


def by_round(sequences: list, rounds: int) -> list[list]:
    """Sequences judged over `rounds` rounds, split into each round's part: an engine returns its
    rounds one after the other, the same prompts each time (rounds_of). Only the first part
    calibrates (with --rounds a plain engine's later rounds are judged like any run's, so that
    state carried across requests shows as errors there rather than as a looser threshold)."""
    per = len(sequences) // rounds
    return [sequences[i * per : (i + 1) * per] for i in range(rounds)]


def hit_lengths(cached: list[int | None] | None) -> dict[str, int] | None:
    """How many requests took how many prompt tokens from the prefix cache ("0": none), in
    increasing length; None where vLLM did not say."""
    known = sorted(c for c in cached or () if c is not None)
    return {str(n): known.count(n) for n in dict.fromkeys(known)} or None


def judge_rounds(run: dict, regrets: list[list[float]], threshold: float) -> list[dict]:
    """The verdict of each round of one engine (regrets: every round's sequences, in order), with
    how many sequences repeat the baseline's tokens and, for a speculative engine, the tokens
    vLLM's counters say were accepted in that round."""
    rounds = rounds_of(run)
    counters = run.get("spec_counters")
    accepted = [None if counters is None else counters.get("num_accepted_tokens")]
    accepted += [None if counters is None else a for a in run.get("timed_rounds_accepted") or []]
    out = []
    for i, (rnd, part) in enumerate(zip(rounds, by_round(regrets, len(rounds)), strict=True)):
        same = sum(a == b for a, b in zip(rnd["tokens"], run["baseline_tokens"], strict=True))
        out.append(
            {
                "round": i + 1,
                **judge(part, threshold).as_dict(),
                "same_as_baseline": same,
                "accepted": accepted[i] if i < len(accepted) else None,
                "prefix_hit_lengths": hit_lengths(rnd.get("cached_tokens")),
            }
        )
    return out


def score(
    scored: list[tuple[dict, list[list[float]] | None]], threshold: float | None
) -> tuple[list[dict], float, float]:
    """Judge every run by its regrets (None: an engine that died). The threshold is `threshold`
    when given, else calibrated on the worst regret of the "baseline" runs (the plain engine; its
    first round where it ran several).
    Returns the rows, that worst regret and the threshold used. Shared by both references: the
    float32 one of the tiny model and the teacher-forced vLLM one of `verify --model`."""
    noise = max(
        (
            x
            for r, regrets in scored
            if r["scenario"] == "baseline" and regrets
            for seq in by_round(regrets, len(rounds_of(r)))[0]
            for x in seq
        ),
        default=0.0,
    )
    if threshold is None:
        threshold = calibrated_threshold(noise)
    rows = []
    for r, regrets in scored:
        if regrets is None:
            rows.append(crashed_row(r))
            continue
        verdict = judge(regrets, threshold)
        same = sum(a == b for a, b in zip(r["tokens"], r["baseline_tokens"], strict=True))
        rows.append(
            {
                "scenario": r["scenario"],
                "site": r["site"],
                "batch": r["batch"],
                "mode": r["mode"],
                **verdict.as_dict(),
                "exercised": r.get("exercised"),
                # a scripted run's proposer calls the script served, and what vLLM's own counters
                # say it accepted: the replay above assumes the drafts the script offered
                **(
                    {"script_served": r.get("script_served"), "vllm_spec_counters": r.get("spec_counters")}
                    if r.get("scripted")
                    else {}
                ),
                "same_as_baseline": same,
                "max_prompt_tokens": max_prompt_tokens(r),
                "tokens_per_s": round(r["tokens_per_s"], 1),
                "start_s": round(r.get("start_s", 0.0), 1),
                "engine": r.get("engine"),
                # over every round, as the verdict (each round's own under "rounds")
                "prefix_hit_lengths": hit_lengths([c for x in rounds_of(r) for c in x.get("cached_tokens") or []]),
                "regrets": [[round(x, 3) for x in s] for s in regrets],
            }
        )
        if r.get("more_rounds"):
            rows[-1]["rounds"] = judge_rounds(r, regrets, threshold)
        for key in ("accepted_counts", "align_shifts"):
            if key in r:
                rows[-1][key] = r[key]
    return rows, noise, threshold


def max_prompt_tokens(run: dict) -> int:
    """The longest prompt an engine was given, in tokens: what decides its prefill chunks."""
    return max((len(p) for p in run["prompts"]), default=0)


def crashed_row(run: dict) -> dict:
    """A control engine that died before it returned tokens: nothing to judge, and a failure of
    the control all the same (its `crashed` says how; the engine log has the rest)."""
    return {
        "scenario": run["scenario"],
        "site": run["site"],
        "batch": run["batch"],
        "mode": run["mode"],
        "sequences": len(run["prompts"]),
        "tokens": 0,
        "errors": 0,
        "worst_regret": None,
        "first_error_at": None,
        "bad_sequences": 0,
        "crashed": run["crashed"],
        "exercised": None,
        "same_as_baseline": 0,
        "max_prompt_tokens": max_prompt_tokens(run),
        "tokens_per_s": 0.0,
        "start_s": 0.0,
        "engine": None,
        # what the control site carries, from its manifest: its engine never said
        "backports": run.get("backports"),
        "regrets": [],
    }


def conclude(
    rows: list[dict],
    noise: float,
    threshold: float,
    plan: Plan,
    vllm_version: str,
    prompt_logprobs: dict | None = None,
    output_logprobs: dict | None = None,
) -> dict:
    """The run's verdicts: the target passes when none of its tokens is an error; with a
    control, the proof holds only when every one of the control's judged runs (speculative, and
    no-spec where a bf16 baseline calibrates) has errors (a scenario whose control is clean shows
    nothing about the bug)."""
    result = {
        "vllm": vllm_version,
        "kv_cache": plan.kv_cache,
        "threshold": threshold,
        "baseline_worst_regret": round(noise, 3),
        # The KV of the "baseline" rows, which alone calibrate: the run's own, or "auto" (bf16)
        # when the plain engine on the run's TurboQuant KV is judged as a run (scenario no-spec).
        "calibrated_on": "auto" if calibrates_on_auto(plan) else plan.kv_cache,
        "tp": plan.tp,
        "scenario": {
            "prompts": plan.prompt_set,
            "prefix_caching": plan.prefix_caching,
            "async_scheduling": plan.async_scheduling,
            "model_runner": plan.model_runner,
            "gdn_prefill_backend": plan.additional_config.get("gdn_prefill_backend", "default"),
            "model_class": plan.model_class,
            "gpu_memory_utilization": plan.gpu_memory_utilization,
            "kv_cache_gib": plan.kv_cache_gib,
            "rounds": plan.rounds,
            "prompt_logprobs": plan.prompt_logprobs,
            "output_logprobs": plan.output_logprobs,
            "check_accepted_counts": plan.check_accepted_counts,
            "count_align_shifts": plan.count_align_shifts,
        },
        "rows": rows,
    }
    if plan.control is not None:
        result["control"] = str(plan.control)
    if prompt_logprobs is not None:
        result["prompt_logprobs"] = prompt_logprobs
    if output_logprobs is not None:
        result["output_logprobs"] = output_logprobs
    return {**result, **verdicts(rows, noise, plan.control is not None, prompt_logprobs, output_logprobs)}


def row_errors(row: dict) -> int:
    """A row's errors: its tokens' (over every round) and, when judged, its prompt logprobs' and
    its output logprobs' (sequences)."""
    judged = (row.get(k) or {} for k in JUDGED_LOGPROBS)
    return row["errors"] + sum(j.get("errors", 0) for j in judged)


def verdicts(
    rows: list[dict],
    noise: float,
    with_control: bool,
    prompt_logprobs: dict | None = None,
    output_logprobs: dict | None = None,
) -> dict:
    """What the rows conclude: calibrated (the plain engine's own tokens pass and its worst regret
    is under the cap; with prompt or output logprobs judged, their calibration too), passed (no
    target token, nor judged prompt logprob or output sequence, is an error) and, with a control,
    whether every judged run of the control failed and what that proves."""
    calibration = [x for x in rows if x["scenario"] == "baseline"]
    target = [x for x in rows if x["site"] == "target"]
    control = [x for x in rows if x["site"] == "control"]
    passed = all(row_errors(x) == 0 for x in target)
    calibrated = all(row_errors(x) == 0 for x in calibration) and noise <= CALIBRATION_CAP
    out: dict[str, Any] = {
        "calibrated": calibrated and all(j is None or j["calibrated"] for j in (prompt_logprobs, output_logprobs)),
        "passed": passed,
    }
    if with_control:
        out["control_failed"] = bool(control) and all(row_errors(x) > 0 or x.get("crashed") for x in control)
        out["proof"] = (
            "control fails, target passes"
            if out["control_failed"] and passed
            else "target fails"
            if not passed
            else "weak: the control passes too"
        )
    return out
