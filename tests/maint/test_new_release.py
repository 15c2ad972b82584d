"""`maint describe`: a new release's versions.toml stanza."""

from __future__ import annotations

from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.maint import new_release


def test_describe_gives_a_new_release_a_digest_line_for_digests_to_pin(monkeypatch):
    from types import SimpleNamespace

    wheel = SimpleNamespace(filename="vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl", sha256="ab")
    monkeypatch.setattr(new_release, "read_release", lambda v, paths: SimpleNamespace(
        torch="2.14.0", wheel=wheel, record_sha256="cd", hashes={}))
    result = CliRunner().invoke(maint.main, ["describe", "0.34.0"])
    assert result.exit_code == 0, result.output
    assert "\nimage_digests = {}" in result.output


def test_port_carries_the_pinned_series_and_refuses_an_edited_one(home, monkeypatch):
    from types import SimpleNamespace

    from conftest import MOD

    monkeypatch.setattr("vllm_backports.maint.HOME", home.root)
    monkeypatch.setattr(new_release, "read_release", lambda v, paths: SimpleNamespace(files={"vllm/mod.py": MOD}))
    s1 = home.root / "backports/s1"
    result = CliRunner().invoke(maint.main, ["port", "s1", "0.20.9", "--write"])
    assert result.exit_code == 0, result.output
    for fname in ("series", "0001-fix-thing.patch", "0002-add-kernel.patch"):
        assert (home.root / "backports/0.20.9" / fname).read_bytes() == (s1 / fname).read_bytes(), fname
    (s1 / "series").write_bytes((s1 / "series").read_bytes() + b"# edited\n")
    result = CliRunner().invoke(maint.main, ["port", "s1", "0.20.8"])
    assert result.exit_code != 0 and "backports/s1/series: sha256 differs" in str(result.exception or result.output)
