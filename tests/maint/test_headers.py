"""`maint lint-headers`: every DEP-3 header checked for content and against versions.toml."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.maint import headers

from .conftest import REPO, copy_checkout


def _edit_header(home: Path, rel: str, old: str, new: str) -> None:
    path = home / "backports" / rel
    data = path.read_bytes()
    assert old.encode() in data.split(b"\n--- ", 1)[0], old
    path.write_bytes(data.replace(old.encode(), new.encode(), 1))


def test_lint_headers_passes_on_the_repository():
    import datetime

    from vllm_backports.catalogue import Catalogue

    cat = Catalogue(REPO)
    # a fixed "today" no patch here is dated after, so the test does not read the clock
    count, problems = headers.lint_headers(cat, datetime.date(2026, 12, 6))
    assert problems == [] and count == sum(len(cat.series(n).patches) for n in cat.series_names())
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 0 and r.output.endswith("DEP-3 headers are consistent with versions.toml\n")


def test_lint_headers_lists_every_problem_with_its_file(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    tq, gdn = "0.33.0/0001-turboquant-spec-decode.patch", "0.20.0/0002-gdn-spec-state.patch"
    _edit_header(home, tq, "Forwarded: not-needed", "Forwarded: maybe")
    _edit_header(home, tq, "Last-Update: 2026-11-22", "Last-Update: 2999-01-01")
    # upstream_in says 0.32.0: the header may not say no, nor name another release
    _edit_header(home, gdn, "Applied-Upstream: 0.32.0, https", "Applied-Upstream: 0.31.0, https")
    pr = "https://github.com/vllm-project/vllm/pull/56531"
    _edit_header(home, "0.31.0/0002-gdn-spec-state.patch", f"Applied-Upstream: 0.32.0, {pr}", "Applied-Upstream: no")
    r = CliRunner().invoke(maint.main, ["lint-headers"])  # problems on stderr, which the result's output holds
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert f"backports/{tq}: Forwarded 'maybe' is not no, not-needed or a URL" in lines
    assert any(x.startswith(f"backports/{tq}: Last-Update 2999-01-01 is in the future") for x in lines)
    assert (f"backports/{gdn}: Applied-Upstream '0.31.0, https://github.com/vllm-project/vllm/pull/56531' "
            "disagrees with versions.toml: gdn-spec-state is upstream in 0.32.0") in lines
    assert ("backports/0.31.0/0002-gdn-spec-state.patch: Applied-Upstream 'no' disagrees with versions.toml: "
            "gdn-spec-state is upstream in 0.32.0") in lines
    assert lines[-1] == "4 problems in DEP-3 headers"


def test_lint_headers_checks_no_against_a_backport_not_upstream_and_the_bug(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    tq = "0.33.0/0001-turboquant-spec-decode.patch"
    _edit_header(home, tq, "Applied-Upstream: no", "Applied-Upstream: 0.34.0")
    _edit_header(home, tq, "Bug: https://github.com/vllm-project/vllm/issues/40880", "Bug: https://example.org/1")
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 1
    assert (f"backports/{tq}: Applied-Upstream '0.34.0' disagrees with versions.toml: turboquant-spec-decode has no "
            "upstream_in (say no, or give the backport upstream_in)") in r.output
    assert (f"backports/{tq}: Bug 'https://example.org/1' is not versions.toml's "
            "'https://github.com/vllm-project/vllm/issues/40880'") in r.output


def test_lint_headers_checks_origin_against_versions_toml_and_across_series(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    pr = "https://github.com/vllm-project/vllm/pull/53410"
    tq = "0.33.0/0001-turboquant-spec-decode.patch"
    _edit_header(home, tq, f"Origin: other, {pr}", "Origin: other, https://example.org/elsewhere")
    gdn = "0.20.0/0002-gdn-spec-state.patch"  # no origin in versions.toml: only the series must agree
    _edit_header(home, gdn, "Origin: other, https://github.com/vllm-project/vllm/pull/56531",
                 "Origin: other, https://github.com/vllm-project/vllm/pull/1")
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert (f"backports/{tq}: Origin 'other, https://example.org/elsewhere' does not name versions.toml's "
            f"origin '{pr}'") in lines
    assert any(x.startswith("turboquant-spec-decode: its patches credit different origins: ") for x in lines)
    assert any(x.startswith("gdn-spec-state: its patches credit different origins: ")
               and "'other, https://github.com/vllm-project/vllm/pull/1' in backports/0.20.0/0002-gdn-spec-state.patch"
               in x for x in lines)
    assert lines[-1] == "3 problems in DEP-3 headers"


def test_lint_headers_reports_unreadable_patches_and_goes_on(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    (home / "backports/0.33.0/0001-turboquant-spec-decode.patch").write_bytes(b"Description: x\n")
    (home / "backports/0.32.0/0001-turboquant-spec-decode.patch").unlink()
    _edit_header(home, "0.31.0/0002-gdn-spec-state.patch", "Forwarded: not-needed", "Forwarded: maybe")
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 1
    assert "backports/0.33.0/0001-turboquant-spec-decode.patch: no '--- ' line: not a unified diff" in r.output
    assert "backports/0.32.0/0001-turboquant-spec-decode.patch: missing" in r.output
    assert "backports/0.31.0/0002-gdn-spec-state.patch: Forwarded 'maybe'" in r.output
