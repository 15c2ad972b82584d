"""Build the target (and with --mtp, the MTP drafter) that an engine started as verify starts it
would build from a checkpoint, on the CPU, and load the checkpoint's tensors into it:

    python tests/verify/vllm_cpu_build.py DIR ENGINE_KWARGS_JSON [--mtp]

Prints one JSON object: per model, its class, the class of its vision tower (if any), its
parameters and those load_weights reported loaded. Run in a process of its own: it puts vLLM's
CPU platform in place of the one a CUDA wheel finds no GPU for, defines the one custom op a
release's activation layer looks up at import, and starts a one-process gloo group.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(directory: str, engine_kwargs: dict, mtp: bool) -> dict:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import torch
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    vllm.platforms._current_platform = CpuPlatform()
    ops = torch.library.Library("_C", "FRAGMENT")  # kept: the definition lives as long as it does
    ops.define("silu_and_mul(Tensor! out, Tensor input) -> ()")
    from vllm.config import (
        DeviceConfig,
        ModelConfig,
        ParallelConfig,
        SpeculativeConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.model_executor.model_loader.weight_utils import safetensors_weights_iterator
    from vllm.model_executor.models.registry import ModelRegistry

    model_config = ModelConfig(model=directory, skip_tokenizer_init=True, dtype="bfloat16", **engine_kwargs)
    with set_current_vllm_config(VllmConfig(model_config=model_config, device_config=DeviceConfig("cpu"))):
        init_distributed_environment(
            world_size=1, rank=0, distributed_init_method="tcp://127.0.0.1:29581", local_rank=0, backend="gloo"
        )
        initialize_model_parallel(1, 1)
    files = sorted(str(p) for p in Path(directory).glob("*.safetensors"))

    def build(config, speculative=None) -> dict:
        vllm_config = VllmConfig(model_config=config, device_config=DeviceConfig("cpu"), speculative_config=speculative)
        cls, _ = ModelRegistry.resolve_model_cls(config.architectures, config)
        with set_current_vllm_config(vllm_config), torch.device("cpu"):
            model = cls(vllm_config=vllm_config, prefix="")
            loaded = model.load_weights(safetensors_weights_iterator(files, False))
        visual = model._modules.get("visual")
        return {
            "class": cls.__name__,
            "visual": type(visual).__name__ if visual is not None else None,
            "params": sorted(n for n, _ in model.named_parameters()),
            "loaded": sorted(loaded),
        }

    out = {"target": build(model_config)}
    if mtp:
        spec = SpeculativeConfig(
            method="mtp", num_speculative_tokens=3, target_model_config=model_config,
            target_parallel_config=ParallelConfig(),
        )
        out["drafter"] = build(spec.draft_model_config, spec)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], json.loads(sys.argv[2]), "--mtp" in sys.argv[3:])))
