"""The tiny checkpoint against the installed vLLM, on the CPU: what the engine does with it up to
where a GPU is needed. Skipped without vLLM; run in a CPU venv made by .ci/cpu-vllm-env.sh (with
torchvision importable: vLLM's Qwen3-VL module, which the Qwen3.5 classes import, needs
transformers' Qwen2-VL image processor).

On vLLM 0.26.0 (its registry has Qwen3_5ForConditionalGeneration but no Qwen3_5ForCausalLM) a
verify of the qwen3_5 classes failed at engine start on an H100: the text-only architecture was
resolved to the multimodal class (vLLM swaps the ForCausalLM suffix for a registered one), whose
processor looked for the checkpoint's image processor (OSError: ... preprocessor_config.json).
These tests reproduce that failure here and show that the checkpoint write_model now writes for
the installed release, started with engine.text_only_kwargs, builds no processor, builds the
text model with the vision tower left out, and loads every parameter of it and of its MTP
drafter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_backports.verify import engine, model

pytest.importorskip("transformers")
pytest.importorskip("vllm")
try:
    from torchvision.transforms.v2 import functional  # noqa: F401
except Exception as exc:  # a CUDA torchvision beside a CPU torch fails to import its ops
    pytest.skip(f"torchvision does not import here ({exc})", allow_module_level=True)

CLASSES = ["qwen3_5", "qwen3_5_moe"]
BUILD = Path(__file__).with_name("vllm_cpu_build.py")


def registry() -> set[str]:
    from vllm.model_executor.models import ModelRegistry

    return set(ModelRegistry.get_supported_archs())


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Per class: the checkpoint verify writes for this vLLM (MTP layer included), and the
    text-only layout it wrote for every release before."""
    root = tmp_path_factory.mktemp("vllm-text-only")
    archs = registry()
    return {
        name: {
            "written": model.write_model(
                root / name, mtp=True, model_class=name, architecture=model.architecture_for(name, archs)
            ),
            "text-only layout": model.write_model(root / f"{name}-causal", model_class=name),
        }
        for name in CLASSES
    }


def model_config(directory: Path, **kwargs):
    from vllm.config import ModelConfig

    return ModelConfig(model=str(directory), skip_tokenizer_init=True, dtype="bfloat16", max_model_len=512, **kwargs)


def engine_kwargs(directory: Path) -> dict:
    """What engine.llm_kwargs adds for this checkpoint (the text_only spec that run.execute sets)."""
    arch = json.loads((directory / "config.json").read_text())["architectures"][0]
    return engine.text_only_kwargs(engine.engine_arg_names()) if model.is_multimodal(arch) else {}


def max_tokens_per_item(config):
    """The call that failed at engine start (InputProcessor -> MultiModalBudget)."""
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.encoder_budget import get_mm_max_toks_per_item

    processor = MULTIMODAL_REGISTRY.create_processor(config)
    return get_mm_max_toks_per_item(config, MULTIMODAL_REGISTRY, processor, {"image": 1, "video": 1})


@pytest.mark.parametrize("name", CLASSES)
def test_the_written_checkpoint_builds_no_multimodal_processor(checkpoints, name):
    from vllm.multimodal import MULTIMODAL_REGISTRY

    cls = model.MODEL_CLASSES[name]
    d = checkpoints[name]["written"]
    config = model_config(d, **engine_kwargs(d))
    text = config.hf_text_config
    assert text.model_type == cls.config["model_type"] and text.linear_key_head_dim == 128
    if cls.vllm_architecture in registry():  # 0.27.0 and later: the text-only class, as before
        assert config.architecture == cls.vllm_architecture and not engine_kwargs(d)
    else:  # before 0.27.0: the multimodal class, for text alone
        assert config.architecture == cls.multimodal_architecture
        assert config.multimodal_config.get_limit_per_prompt("image") == 0
        assert config.multimodal_config.get_limit_per_prompt("video") == 0
    # InputProcessor, the renderer, the scheduler and the GPU model runner each build the
    # multimodal processor (and so load the image processor) only where this is true
    assert not MULTIMODAL_REGISTRY.supports_multimodal_inputs(config)


@pytest.mark.parametrize("layout", ["written", "text-only layout"])
@pytest.mark.parametrize("name", CLASSES)
def test_without_text_only_the_multimodal_class_asks_for_an_image_processor(checkpoints, name, layout):
    """The failure seen on the H100 with vLLM 0.26.0, reproduced: the multimodal class with its
    vision side on needs preprocessor_config.json, which the tiny checkpoint does not have."""
    from vllm.multimodal import MULTIMODAL_REGISTRY

    config = model_config(checkpoints[name][layout])
    if not config.is_multimodal_model:
        pytest.skip(f"vLLM resolves {config.architecture} to a text-only class here")
    assert MULTIMODAL_REGISTRY.supports_multimodal_inputs(config)
    with pytest.raises(OSError, match="preprocessor_config.json"):
        max_tokens_per_item(config)


@pytest.mark.parametrize("name", CLASSES)
def test_vllm_builds_the_text_model_and_loads_every_parameter_of_it_and_of_the_drafter(checkpoints, name):
    d = checkpoints[name]["written"]
    run = subprocess.run(
        [sys.executable, str(BUILD), str(d), json.dumps(engine_kwargs(d)), "--mtp"],
        capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    built = json.loads(run.stdout.strip().splitlines()[-1])
    cls = model.MODEL_CLASSES[name]
    target, drafter = built["target"], built["drafter"]
    assert target["class"] in (cls.vllm_architecture, cls.multimodal_architecture)
    if target["class"] == cls.multimodal_architecture:
        assert target["visual"] == "StageMissingLayer"  # the vision tower is never built
        assert all(p.startswith("language_model.") for p in target["params"])
    assert drafter["class"] == cls.vllm_mtp_architecture

    def names(ps):  # FusedMoE also lists its expert weights under routed_experts (vLLM 0.26.0)
        return {p.replace(".routed_experts.", ".") for p in ps}

    for built_model in (target, drafter):
        assert names(built_model["params"]) == names(built_model["loaded"])
    # the text model's parameters as the text-only class of 0.27.0 and later has them: 85 dense,
    # 117 MoE (every decoder layer's; tests/verify/test_model.py), 14 / 18 for the drafter
    assert len(names(target["params"])) == {"qwen3_5": 85, "qwen3_5_moe": 117}[name]
    assert len(names(drafter["params"])) == {"qwen3_5": 14, "qwen3_5_moe": 18}[name]
