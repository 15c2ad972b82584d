"""What verify hands vLLM's LLM(...), against each release's own sources (vLLM cannot be installed
here): every keyword verify's engine can pass is a field of the release's EngineArgs, every key of
its speculative presets a field of its SpeculativeConfig, and the capture sizes it sets a field of
its CompilationConfig. A release missing one would fail only on the GPU, after minutes of staging."""

from __future__ import annotations

import ast

import pytest

from vllm_backports.verify import engine, scenarios

from .conftest import CATALOGUE, source_reader

ARG_UTILS = "vllm/engine/arg_utils.py"
SPECULATIVE = "vllm/config/speculative.py"
COMPILATION = "vllm/config/compilation.py"

# An engine spec with every optional key verify's engine reads set, so llm_kwargs emits each
# keyword it can emit.
EVERY_KEY = {
    "model": "/m",
    "dtype": "bfloat16",
    "max_model_len": 512,
    "max_num_seqs": 16,
    "gpu_memory_utilization": 0.3,
    "tp": 1,
    "eager": False,
    "additional_config": {},
    "kv_cache_memory_bytes": 1 << 30,
    "max_num_batched_tokens": 64,
    "speculative": scenarios.PRESETS["ngram"],
    "kv_cache_dtype": "auto",
    "enable_prefix_caching": True,
    "async_scheduling": False,
    "text_only": True,
}


def fields(source: str, cls: str) -> set[str]:
    """The annotated fields of dataclass `cls` in `source`."""
    found = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == cls]
    assert len(found) == 1, f"class {cls}: {len(found)} definitions"
    return {s.target.id for s in found[0].body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


@pytest.fixture(scope="module")
def sources():
    return source_reader([ARG_UTILS, SPECULATIVE, COMPILATION])


def test_the_spec_sets_every_keyword_llm_kwargs_can_emit():
    """The spec above must keep up with llm_kwargs: a keyword it adds and this spec does not set
    would go unchecked."""
    both = engine.llm_kwargs(EVERY_KEY, {"language_model_only"}) | engine.llm_kwargs(EVERY_KEY, set())
    branches = {"kv_cache_memory_bytes", "max_num_batched_tokens", "compilation_config", "speculative_config",
                "kv_cache_dtype", "enable_prefix_caching", "async_scheduling", "language_model_only",
                "limit_mm_per_prompt"}
    assert branches <= set(both)


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_every_keyword_verify_gives_llm_is_an_engine_arg_of_the_release(version, sources):
    src = sources(version)
    assert {ARG_UTILS, SPECULATIVE, COMPILATION} <= set(src), (version, sorted(src))
    engine_args = fields(src[ARG_UTILS], "EngineArgs")
    kwargs = engine.llm_kwargs(EVERY_KEY, engine_args)
    assert set(kwargs) <= engine_args, (version, sorted(set(kwargs) - engine_args))
    speculative = fields(src[SPECULATIVE], "SpeculativeConfig")
    for name, preset in scenarios.PRESETS.items():
        assert set(preset) <= speculative, (version, name, sorted(set(preset) - speculative))
        assert f'"{preset["method"]}"' in src[SPECULATIVE], (version, preset["method"])
    assert set(kwargs["compilation_config"]) <= fields(src[COMPILATION], "CompilationConfig"), version
