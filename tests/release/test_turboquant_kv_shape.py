"""The V1 runner's KV cache reshape of the installed vLLM release, pristine and with its series
applied, run on the CPU with TurboQuant's real attention backend: which cache dtype each layer's
shape is asked for.

Needs torch and a vLLM release that `turboquant-kv-shape` serves (0.25.0 .. 0.26.0); skipped
elsewhere. On those releases the pristine runner asks TurboQuant's backend for an "auto" shape and
the engine dies at start-up (vLLM #50709).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from . import installed

torch, RELEASE = installed.served("turboquant-kv-shape")
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
PRESET = "turboquant_k8v4"
HEADS, HEAD_SIZE, BLOCK, BLOCKS = 2, 128, 16, 3


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runner")
    return {patched: installed.load(tmp, RELEASE, RUNNER, patched).GPUModelRunner for patched in (False, True)}


def _groups(skip_layer: bool):
    from vllm.model_executor.layers.quantization.turboquant.config import TurboQuantConfig
    from vllm.v1.attention.backends.turboquant_attn import TurboQuantAttentionBackend
    from vllm.v1.kv_cache_interface import FullAttentionSpec, TQFullAttentionSpec

    slot = TurboQuantConfig.from_cache_dtype(PRESET, HEAD_SIZE).slot_size_aligned
    tq = TQFullAttentionSpec(block_size=BLOCK, num_kv_heads=HEADS, head_size=HEAD_SIZE, head_size_v=HEAD_SIZE,
                             dtype=torch.uint8, tq_slot_size=slot)  # TurboQuant caches are bytes
    groups = [SimpleNamespace(kv_cache_spec=tq, backend=TurboQuantAttentionBackend, kv_cache_group_id=0,
                              layer_names=["attn.tq"])]
    if skip_layer:
        # A --kv-cache-dtype-skip-layers layer: an unquantized spec, its backend a recording stand-in.
        plain = FullAttentionSpec(block_size=BLOCK, num_kv_heads=HEADS, head_size=HEAD_SIZE, dtype=torch.bfloat16)
        groups.append(SimpleNamespace(kv_cache_spec=plain, backend=_Recording, kv_cache_group_id=1,
                                      layer_names=["attn.skip"]))
    return groups


class _Recording:
    """A backend that records the cache dtype it is asked to shape, standing in for a skip layer's."""

    asked: list[str] = []

    @classmethod
    def get_kv_cache_shape(cls, num_blocks, block_size, num_kv_heads, head_size, cache_dtype_str="auto"):
        cls.asked.append(cache_dtype_str)
        return (2, num_blocks, block_size, num_kv_heads, head_size)

    @classmethod
    def get_kv_cache_stride_order(cls):
        raise NotImplementedError


def _reshape(runner_cls, skip_layer: bool):
    groups = _groups(skip_layer)
    runner = SimpleNamespace(
        kv_cache_config=SimpleNamespace(kv_cache_tensors=[]),
        _kv_cache_spec_attn_group_iterator=lambda: groups,
        runner_only_attn_layers=set(),
        cache_config=SimpleNamespace(cache_dtype=PRESET),
        _has_mixed_attention_kv_layout=lambda sizes: False,
    )
    raw = {name: torch.zeros(BLOCKS * g.kv_cache_spec.page_size_bytes, dtype=torch.int8)
           for g in groups for name in g.layer_names}
    _Recording.asked = []
    return runner_cls._reshape_kv_cache_tensors(runner, raw, [BLOCK] * len(groups))


def test_pristine_runner_asks_turboquant_for_an_auto_shape_and_fails(runners):
    with pytest.raises(ValueError, match="Unknown TurboQuant cache dtype: 'auto'"):
        _reshape(runners[False], skip_layer=False)


def test_patched_runner_shapes_turboquant_layers_by_their_preset(runners):
    from vllm.model_executor.layers.quantization.turboquant.config import TurboQuantConfig

    caches = _reshape(runners[True], skip_layer=False)
    slot = TurboQuantConfig.from_cache_dtype(PRESET, HEAD_SIZE).slot_size_aligned
    shape = caches["attn.tq"].shape  # the physical order differs between releases; the packed slot is last
    assert shape[-1] == slot and sorted(shape) == sorted((BLOCKS, HEADS, BLOCK, slot))


def test_patched_runner_still_shapes_skip_layers_unquantized(runners):
    caches = _reshape(runners[True], skip_layer=True)
    assert _Recording.asked == ["auto"]
    assert caches["attn.skip"].shape == (2, BLOCKS, BLOCK, HEADS, HEAD_SIZE)
