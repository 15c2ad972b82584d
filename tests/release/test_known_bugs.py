"""Known bugs listed without a backport (`bugs` in versions.toml) are read off the real files of
each release, pristine and as its series leaves them, so the support matrix cannot keep listing one
that a release or its series has fixed, nor miss a release that still has it."""

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
def test_the_turboquant_prefill_fast_path_bug_is_listed_exactly_where_the_served_code_has_it(version, tmp_path):
    release = CATALOGUE.releases[version]
    site = tmp_path / "site"
    assert run("check", "--vllm", version, "--fetch", "--target", str(site)).code == 0
    pristine = FAST_PATH in (site / BACKEND).read_text()
    assert run("--vllm", version, "--target", str(site)).code == 0
    served = FAST_PATH in (site / BACKEND).read_text()
    assert served == ("turboquant-prefill-fastpath" in release.bugs)
    # the release has the bug, and its series removes it exactly where it carries the fix
    assert pristine and served == ("turboquant-prefill-fastpath" not in release.backports)
