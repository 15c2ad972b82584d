"""A lab run's results read back: verify JSON kept as evidence when it is evidence, device time
per release from the timeline, and the calls a plan prints."""

from __future__ import annotations

import io
import json
import re
import shlex
import tarfile
from pathlib import Path

import pytest

from lab import records
from lab.__main__ import calls, gpus_for

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "docs" / "evidence" / "0.22.0" / "gdn-ngram.json"  # a real verify --json file


def tgz(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def timeline(*events) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in events).encode()


def test_evidence_is_kept_byte_for_byte_in_meaning_and_a_crash_is_named_not_kept(tmp_path):
    results = tgz(
        tmp_path / "r.tgz",
        {
            "results/0.22.0/gdn-ngram.json": REAL.read_bytes(),
            "results/0.22.0/gdn-ngram.err": b"",
            "results/0.22.0/gdn-ngram.rc": b"0\n",
            "results/0.22.0/mtp.json": b"",
            "results/0.22.0/mtp.err": b"Traceback\nRuntimeError: CUDA error: illegal memory access\n",
            "results/0.22.0/mtp.rc": b"1\n",
            "results/0.22.0/tq-mtp.err": b"loading",
            "timeline.jsonl": timeline(
                {"t": 100.0, "release": "0.22.0", "what": "install", "event": "start"},
                {"t": 160.0, "release": "0.22.0", "what": "install", "event": "end"},
                {"t": 170.0, "release": "0.22.0", "what": "gdn-ngram", "event": "start"},
                {"t": 460.0, "release": "0.22.0", "what": "gdn-ngram", "event": "end", "rc": 0},
            ),
        },
    )
    found = records.read_results(results, tmp_path, write=True)
    by = {p.name: p for p in found.proofs}
    kept = tmp_path / "docs" / "evidence" / "0.22.0" / "gdn-ngram.json"
    assert by["gdn-ngram"].written == kept and json.loads(kept.read_text()) == json.loads(REAL.read_text())
    assert by["gdn-ngram"].verdict == "control wrong"
    assert by["mtp"].written is None and "illegal memory access" in by["mtp"].problem
    assert by["tq-mtp"].rc is None and by["tq-mtp"].problem == "still running when collected"
    assert not (tmp_path / "docs" / "evidence" / "0.22.0" / "mtp.json").exists()
    assert records.device_time(found.timeline) == {"0.22.0": {"install_s": 60.0, "span_s": 360.0}}
    lines = records.summary_lines(found)
    assert "0.22.0/gdn-ngram: exit 0, control wrong -> docs/evidence/0.22.0/gdn-ngram.json" in lines
    assert "run: 6.0 min from the first install to the last proof" in lines


def test_a_file_filed_under_another_release_is_not_evidence(tmp_path):
    results = tgz(
        tmp_path / "r.tgz",
        {
            "results/0.23.0/gdn-ngram.json": REAL.read_bytes(),  # ran 0.22.0
            "results/0.23.0/gdn-ngram.err": b"",
            "results/0.23.0/gdn-ngram.rc": b"0\n",
        },
    )
    found = records.read_results(results, tmp_path, write=True)
    assert "ran vLLM 0.22.0" in found.proofs[0].problem and not (tmp_path / "docs").exists()


def test_a_failed_install_is_reported(tmp_path):
    results = tgz(tmp_path / "r.tgz", {"results/0.22.0/install.err": b"blob 0123: 4000 of 5000 bytes put\n"})
    found = records.read_results(results, tmp_path)
    assert [(p.name, p.problem) for p in found.proofs] == [("install", "blob 0123: 4000 of 5000 bytes put")]


def test_the_plan_puts_every_part_and_starts_the_jobs_with_the_last():
    got = calls([".lab/parts/p000", ".lab/parts/p001"], ["0.22.0", "0.23.0:mtp"])
    assert got[0] == {"command": "python3 -m lab.machine put .lab/parts/p000", "carry": [".lab/parts/p000"]}
    assert got[1]["command"].endswith("&& python3 -m lab.machine start 0.22.0 0.23.0:mtp")
    assert got[1]["carry"] == [".lab/parts/p001", ".lab/stage"]
    assert got[2]["command"].startswith("python3 -m lab.machine collect")


def test_the_plan_hands_the_benchmarks_options_to_start_as_one_argument():
    got = calls([".lab/parts/p000"], ["0.31.0:bench=qwen3_5-9b/fixcost-ngram-sparse=8"], bench_args="--levels 1 --restarts 2")
    start = got[0]["command"].partition(" && ")[2]
    assert shlex.split(start)[-2:] == ["--bench-args", "--levels 1 --restarts 2"]
    assert "--bench-args" not in calls([".lab/parts/p000"], ["0.31.0"])[0]["command"]


def test_a_candidates_run_is_never_kept_as_evidence_of_the_series(tmp_path):
    results = tgz(tmp_path / "r.tgz", {
        "results/0.22.0/alt-gdn-draft-free-plain@gdn-ngram.json": REAL.read_bytes(),
        "results/0.22.0/alt-gdn-draft-free-plain@gdn-ngram.err": b"",
        "results/0.22.0/alt-gdn-draft-free-plain@gdn-ngram.rc": b"0\n",
    })
    found = records.read_results(results, tmp_path, write=True)
    assert "candidate" in found.proofs[0].problem and not (tmp_path / "docs").exists()


def test_wheel_use_counts_each_wheels_mapped_libraries(tmp_path):
    import hashlib
    import zipfile

    from lab.records import wheel_use

    blobs = []
    for name, members in (
        ("nvidia_cudnn-9.whl", ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_engines.so.9"]),
        ("nvidia_cufft-11.whl", ["nvidia/cufft/lib/libcufft.so.11"]),
        ("pure-1.whl", ["pure/__init__.py"]),
    ):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as z:
            for m in members:
                z.writestr(m, "x")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        (tmp_path / digest).write_bytes(path.read_bytes())
        blobs.append({"name": name, "sha256": digest, "size": path.stat().st_size})
    mapped = ["fix/nvidia/cudnn/lib/libcudnn.so.9", "ctl/nvidia/cudnn/lib/libcudnn.so.9", "/usr/lib/libc.so.6"]
    use = {w.name: (w.libraries, w.mapped) for w in wheel_use(mapped, blobs, tmp_path)}
    assert use == {"nvidia_cudnn-9.whl": (2, 1), "nvidia_cufft-11.whl": (1, 0), "pure-1.whl": (0, 0)}


def _run(runs: Path, name: str, *events) -> None:
    (runs / name).mkdir(parents=True)
    (runs / name / "timeline.jsonl").write_bytes(timeline(*events))


def test_run_minutes_per_release_count_distinct_proofs_and_split_the_run(tmp_path):
    runs = tmp_path / "runs"
    _run(
        runs,
        "2026-12-06-h100-lab-0.9.0-0.10.0/first",
        {"t": 0, "release": "0.10.0", "what": "install", "event": "start"},
        {"t": 30, "release": "0.10.0", "what": "install", "event": "end"},
        {"t": 30, "release": "0.10.0", "what": "gdn-ngram", "event": "start", "attempt": 1},
        {"t": 40, "release": "0.9.0", "what": "install", "event": "start"},
        {"t": 50, "release": "0.9.0", "what": "install", "event": "end"},
        {"t": 50, "release": "0.9.0", "what": "mtp", "event": "start"},
        {"t": 50, "release": "0.9.0", "what": "gdn-ngram-prefix", "event": "start"},
        {"t": 50, "release": "0.9.0", "what": "server-ngram/raw", "event": "start"},
        {"t": 50, "release": "0.9.0", "what": "server-ngram/fix", "event": "start"},
        # a proof restarted by the watchdog ends twice: it is one proof, ending with its last attempt
        {"t": 100, "release": "0.10.0", "what": "gdn-ngram", "event": "end", "rc": 137, "killed": True},
        {"t": 400, "release": "0.10.0", "what": "gdn-ngram", "event": "end", "rc": 0, "killed": False},
        {"t": 200, "release": "0.9.0", "what": "gdn-ngram-prefix", "event": "end", "rc": 1},
        {"t": 300, "release": "0.9.0", "what": "server-ngram/raw", "event": "end", "rc": 3},
        {"t": 500, "release": "0.9.0", "what": "server-ngram/fix", "event": "end", "rc": 0},
        {"t": 600, "release": "0.10.0", "what": "tq-mtp", "event": "start"},  # never ends
        # paired once every proof has ended: its time is not the proof's, its exit code is
        {"t": 900, "release": "0.9.0", "what": "server-ngram", "event": "paired", "rc": 0},
    )
    # a release none of whose proofs ended
    _run(
        runs,
        "2026-12-07-h200-lab-0.9.0",
        {"t": 1000, "release": "0.9.0", "what": "install", "event": "start"},
        {"t": 1060, "release": "0.9.0", "what": "install", "event": "end"},
        {"t": 1060, "release": "0.9.0", "what": "gdn-ngram", "event": "start"},
    )
    (runs / "2026-12-08-notes").mkdir()
    (runs / "2026-12-08-notes" / "timeline.jsonl").write_text("\n")  # nothing of a release: no row

    rows = records.run_minutes(runs)
    got = [(r.release, r.run, r.ok, r.failed, r.unended, r.span_s, r.share_s) for r in rows]
    assert got == [
        # mtp never ended; the server proof ended at its last leg (500), exit 0 as paired
        ("0.9.0", "2026-12-06-h100-lab-0.9.0-0.10.0/first", 1, 1, 1, 460.0, 250.0),
        ("0.9.0", "2026-12-07-h200-lab-0.9.0", 0, 0, 1, None, 0.0),
        ("0.10.0", "2026-12-06-h100-lab-0.9.0-0.10.0/first", 1, 0, 1, 400.0, 250.0),
    ]
    table = records.render_minutes(rows).splitlines()
    assert table[2] == (
        "| 0.9.0 | [2026-12-06-h100-lab-0.9.0-0.10.0/first](../records/runs/2026-12-06-h100-lab-0.9.0-0.10.0/README.md)"
        " | 1 to a verdict, 1 exited non-zero, 1 not ended | 7.7 min | 4.2 min |"
    )
    assert table[3].endswith("| 0 to a verdict, 1 not ended | - | 0.0 min |")


def test_a_server_proof_whose_legs_ended_unpaired_takes_the_first_failed_legs_code(tmp_path):
    runs = tmp_path / "runs"
    _run(
        runs,
        "r",
        {"t": 0, "release": "0.24.0", "what": "server-ngram/raw", "event": "end", "rc": 0},
        {"t": 1, "release": "0.24.0", "what": "server-ngram/fix", "event": "end", "rc": 3},
        {"t": 2, "release": "0.24.0", "what": "server-ngram/plain", "event": "end", "rc": 0},
    )
    [row] = records.run_minutes(runs)
    assert (row.ok, row.failed, row.unended) == (0, 1, 0)


@pytest.mark.parametrize(
    "line, says",
    [
        ('{"t": 1, "release": "0.9.0", "what": "mtp", "event": "st', "r/timeline.jsonl:2: not a timeline event"),
        ('{"release": "0.9.0", "what": "mtp", "event": "end"}', "r/timeline.jsonl:2: not a timeline event"),
        ('{"t": "soon", "release": "0.9.0", "what": "mtp", "event": "end"}', "r/timeline.jsonl:2: not a timeline"),
        ('[1, 2]', "r/timeline.jsonl:2: not a timeline event"),
        ('{"t": 1, "release": "nightly", "what": "mtp", "event": "end"}', "not a version"),
    ],
)
def test_a_timeline_line_that_is_not_an_event_is_an_error_naming_it(tmp_path, line, says):
    runs = tmp_path / "runs"
    (runs / "r").mkdir(parents=True)
    first = json.dumps({"t": 0, "release": "0.9.0", "what": "install", "event": "start"})
    (runs / "r" / "timeline.jsonl").write_text(f"{first}\n{line}\n")
    with pytest.raises(ValueError, match=re.escape(says)):
        records.run_minutes(runs)


def test_lab_minutes_reports_drift_then_writes_it(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import lab.__main__ as lab_main

    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "VERIFICATION.md"
    page.write_text(f"before\n{records.MINUTES_BEGIN}\nstale\n{records.MINUTES_END}\nafter\n")
    _run(
        tmp_path / "records" / "runs",
        "2026-12-06-h100-lab-0.20.0",
        {"t": 0, "release": "0.20.0", "what": "install", "event": "start"},
        {"t": 120, "release": "0.20.0", "what": "gdn-ngram", "event": "end", "rc": 0},
    )
    monkeypatch.setattr(lab_main, "ROOT", tmp_path)
    drift = CliRunner().invoke(lab_main.main, ["minutes"])
    assert drift.exit_code == 1 and "-stale" in drift.output
    assert "stale" in page.read_text()  # check mode writes nothing
    assert CliRunner().invoke(lab_main.main, ["minutes", "--write"]).exit_code == 0
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "stale" not in text
    assert "| 0.20.0 | [2026-12-06-h100-lab-0.20.0]" in text and "| 1 to a verdict | 2.0 min | 2.0 min |" in text
    assert CliRunner().invoke(lab_main.main, ["minutes"]).exit_code == 0


def test_lab_minutes_without_its_markers_says_so_and_writes_nothing(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import lab.__main__ as lab_main

    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "VERIFICATION.md"
    page.write_text("no markers\n")
    (tmp_path / "records" / "runs").mkdir(parents=True)
    monkeypatch.setattr(lab_main, "ROOT", tmp_path)
    r = CliRunner().invoke(lab_main.main, ["minutes", "--write"])
    assert r.exit_code == 1 and "no <!-- device-minutes:begin -->" in r.output
    assert page.read_text() == "no markers\n"


def test_the_checkouts_device_minutes_are_current():
    """What CI's `python -m lab minutes` checks, so that a stale table fails here too."""
    text = (ROOT / "docs" / "VERIFICATION.md").read_text()
    body = text.split(records.MINUTES_BEGIN, 1)[1].split(records.MINUTES_END, 1)[0]
    assert body.strip() == records.render_minutes(records.run_minutes(ROOT / "records" / "runs"))


def test_lab_minutes_on_a_broken_timeline_names_it_and_writes_nothing(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import lab.__main__ as lab_main

    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "VERIFICATION.md"
    before = f"{records.MINUTES_BEGIN}\nold\n{records.MINUTES_END}\n"
    page.write_text(before)
    (tmp_path / "records" / "runs" / "r").mkdir(parents=True)
    (tmp_path / "records" / "runs" / "r" / "timeline.jsonl").write_text('{"t": 1, "release": "0.9.0"\n')
    monkeypatch.setattr(lab_main, "ROOT", tmp_path)
    r = CliRunner().invoke(lab_main.main, ["minutes", "--write"])
    assert r.exit_code == 1 and "timeline.jsonl:1: not a timeline event" in r.output
    assert "Traceback" not in r.output and page.read_text() == before


def test_device_time_ends_at_the_last_proof_that_ended_not_a_later_start():
    events = [
        {"t": 0, "release": "0.28.0", "what": "install", "event": "start"},
        {"t": 40, "release": "0.28.0", "what": "install", "event": "end"},
        {"t": 40, "release": "0.28.0", "what": "gdn-ngram", "event": "start"},
        {"t": 400, "release": "0.28.0", "what": "gdn-ngram", "event": "end", "rc": 0},
        {"t": 500, "release": "0.28.0", "what": "mtp", "event": "start"},  # collected running
        {"t": 50, "release": "0.29.0", "what": "install", "event": "start"},
        {"t": 70, "release": "0.29.0", "what": "install", "event": "end"},
        {"t": 70, "release": "0.29.0", "what": "mtp", "event": "start"},
    ]
    assert records.device_time(events) == {
        "0.28.0": {"install_s": 40.0, "span_s": 400.0},
        "0.29.0": {"install_s": 20.0, "span_s": None},
    }
    lines = records.summary_lines(records.Found(timeline=events))
    assert lines == [
        "run: 6.7 min from the first install to the last proof",
        "0.28.0: install 40 s, install to last proof 6.7 min",
        "0.29.0: install 20 s, install to last proof no proof ended",
    ]


def test_a_plan_needing_two_gpus_names_their_kind_in_every_call_and_checks_first():
    """A call of another kind gives the held machine back: puts, start and collect must agree;
    the first call refuses a machine without the GPUs before any part is put."""
    got = calls([".lab/parts/p000", ".lab/parts/p001"], ["0.27.0:tq-mtp-tp2"], gpus=2)
    assert [c["kind"] for c in got] == ["nvidia-h100-x2"] * 3
    assert got[0]["command"] == "python3 -m lab.machine gpus 2 && python3 -m lab.machine put .lab/parts/p000"
    assert got[1]["command"].startswith("python3 -m lab.machine put .lab/parts/p001 && ")
    plain = calls([".lab/parts/p000"], ["0.27.0:tq-mtp"])
    assert all("kind" not in c for c in plain) and "gpus" not in plain[0]["command"]


def test_the_plan_needs_the_largest_tensor_parallel_size_of_its_proofs(monkeypatch):
    import click

    import lab.proofs as lab_proofs
    from lab.machine import parse_jobs

    assert gpus_for(parse_jobs(["0.26.0:tq-mtp", "0.27.0:gdn-ngram,tq-mtp-tp2"])) == 2
    assert gpus_for(parse_jobs(["0.26.0:tq-mtp", "0.27.0:bench=qwen3_5-9b/fixcost-ngram-sparse=8"])) == 1
    monkeypatch.setattr(lab_proofs, "gpus", lambda item: 4)  # a TP=4 proof: no kind known for it
    with pytest.raises(click.UsageError, match="TP=4, and no device kind with 4 GPUs"):
        gpus_for(parse_jobs(["0.27.0:tq-mtp"]))


def _run_tgz(path: Path) -> Path:
    """A results.tgz of one release: a proof kept as evidence, one whose engine died, the run's log."""
    return tgz(
        path,
        {
            "results/0.22.0/gdn-ngram.json": REAL.read_bytes(),
            "results/0.22.0/gdn-ngram.err": b"verify's stderr\n",
            "results/0.22.0/gdn-ngram.rc": b"0\n",
            "results/0.22.0/mtp.json": b"",
            "results/0.22.0/mtp.err": b"RuntimeError: CUDA error: illegal memory access\n",
            "results/0.22.0/mtp.rc": b"1\n",
            "results/0.22.0/engines/gdn-ngram.txt": b"b16-graphs-ngram: init engine took 20 s\n",
            "timeline.jsonl": timeline({"t": 0, "release": "0.22.0", "what": "install", "event": "start"}),
            "machine.json": b'{"gpu": "H100"}',
            "jobs.json": b'{"jobs": []}',
            "run.log": b"the detached run's log\n",
            "done": b"2 proofs, 1 exited non-zero\n",
        },
    )


def test_a_record_keeps_the_run_less_its_log_and_the_evidence_it_wrote(tmp_path):
    results = _run_tgz(tmp_path / "r.tgz")
    found = records.read_results(results, tmp_path, write=True)
    dest = tmp_path / "records" / "runs" / "2026-12-07-h100-lab-0.22.0" / "run"
    lines = records.write_record(results, found, dest)
    kept = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert kept == [
        "jobs.json",
        "machine.json",
        "results/0.22.0/engines/gdn-ngram.txt",
        "results/0.22.0/gdn-ngram.rc",
        # the proof that left no evidence keeps its stderr and JSON: the record is all there is of it
        "results/0.22.0/mtp.err",
        "results/0.22.0/mtp.json",
        "results/0.22.0/mtp.rc",
        "summary.txt",
        "timeline.jsonl",
    ]
    # collect's line, read from the verify JSON before the record drops it
    assert lines[0].startswith("0.22.0/gdn-ngram: exit 0, control fails, target passes: ngram/target:0/")
    assert lines[1].startswith("0.22.0/mtp: exit 1, no verdict: RuntimeError: CUDA error")
    assert lines[-1] == "done: 2 proofs, 1 exited non-zero"
    assert (dest / "summary.txt").read_text() == "".join(line + "\n" for line in lines)
    assert [p.name for p in dest.parent.iterdir()] == ["run"]  # no work folder left beside it
    with pytest.raises(FileExistsError, match="a record is written once"):
        records.write_record(results, found, dest)


def test_a_record_that_fails_midway_leaves_no_part_of_it(tmp_path, monkeypatch):
    import lab.machine

    results = _run_tgz(tmp_path / "r.tgz")
    found = records.read_results(results, tmp_path, write=True)
    (tmp_path / "records").mkdir()

    def broken(home):
        assert (home / "results" / "0.22.0" / "gdn-ngram.json").is_file()  # written before it failed
        raise OSError("disk full")

    monkeypatch.setattr(lab.machine, "status_lines", broken)
    with pytest.raises(OSError, match="disk full"):
        records.write_record(results, found, tmp_path / "records" / "runs" / "NAME" / "run")
    assert list((tmp_path / "records").iterdir()) == []  # the folders it made went with it


def test_lab_evidence_refuses_a_record_it_cannot_write_before_writing_evidence(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import lab.__main__ as lab_main

    results = _run_tgz(tmp_path / "r.tgz")
    monkeypatch.setattr(lab_main, "ROOT", tmp_path)
    dest = tmp_path / "run"
    done = CliRunner().invoke(lab_main.main, ["evidence", str(results), "--record", str(dest)])
    assert done.exit_code == 2 and "--record needs --write" in done.output
    dest.mkdir()
    done = CliRunner().invoke(lab_main.main, ["evidence", str(results), "--write", "--record", str(dest)])
    assert done.exit_code == 2 and f"--record {dest}: exists" in done.output
    assert not (tmp_path / "docs").exists() and list(dest.iterdir()) == []
    dest.rmdir()
    done = CliRunner().invoke(lab_main.main, ["evidence", str(results), "--write", "--record", str(dest)])
    # the dead proof is no evidence (exit 1), and the run is recorded all the same
    assert done.exit_code == 1 and f"record: {dest}" in done.output
    assert (tmp_path / "docs" / "evidence" / "0.22.0" / "gdn-ngram.json").is_file()
    assert (dest / "summary.txt").read_text().endswith("done: 2 proofs, 1 exited non-zero\n")
