"""Where verify's GDN prefill choice reaches vLLM, against each release's own sources: before
PREFILL_CHOICE_FROM the release picks FlashInfer's prefill on every compute capability 9.0 GPU
and reads no gdn_prefill_backend (verify.run.check_prefill refuses what it would then run);
from it on, the release reads the key verify sets."""

from __future__ import annotations

import pytest
from packaging.version import Version

from vllm_backports.verify import scenarios

from .conftest import CATALOGUE, source_reader

QWEN3_NEXT = "vllm/model_executor/models/qwen3_next.py"
GDN_LAYER = "vllm/model_executor/layers/mamba/gdn_linear_attn.py"  # 0.19 moved the layer here
CHOICE = Version(scenarios.PREFILL_CHOICE_FROM)
# up to 0.19.x: later releases split the layer again and are checked by the engine-args test
RELEASES = [v for v in CATALOGUE.versions if Version(v) < Version("0.20.0")]


@pytest.fixture(scope="module")
def sources():
    return source_reader([QWEN3_NEXT, GDN_LAYER])


@pytest.mark.parametrize("version", RELEASES)
def test_the_release_reads_the_choice_from_prefill_choice_from(sources, version):
    files = sources(version)
    layer = files.get(GDN_LAYER) or files[QWEN3_NEXT]
    assert "class ChunkGatedDeltaRule" in layer
    if Version(version) < CHOICE:
        assert "gdn_prefill_backend" not in layer
        # FlashInfer on capability 90 and nothing else decides it
        assert "is_device_capability(90)" in layer and "self._forward_method = self.forward_cuda" in layer
    else:
        assert "gdn_prefill_backend" in layer


def test_prefill_choice_from_is_a_release_of_the_catalogue():
    assert scenarios.PREFILL_CHOICE_FROM in CATALOGUE.versions
