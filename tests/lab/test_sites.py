"""A candidate patch (benchmarks/alternatives) on a site: exactly, and all files or none."""

from __future__ import annotations

import pytest

from lab.sites import apply_candidate, candidate

PATCH = b"""\
Description: a candidate of three files
Origin: vendor
Bug: https://github.com/vllm-project/vllm/issues/1
Forwarded: no
Applied-Upstream: no
---
--- a/vllm/a.py
+++ b/vllm/a.py
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- a/vllm/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-old
--- /dev/null
+++ b/vllm/new/made.py
@@ -0,0 +1 @@
+made
"""


@pytest.fixture
def site(tmp_path):
    (tmp_path / "site/vllm").mkdir(parents=True)
    (tmp_path / "site/vllm/a.py").write_bytes(b"one\ntwo\nthree\n")
    (tmp_path / "site/vllm/gone.py").write_bytes(b"old\n")
    (tmp_path / "0001-cand.patch").write_bytes(PATCH)
    return tmp_path / "site"


def files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_candidate_changes_deletes_and_creates_its_files(site):
    apply_candidate(site, site.parent / "0001-cand.patch")
    assert files(site) == {"vllm/a.py": b"one\nTWO\nthree\n", "vllm/new/made.py": b"made\n"}


def test_a_candidate_that_does_not_match_one_file_changes_none(site):
    (site / "vllm/gone.py").write_bytes(b"not what the patch deletes\n")
    before = files(site)
    with pytest.raises(RuntimeError, match=r"0001-cand\.patch: vllm/gone\.py: hunk #1"):
        apply_candidate(site, site.parent / "0001-cand.patch")
    assert files(site) == before  # a.py, which matched, is not half-written


def test_no_fuzz_a_context_line_off_by_one_character_is_a_mismatch(site):
    (site / "vllm/a.py").write_bytes(b"one\ntwo\nthree \n")
    with pytest.raises(RuntimeError, match="vllm/a.py"):
        apply_candidate(site, site.parent / "0001-cand.patch")


def test_a_candidate_that_is_no_patch_is_a_runtime_error_and_changes_nothing(site):
    (site.parent / "0001-cand.patch").write_bytes(b"not a patch\n")
    before = files(site)
    with pytest.raises(RuntimeError, match="0001-cand.patch"):
        apply_candidate(site, site.parent / "0001-cand.patch")
    assert files(site) == before


def test_the_candidates_kept_are_where_candidate_looks(monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert candidate("kda-spec-consistent", "0.29.0").is_file()
    assert not candidate("kda-spec-consistent", "0.26.0").exists()  # no Kimi K3 there, no candidate


def test_the_runbook_removes_a_candidate_site_its_candidate_does_not_apply_to(tmp_path, monkeypatch, capsys):
    from pathlib import Path
    from types import SimpleNamespace

    from lab import sites

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    site = tmp_path / "site-alt"
    ctx = SimpleNamespace(rel="0.29.0", site={"fix": tmp_path / "fix", "alt": site}, out=tmp_path)
    monkeypatch.setattr(sites, "site_copy", lambda src, dst, files: dst.mkdir(parents=True))  # no KDA files
    monkeypatch.setattr(sites, "apply", lambda ctx, site, args, out: 0)
    sites.alt_site(ctx, "alt", "kda-spec-consistent", [], [])
    assert not site.exists()  # not left as the shipped series under the candidate's name
    assert "alt patch: " in capsys.readouterr().out
