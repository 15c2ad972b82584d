"""One engine run, in its own process: `python -m vllm_backports.verify.engine SPEC.json OUT.json`.

A fresh process per engine frees the GPU between runs and lets the scripted drafter be installed
before vLLM builds its workers (they fork from here, so they inherit it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Collection
from pathlib import Path


def prepare_env() -> None:
    """The environment an engine process sets before vLLM is imported (benchmarks' engines too)."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    # From 0.21 vLLM samples top-k/top-p with FlashInfer where it imports. Every engine here
    # decodes greedily, which never samples; yet the start-up's dummy sampler run samples
    # (temperature 0.5, top-p 0.9: v1/worker/gpu_model_runner.py:6191-6195 in 0.26.0), which
    # builds FlashInfer's sampling module with nvcc where no pre-built one is installed, and an
    # install without FlashInfer fails there. Off, vLLM takes its torch sampler, which greedy
    # never calls either.
    os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
    # The FLA kernels compile and autotune at every engine start (about 100 s of a 120 to 180 s
    # start on an H200); kept on disk, the engines after the first reuse them. Left unset,
    # TRITON_CACHE_DIR is filled in by torch's Inductor, under the Inductor cache vLLM keys by its
    # compile hash, which includes the model's path, and every verify writes its own checkpoint:
    # no engine of another run found them. Set before vLLM starts, it stands on vLLM's default
    # compile path (tests/release/test_verify_compile_cache.py).
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    os.environ.setdefault("TRITON_CACHE_DIR", triton_cache_dir())


def triton_cache_dir() -> str:
    """Where Triton keeps its cache when nothing moves it (triton.knobs: $TRITON_HOME or ~)."""
    return os.path.join(os.environ.get("TRITON_HOME") or os.path.expanduser("~"), ".triton", "cache")


# verify's --model-runner: vLLM's own switch, read at engine construction (V2 by default for MTP
# from 0.29, for ngram from 0.32; earlier releases run V1 whatever it says)
RUNNER_ENV = {"v1": "0", "v2": "1"}


def choose_runner(spec: dict) -> None:
    """The spec's model runner into vLLM's environment, before vLLM reads it; none: the release's."""
    if spec.get("model_runner") in RUNNER_ENV:
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = RUNNER_ENV[spec["model_runner"]]


def drafts_in_this_process(spec: dict) -> bool:
    """Whether vLLM drafts in this process, where the scripts count what they served: not at
    tensor parallel > 1 (workers are forked) nor with the engine core in a process of its own."""
    return spec.get("tp", 1) == 1 and os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "0") == "0"


def run(spec: dict) -> dict:
    prepare_env()
    choose_runner(spec)
    from . import drafts

    scripted = drafts.install_from_env()
    from vllm import LLM, SamplingParams

    counted = None
    if spec.get("check_accepted_counts"):  # docs/SIBLING-BUGS.md section 4; before the builders exist
        from . import counts

        k = (spec.get("speculative") or {}).get("num_speculative_tokens", 1)
        counted = counts.install(k, spec.get("tp", 1))
    shifted = None
    if spec.get("count_align_shifts"):  # [known.align-shift-copy-race]; before the runner exists
        from . import shifts

        shifted = shifts.install(spec.get("tp", 1))
    started = time.perf_counter()
    llm = LLM(**llm_kwargs(spec))
    ready = time.perf_counter()
    for hooked in (counted, shifted):
        if hooked is not None and hooked[0] is not None:
            hooked[0].serving()
    if spec.get("teacher_force"):
        from . import teacher

        forced = spec["teacher_force"]
        regrets = teacher.teacher_force(llm, SamplingParams, forced["sequences"], forced["starts"])
        return {
            "regrets": regrets,
            "engine": describe_or_error(llm),
            "start_s": ready - started,
            "generate_s": time.perf_counter() - ready,
        }
    params = SamplingParams(**sampling_kwargs(spec))
    batch = [{"prompt_token_ids": p} for p in spec["prompts"]]
    outs = llm.generate(batch, params, use_tqdm=False)
    done = time.perf_counter()
    tokens = [list(o.outputs[0].token_ids) for o in outs]
    # Benchmarks time further identical rounds on the warm engine (the first pays for warm-up);
    # verify's --rounds judges them as well: the first rounds - 1 of them are kept.
    counters = spec_counters(llm)
    engine = describe_or_error(llm)
    rounds, accepted, previous = [], [], tokens
    more: list[dict] = []
    for _ in range(max(spec.get("timed_rounds", 0), spec.get("rounds", 1) - 1)):
        if scripted:
            drafts.reset(previous if spec.get("drafts_follow_own_output") else None)
        before = spec_counters(llm) or {}
        t0 = time.perf_counter()
        again = llm.generate(batch, params, use_tqdm=False)
        rounds.append(sum(len(o.outputs[0].token_ids) for o in again) / (time.perf_counter() - t0))
        previous = [list(o.outputs[0].token_ids) for o in again]
        after = spec_counters(llm) or {}
        accepted.append(after.get("num_accepted_tokens", 0) - before.get("num_accepted_tokens", 0))
        if len(more) < spec.get("rounds", 1) - 1:
            more.append({"tokens": previous, **judged_extras(spec, again)})
    extras = judged_extras(spec, outs)
    if more:
        extras["more_rounds"] = more
        engine = describe_or_error(llm)  # the prefix-cache counters of every round
    if counted is not None:
        extras["accepted_counts"] = counts.summarise(*counted)
    if shifted is not None:
        extras["align_shifts"] = shifts.summarise(*shifted)
    return {
        **extras,
        "tokens": tokens,
        "scripted": scripted,
        "script_served": drafts.served() if scripted and drafts_in_this_process(spec) else None,
        "spec_counters": counters,
        "engine": engine,
        "start_s": ready - started,
        "generate_s": done - ready,
        "tokens_per_s": sum(map(len, tokens)) / (done - ready),
        "timed_rounds_tokens_per_s": rounds,
        "timed_rounds_accepted": accepted,
    }


def judged_extras(spec: dict, outs) -> dict:
    """What verify keeps of a round besides its tokens: per request, the prompt tokens vLLM took
    from the prefix cache (RequestOutput.num_cached_tokens; the engine's counters sum them over
    requests, and a hit one block longer than full attention kept, vLLM #53912, shows only per
    request); vLLM's prompt logprobs, when asked."""
    extras: dict = {}
    cached = [getattr(o, "num_cached_tokens", None) for o in outs]
    if any(c is not None for c in cached):
        extras["cached_tokens"] = cached
    if spec.get("prompt_logprobs"):
        extras["prompt_logprobs"] = [prompt_logprobs_of(o, p) for o, p in zip(outs, spec["prompts"], strict=True)]
    if spec.get("output_logprobs"):
        extras["output_logprobs"] = [output_logprobs_of(o) for o in outs]
    return extras


def output_logprobs_of(out) -> list[float | None] | None:
    """vLLM's logprob of each token it chose (None where it gave none), from the completion's
    logprobs; None without any."""
    completion = out.outputs[0]
    return logprobs_by_position(getattr(completion, "logprobs", None), completion.token_ids)


def prompt_logprobs_of(out, prompt: list[int]) -> list[float | None] | None:
    """vLLM's logprob of each prompt token (None at position 0, and where vLLM gave none); None
    without any."""
    return logprobs_by_position(getattr(out, "prompt_logprobs", None), prompt)


def logprobs_by_position(given, tokens: list[int]) -> list[float | None] | None:
    """The logprob vLLM gave of each of `tokens` at its position, from a list of {token id:
    Logprob} or a FlatLogprobs (both index by position); None where it gave none there, and None
    for `given` None."""
    if given is None:
        return None
    found: list[float | None] = []
    for i, token in enumerate(tokens):
        position = given[i] if i < len(given) else None
        entry = (position or {}).get(token)
        found.append(None if entry is None else float(getattr(entry, "logprob", entry)))
    return found


def engine_arg_names() -> set[str]:
    """The fields of this vLLM's EngineArgs (what LLM(...) accepts)."""
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    return {f.name for f in dataclasses.fields(EngineArgs)}


def text_only_kwargs(engine_args: Collection[str]) -> dict:
    """A multimodal model served for text alone, as text-only deployments of Qwen3.5 start it:
    language_model_only (in every vLLM release from 0.17.0 to 0.33.0), or where a release lacks
    it, no image or video per prompt. Either way vLLM skips the vision tower and never builds the
    multimodal processor (no image processor is loaded)."""
    if "language_model_only" in engine_args:
        return {"language_model_only": True}
    return {"limit_mm_per_prompt": {"image": 0, "video": 0}}


def llm_kwargs(spec: dict, engine_args: Collection[str] | None = None) -> dict:
    """vLLM's LLM(...) arguments for an engine spec. Prompts go in as token ids (verify tokenizes,
    or writes them, itself), so vLLM never loads a tokenizer. `engine_args`: the EngineArgs
    fields of the vLLM that runs it (read from the installed vLLM when needed and not given)."""
    kwargs = {
        "model": spec["model"],
        "skip_tokenizer_init": True,
        # bf16 for the tiny model; "auto" (the checkpoint's own) for a user's model
        "dtype": spec.get("dtype", "bfloat16"),
        "seed": 0,
        "max_model_len": spec["max_model_len"],
        "max_num_seqs": spec["max_num_seqs"],
        "gpu_memory_utilization": spec.get("gpu_memory_utilization", 0.35),
        "tensor_parallel_size": spec.get("tp", 1),
        "enforce_eager": spec["eager"],
        "additional_config": spec.get("additional_config") or {},
        "disable_log_stats": False,  # the spec-decode and prefix-cache counters read below
    }
    if spec.get("kv_cache_memory_bytes"):
        # A fixed KV size skips the memory profile's sizing, which reads the whole device's free
        # memory and so goes wrong while another engine shares the GPU.
        kwargs["kv_cache_memory_bytes"] = spec["kv_cache_memory_bytes"]
    if spec.get("max_num_batched_tokens"):
        kwargs["max_num_batched_tokens"] = spec["max_num_batched_tokens"]
    if not spec["eager"]:
        kwargs["compilation_config"] = {"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64]}
    if spec.get("speculative"):
        kwargs["speculative_config"] = spec["speculative"]
    if spec.get("kv_cache_dtype"):
        kwargs["kv_cache_dtype"] = spec["kv_cache_dtype"]
    # None leaves the release's default (prefix caching is on for hybrids from 0.28; MTP turns
    # async scheduling on): describe() reads back what the engine chose.
    for key in ("enable_prefix_caching", "async_scheduling"):
        if spec.get(key) is not None:
            kwargs[key] = spec[key]
    if spec.get("text_only"):
        kwargs |= text_only_kwargs(engine_arg_names() if engine_args is None else engine_args)
    return kwargs


def sampling_kwargs(spec: dict) -> dict:
    """Greedy decoding of max_tokens tokens: past the end of sequence (the tiny model's fixed
    lengths), or up to one of spec["stop_token_ids"] (a user's model stops where it would)."""
    stop = spec.get("stop_token_ids")
    # prompt_logprobs=0 / logprobs=0: the logprob of each prompt / chosen token itself, no others
    asked = {"prompt_logprobs": 0} if spec.get("prompt_logprobs") else {}
    if spec.get("output_logprobs"):
        asked["logprobs"] = 0
    if stop:
        return {"temperature": 0.0, "max_tokens": spec["max_tokens"], "stop_token_ids": list(stop), **asked}
    return {"temperature": 0.0, "max_tokens": spec["max_tokens"], "ignore_eos": True, **asked}


def describe_or_error(llm) -> dict:
    try:
        return describe(llm)
    except Exception as exc:  # evidence, not a verdict: a release whose config moved still decodes
        return {"error": f"{type(exc).__name__}: {exc}"}


def counters_of(llm, prefix: str) -> dict | None:
    """vLLM's counters whose name starts with `prefix`, if its metrics API has them."""
    try:
        metrics = llm.get_metrics()
    except Exception:  # an older or newer metrics API: the counters are a report, not a verdict
        return None
    out = {
        m.name.removeprefix(prefix): m.value
        for m in metrics
        if m.name.startswith(prefix) and isinstance(getattr(m, "value", None), int | float)
    }
    return out or None


def spec_counters(llm) -> dict | None:
    """Speculative decoding: drafts, draft tokens, accepted tokens."""
    return counters_of(llm, "vllm:spec_decode_")


def patches_applied() -> dict[str, str | None] | None:
    """The series digest of the vLLM this process imported ({} for a pristine install, so an
    unpatched control is recognisable as one in its evidence)."""
    import vllm

    return manifest_patches(Path(vllm.__file__).parent)


def manifest_backports(package: Path) -> list[str] | None:
    """The backport ids recorded in the manifest of the vLLM package at `package`; [] without one."""
    patches = manifest_patches(package)
    return None if patches is None else list(patches)


def manifest_patches(package: Path) -> dict[str, str | None] | None:
    """The series digest of the vLLM package at `package`: each applied backport's id and the
    sha256 its patch file had when the manifest recorded it, in the order applied; {} without a
    manifest (pristine). Evidence counts a proof for the series only while these are the pins
    versions.toml ships, so a patch changed after its proof no longer reads as proven."""
    manifest = package / ".backports" / "manifest.json"
    if not manifest.exists():
        return {}
    try:
        return {a["id"]: a.get("sha256") for a in json.loads(manifest.read_text())["applied"]}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # unreadable: reported as unknown, apply.py status says why


def _text(value) -> str | None:
    return None if value is None else getattr(value, "name", None) or str(value)


def describe(llm) -> dict:
    """What the engine really ran with, read back from vLLM's resolved config (names moved across
    releases: whatever a release lacks is None)."""
    import vllm

    config = getattr(getattr(llm, "llm_engine", None), "vllm_config", None)
    get = lambda obj, name: getattr(obj, name, None)  # noqa: E731
    cache, sched, comp = get(config, "cache_config"), get(config, "scheduler_config"), get(config, "compilation_config")
    spec, par, model = get(config, "speculative_config"), get(config, "parallel_config"), get(config, "model_config")
    v2 = get(config, "use_v2_model_runner")
    patches = patches_applied()
    if v2 is None:
        v2 = os.environ.get("VLLM_USE_V2_MODEL_RUNNER", "0") == "1"
    return {
        "vllm": vllm.__version__,
        "backports": None if patches is None else list(patches),
        "patches": patches,
        "architecture": (get(get(model, "hf_config"), "architectures") or [None])[0],
        "language_model_only": get(get(model, "multimodal_config"), "language_model_only"),
        "prefix_caching": get(cache, "enable_prefix_caching"),
        "mamba_cache_mode": _text(get(cache, "mamba_cache_mode")),
        "block_size": get(cache, "block_size"),
        "kv_cache_dtype": _text(get(cache, "cache_dtype")),
        "async_scheduling": get(sched, "async_scheduling"),
        "cudagraph_mode": _text(get(comp, "cudagraph_mode")),
        "model_runner": "v2" if v2 else "v1",
        "tp": get(par, "tensor_parallel_size"),
        "speculative": None
        if spec is None
        else {"method": get(spec, "method"), "k": get(spec, "num_speculative_tokens")},
        "gdn_prefill_backend": (get(config, "additional_config") or {}).get("gdn_prefill_backend", "default"),
        "prefix_cache": counters_of(llm, "vllm:prefix_cache_"),
    }


def main(argv: list[str]) -> int:
    spec_path, out_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    result = run(spec)
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
