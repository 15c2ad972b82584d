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
