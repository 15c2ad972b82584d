"""Where vLLM lives: files that are not what a package holds are refused, never waited on."""

from __future__ import annotations

import os
import signal

import pytest

from cli_runner import run


@pytest.fixture
def site(home):
    return home.tree("0.20.0")


@pytest.fixture
def deadline():
    """A hang fails the test instead of stalling the suite."""
    def expire(*_):
        raise TimeoutError("the command waited on the file")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("command", [["--vllm", "0.20.0"], ["status"], ["check", "--vllm", "0.20.0"]])
def test_a_fifo_in_place_of_a_target_file_is_refused_in_one_line(home, site, deadline, command):
    target = site / "vllm/mod.py"
    target.unlink()
    os.mkfifo(target)
    result = run(*command, "--target", str(site))
    assert result.code in (1, 2) and "vllm/mod.py: is not a regular file" in result.err
    assert [ln for ln in result.err.splitlines() if ln.startswith("error: ")] == result.err.strip().splitlines()[-1:]
    assert not (site / "vllm/.backports").exists()


def test_a_state_directory_that_links_outside_the_package_is_refused(home, site, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (site / "vllm/.backports").symlink_to(outside)
    before = (site / "vllm/mod.py").read_bytes()
    result = run("--vllm", "0.20.0", "--target", str(site))
    assert result.code == 1 and ".backports: is a symlink" in result.err
    assert list(outside.iterdir()) == [] and (site / "vllm/mod.py").read_bytes() == before
