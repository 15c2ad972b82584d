"""conftest.py of `maint upstream-tests`: copied above a release's own tests/ (never into them) so
that they run on a CPU machine with vLLM's CUDA wheel, and so that each test's outcome is recorded.
On a GPU ($VLLM_BACKPORTS_UPSTREAM_DEVICE "cuda") only the hub configs and the recording apply:
the tests run as upstream runs them.

Shims on the CPU, each because the tests cannot run there without it:
- the CPU platform: the CUDA wheel finds no GPU and no "cpu" in its version, so vLLM would settle
  on UnspecifiedPlatform, which has no device type for the tests' tensors;
- pinned host memory off: pinning needs a GPU driver;
- no global accelerator clean-up after each test (upstream's `skip_global_cleanup` marker on every
  test): it tears down distributed state and CUDA memory that a CPU run never set up;
- hub models as local directories holding only a config.json (HUB_CONFIGS): nothing is downloaded;
- torch._C._cpu._is_avx512_supported where the stand-in torch lacks it (_torch_cpu_probes).

Results go, one JSON object a line, to $VLLM_BACKPORTS_UPSTREAM_RESULTS: a "meta" line with the
file vLLM was imported from (the run must prove it tested the tree it claims), then every
collection and test report with its outcome and, for skips and failures, the reason.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

# Stand-in configs, small: the builders under test read a model's config, never its weights.
# The dtype under both names, as transformers 4 ("torch_dtype") and 5 ("dtype") write it.
# Qwen/Qwen3.5-0.8B holds Qwen3-Next's layout (GDN and full-attention layers, GDN heads of 128),
# whose GDN layers are the same module and builder: vLLM's Qwen3.5 class imports Qwen3-VL's,
# which needs torchvision, and the CPU environment carries none (PyPI's build is CUDA-only).
HUB_CONFIGS = {
    "Qwen/Qwen3.5-0.8B": {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "vocab_size": 2048,
        "hidden_size": 512,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 4,
        "linear_num_value_heads": 8,
        "num_experts": 4,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 256,
        "shared_expert_intermediate_size": 256,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.25,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "dtype": "bfloat16",
    },
    # The published configs of these two (their sizes decide the runner's buffers the tests read).
    "facebook/opt-125m": {
        "architectures": ["OPTForCausalLM"],
        "model_type": "opt",
        "vocab_size": 50272,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "ffn_dim": 3072,
        "max_position_embeddings": 2048,
        "word_embed_proj_dim": 768,
        "do_layer_norm_before": True,
        "activation_function": "relu",
        "pad_token_id": 1,
        "bos_token_id": 2,
        "eos_token_id": 2,
        "torch_dtype": "float16",
        "dtype": "float16",
    },
    "Qwen/Qwen3-8B": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "bos_token_id": 151643,
        "eos_token_id": 151645,
        "torch_dtype": "bfloat16",
        "dtype": "bfloat16",
    },
}

_RESULTS = os.environ.get("VLLM_BACKPORTS_UPSTREAM_RESULTS")
_ON_CPU = os.environ.get("VLLM_BACKPORTS_UPSTREAM_DEVICE", "cpu") == "cpu"


def _record(entry: dict) -> None:
    if _RESULTS:
        with open(_RESULTS, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def _reason(report) -> str:
    """One line: a skip's reason, or the last line of a failure (its exception)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        text = str(longrepr[2])
    elif longrepr is None:
        text = ""
    else:
        crash = getattr(getattr(longrepr, "reprcrash", None), "message", None)
        text = crash if crash else str(longrepr).strip().splitlines()[-1:][0] if str(longrepr).strip() else ""
    return " ".join(text.split())[:300]


def _torch_cpu_probes() -> None:
    """vLLM 0.17's CPU platform asks torch._C._cpu._is_avx512_supported() when it loads its
    kernels, at the first import of vLLM's custom ops; torch 2.13, which stands in for the
    release's pin of 2.10, has only _get_cpu_capability there, so every test module that imports
    the model runner fails to collect. Answer from the capability torch reports."""
    import torch

    cpu = torch._C._cpu
    if not hasattr(cpu, "_is_avx512_supported"):

        def avx512() -> bool:
            return torch.backends.cpu.get_cpu_capability().startswith("AVX512")

        cpu._is_avx512_supported = avx512  # type: ignore[attr-defined]


def _cpu_platform() -> None:
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    vllm.platforms._current_platform = CpuPlatform()
    # Importing vllm.platforms has already resolved a platform (UnspecifiedPlatform) and read
    # PIN_MEMORY from it: turn it off before modules take it as a default argument
    # (CpuGpuBuffer's pin_memory=PIN_MEMORY), where no later patch reaches.
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm") and getattr(module, "PIN_MEMORY", False) is True:
            module.PIN_MEMORY = False  # type: ignore[attr-defined]


# At import, before upstream's tests/conftest.py (loaded after this one) imports the rest of vLLM.
if _ON_CPU:
    _torch_cpu_probes()
    _cpu_platform()


@pytest.fixture(autouse=True)
def _no_pinned_memory(monkeypatch):
    # Modules keep their own copy of PIN_MEMORY (`from vllm.utils.torch_utils import PIN_MEMORY`),
    # some taken before the platform above was set: each test sees all of them off.
    if not _ON_CPU:
        yield
        return
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm") and getattr(module, "PIN_MEMORY", False) is True:
            monkeypatch.setattr(module, "PIN_MEMORY", False)
    yield


def pytest_configure(config):
    import vllm
    import vllm.platforms

    config.addinivalue_line("markers", "skip_global_cleanup: upstream's marker, set on every CPU test here")
    for name, config_json in HUB_CONFIGS.items():
        directory = Path(name)  # relative: the run's working directory, which the tests see
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(config_json, indent=2))
    _record({"meta": True, "vllm": vllm.__file__, "platform": type(vllm.platforms._current_platform).__name__})


def pytest_collection_modifyitems(items):
    if not _ON_CPU:
        return  # on a GPU, upstream's clean-up between tests is part of how its tests run
    for item in items:
        item.add_marker(pytest.mark.skip_global_cleanup)


def pytest_collectreport(report):
    if report.failed:
        _record({"nodeid": report.nodeid, "when": "collect", "outcome": "error", "reason": _reason(report)})
    elif report.skipped:
        _record({"nodeid": report.nodeid, "when": "collect", "outcome": "skipped", "reason": _reason(report)})


def pytest_runtest_logreport(report):
    outcome = report.outcome
    reason = _reason(report) if outcome != "passed" else ""
    if hasattr(report, "wasxfail"):
        # An expected failure counts as a skip (with its reason); an unexpected pass as a pass.
        outcome, reason = ("skipped", f"xfail: {report.wasxfail}") if report.skipped else ("passed", "")
    if report.when != "call" and outcome == "passed":
        return  # setup and teardown that passed say nothing the call does not
    if report.when != "call" and outcome == "failed":
        outcome = "error"
    _record({"nodeid": report.nodeid, "when": report.when, "outcome": outcome, "reason": reason})
