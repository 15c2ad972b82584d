"""lab.verifies: a verify's wrapper holds a slot and records the verify's output and status, and the
watchdog's victim is the youngest verify a wrapper started."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from lab import verifies

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def test_the_wrapper_takes_a_slot_runs_the_verify_on_its_site_and_records_its_status(tmp_path, monkeypatch):
    (tmp_path / "apply.py").write_text(
        "import os, sys\nprint('{}')\nprint(os.environ['PYTHONPATH'], *sys.argv[1:], file=sys.stderr)\nsys.exit(4)\n"
    )
    res = tmp_path / "res"
    res.mkdir()
    monkeypatch.chdir(tmp_path)
    pool = f"test-{uuid.uuid4().hex[:8]}"  # a verify pool of this test's own: /tmp/slot-POOL.N
    monkeypatch.setenv("REL", "9.9.9")
    monkeypatch.setenv("MAXV", "2")
    real = verifies.slot
    monkeypatch.setattr(verifies, "slot", lambda name, n, err: real(f"{pool}-{name}", n, err))
    try:
        assert verifies.slot_run("/site", "t1", res, ["--preset", "mtp"]) == 4
    finally:
        for p in Path("/tmp").glob(f"slot-{pool}-*"):
            p.unlink()
    err = (res / "t1.err").read_text()
    assert f"waiting for one of 2 {pool}-verify slots" in err and f"{pool}-verify slot taken at " in err
    assert "/site verify --work-dir /tmp/v-9.9.9-t1 --json --preset mtp" in err
    assert (res / "t1.json").read_text() == "{}\n" and (res / "t1.rc").read_text() == "4\n"


def test_the_watchdog_picks_the_youngest_verify_a_wrapper_started(tmp_path):
    # a wrapper (its command line names lab.verifies slot-run) leading a session, its verify below it
    code = "import subprocess; subprocess.run(['bash', '-c', 'exec -a \"python3 apply.py verify\" sleep 30'])"
    leaders = []
    try:
        for _ in range(2):
            leaders.append(subprocess.Popen([sys.executable, "-c", code, verifies.WRAPPER], start_new_session=True))
            time.sleep(1.2)  # start times count in clock ticks: the second is the younger
        deadline = time.monotonic() + 10
        picked = None
        while time.monotonic() < deadline:
            picked = verifies.youngest_verify()
            if picked and picked[1] == str(leaders[1].pid):
                break
            time.sleep(0.1)
        assert picked is not None and picked[1] == str(leaders[1].pid)
        assert "apply.py verify" in verifies._cmdline(picked[0])
    finally:
        for leader in leaders:
            os.killpg(leader.pid, 9)
            leader.wait()
