"""Known bugs listed without a backport (`bugs` in versions.toml) are read off the real pristine
files of each release that lists them, so the support matrix cannot keep listing one a release
has fixed, nor miss a release that still has it."""

from __future__ import annotations

import pytest

from cli_runner import run

from .conftest import CATALOGUE

BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"
# vLLM #46460: this test alone picks the prefill fast path, and it holds for a batch whose longest
# sequence is a first chunk even when a continuation chunk sits beside it.
FAST_PATH = "if _HAS_FLASH_ATTN and attn_metadata.max_query_len == attn_metadata.max_seq_len:"
TURBOQUANT = [v for v in CATALOGUE.versions if BACKEND in CATALOGUE.releases[v].files]


@pytest.mark.parametrize("version", TURBOQUANT)
def test_the_turboquant_prefill_fast_path_bug_is_listed_exactly_where_the_code_has_it(version, tmp_path):
    site = tmp_path / "site"
    assert run("check", "--vllm", version, "--fetch", "--target", str(site)).code == 0
    has_it = FAST_PATH in (site / BACKEND).read_text()
    assert has_it == ("turboquant-prefill-fastpath" in CATALOGUE.releases[version].bugs)
