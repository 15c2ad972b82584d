"""What a lab run brought back (results.tgz of `lab.machine collect`): each proof's verify JSON
checked as evidence and, with write, kept as docs/evidence/<release>/<proof>.json; and the run's
timeline read as device time per release."""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from vllm_backports.errors import EvidenceError
from vllm_backports.evidence import EVIDENCE_DIR, summarise


@dataclass
class ProofResult:
    release: str
    name: str
    rc: int | None  # None: still running when collected
    verdict: str | None = None  # evidence.py's, when the JSON is evidence
    problem: str | None = None  # why it is not kept
    written: Path | None = None


@dataclass
class Found:
    proofs: list[ProofResult] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    machine: dict = field(default_factory=dict)


def _members(tar: tarfile.TarFile) -> dict[str, bytes]:
    out = {}
    for m in tar.getmembers():
        path = PurePosixPath(m.name)
        if m.isfile() and not path.is_absolute() and ".." not in path.parts:
            f = tar.extractfile(m)
            if f is not None:
                out[path.as_posix()] = f.read()
    return out


def read_results(tgz: Path, root: Path, write: bool = False) -> Found:
    with tarfile.open(tgz) as tar:
        files = _members(tar)
    found = Found()
    if "timeline.jsonl" in files:
        found.timeline = [json.loads(line) for line in files["timeline.jsonl"].decode().splitlines() if line.strip()]
    if "machine.json" in files:
        found.machine = json.loads(files["machine.json"])
    for path in sorted(files):
        parts = PurePosixPath(path).parts
        if len(parts) != 3 or parts[0] != "results" or not parts[2].endswith(".err") or parts[2] == "install.err":
            continue
        release, name = parts[1], parts[2][: -len(".err")]
        rc_text = files.get(f"results/{release}/{name}.rc")
        result = ProofResult(release, name, int(rc_text) if rc_text else None)
        found.proofs.append(result)
        if result.rc is None:
            result.problem = "still running when collected"
            continue
        if "@" in name:  # a candidate's run: its target is not the series the manifest records
            result.problem = "a candidate's run: kept with the run's record, not as evidence of the series"
            continue
        raw = files.get(f"results/{release}/{name}.json", b"")
        try:
            data = json.loads(raw)
            result.verdict = summarise(data, release, name, f"{release}/{name}.json").verdict
        except (ValueError, EvidenceError) as exc:
            tail = files[path].decode(errors="replace").strip().splitlines()[-1:] or [""]
            result.problem = f"not evidence ({str(exc)[:160]}); stderr: {tail[0][:160]}"
            continue
        if write:
            dest = root / EVIDENCE_DIR / release / f"{name}.json"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            result.written = dest
    for path in sorted(files):
        if path.endswith("/install.err"):
            release = PurePosixPath(path).parts[1]
            found.proofs.append(ProofResult(release, "install", 1, problem=files[path].decode().strip()))
    return found


def _proof_ends(events: list[dict]) -> dict[tuple[str, str], tuple[float | None, int | None]]:
    """(release, proof) -> (when it ended, its exit code), None for a proof that had not ended. A
    server proof's legs ("NAME/LEG") are one proof: it ends with its last leg, and its exit code
    is the pairing's where the run paired them (written once every proof has ended), else the
    first leg's that failed. A proof the watchdog restarted ends with its last attempt."""
    out: dict[tuple[str, str], tuple[float | None, int | None]] = {}
    for e in events:
        name, leg = e["what"].split("/", 1)[0], "/" in e["what"]
        if name == "install":
            continue
        key = (e["release"], name)
        t, rc = out.get(key, (None, None))
        if e["event"] == "end":
            t = e["t"] if t is None else max(t, e["t"])
            rc = e.get("rc") if not leg or not rc else rc
        elif e["event"] == "paired":
            rc = e.get("rc")
        out[key] = (t, rc)
    return out


def last_ends(timeline: list[dict]) -> dict[str, float]:
    """Per release, when its last proof to end ended (releases none of whose proofs ended: none)."""
    out: dict[str, float] = {}
    for (release, _), (t, _) in _proof_ends([e for e in timeline if e.get("release") is not None]).items():
        if t is not None:
            out[release] = max(t, out.get(release, t))
    return out


def device_time(timeline: list[dict]) -> dict[str, dict[str, float | None]]:
    """Per release: install seconds, and the span from its install's start to its last proof's
    end, None while none has ended (releases overlap on one machine, so spans add up to more than
    the run's wall time)."""
    out: dict[str, dict] = {}
    starts: dict[tuple, float] = {}
    for e in timeline:
        release = e.get("release")
        if release is None:
            continue
        key = (release, e["what"])
        r = out.setdefault(release, {"install_s": 0.0, "first": e["t"]})
        r["first"] = min(r["first"], e["t"])
        if e["event"] == "start":
            starts[key] = e["t"]
        elif e["event"] == "end" and e["what"] == "install" and key in starts:
            r["install_s"] = e["t"] - starts[key]
    last = last_ends(timeline)
    return {
        release: {
            "install_s": round(r["install_s"], 1),
            "span_s": round(last[release] - r["first"], 1) if release in last else None,
        }
        for release, r in out.items()
    }


def summary_lines(found: Found) -> list[str]:
    lines = []
    for p in found.proofs:
        where = f" -> {p.written.relative_to(p.written.parents[3]).as_posix()}" if p.written else ""
        state = f"exit {p.rc}" if p.rc is not None else "running"
        lines.append(f"{p.release}/{p.name}: {state}, " + (p.verdict or f"NOT KEPT: {p.problem}") + where)
    times = device_time(found.timeline)
    if ends := last_ends(found.timeline):
        first = min(e["t"] for e in found.timeline if e.get("release") is not None)
        lines.append(f"run: {(max(ends.values()) - first) / 60:.1f} min from the first install to the last proof")
    for release, t in times.items():
        span = f"{t['span_s'] / 60:.1f} min" if t["span_s"] is not None else "no proof ended"
        lines.append(f"{release}: install {t['install_s']:.0f} s, install to last proof {span}")
    return lines


# what a record leaves out of results.tgz: the detached run's own log (its lines are the proofs'
# stderr again) and `done`, whose line summary.txt carries
NOT_RECORDED = ("run.log", "done")


def write_record(tgz: Path, found: Found, dest: Path) -> list[str]:
    """Keep a lab run's results.tgz as its record at `dest` (records/runs/NAME/run): its files as
    the machine wrote them, less NOT_RECORDED and, for each proof `found` kept as evidence, the
    verify JSON docs/evidence holds and its stderr; with summary.txt, the lines `collect` printed
    for the run. Written beside `dest` and renamed into place, so a failure leaves no part of it.
    Returns the summary's lines."""
    from .machine import status_lines

    if dest.exists():
        raise FileExistsError(f"{dest}: exists (a record is written once; name another)")
    with tarfile.open(tgz) as tar:
        files = _members(tar)
    made = next((p for p in reversed([dest, *dest.parents]) if not p.exists()), dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for name, data in files.items():
            if name in NOT_RECORDED:
                continue
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        lines = status_lines(work)
        if "done" in files:
            lines.append("done: " + files["done"].decode().strip())
        for p in found.proofs:
            if p.written is not None:
                for suffix in (".json", ".err"):
                    (work / "results" / p.release / f"{p.name}{suffix}").unlink(missing_ok=True)
        (work / "summary.txt").write_text("".join(line + "\n" for line in lines))
        work.rename(dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        if made != dest:
            shutil.rmtree(made, ignore_errors=True)
        raise
    return lines


@dataclass
class WheelUse:
    name: str
    size: int
    libraries: int  # shared objects the wheel holds
    mapped: int  # of them, mapped by some process of the run


def wheel_use(mapped: list[str], blobs: list[dict], store: Path) -> list[WheelUse]:
    """Per staged wheel, how many of its shared objects the run's processes mapped. Paths are as
    results/<release>/libraries.json has them: `<site>/<path inside the wheel>`, or absolute for
    the machine's own."""
    inside = {p.split("/", 1)[1] for p in mapped if not p.startswith("/") and "/" in p}
    out = []
    for blob in blobs:
        with zipfile.ZipFile(store / blob["sha256"]) as whl:
            libs = [n for n in whl.namelist() if ".so" in PurePosixPath(n).name]
        out.append(WheelUse(blob["name"], blob["size"], len(libs), sum(n in inside for n in libs)))
    return sorted(out, key=lambda w: (w.mapped > 0, -w.size))


def libraries(tgz: Path) -> dict[str, list[str]]:
    """results/<release>/libraries.json of a results.tgz, by release."""
    with tarfile.open(tgz) as tar:
        files = _members(tar)
    out = {}
    for path, data in files.items():
        parts = PurePosixPath(path).parts
        if len(parts) == 3 and parts[0] == "results" and parts[2] == "libraries.json":
            out[parts[1]] = json.loads(data)
    return out


MINUTES_BEGIN, MINUTES_END = "<!-- device-minutes:begin -->", "<!-- device-minutes:end -->"


@dataclass(frozen=True)
class RunMinutes:
    release: str
    run: str  # the timeline's folder under records/runs
    ok: int  # proofs (or benches) whose verify exited 0: a verdict, whatever it is
    failed: int  # proofs that ended with another exit code
    unended: int  # proofs still running when the run was collected
    span_s: float | None  # its install's start to its last proof's end; None: no proof ended
    share_s: float  # the run's first event to its last proof's end, divided by the releases in it


def _events(timeline: Path) -> list[dict]:
    """The release events of a timeline.jsonl; a line that is not one is an error naming it."""
    out = []
    for n, line in enumerate(timeline.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
            if e.get("release") is None:
                continue
            if not isinstance(e["t"], (int, float)) or not {"what", "event"} <= e.keys():
                raise KeyError("t, what or event")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{timeline}:{n}: not a timeline event ({exc})") from None
        out.append(e)
    return out


def run_minutes(runs: Path) -> list[RunMinutes]:
    """Per release and lab run kept under `runs` (each folder with a timeline.jsonl), how long
    its proofs held the machine, in release order then run order."""
    from packaging.version import InvalidVersion, Version

    out = []
    for timeline in sorted(runs.rglob("timeline.jsonl")):
        events = _events(timeline)
        if not events:
            continue
        ends, times = _proof_ends(events), device_time(events)
        releases = sorted(times)
        ended = [t for t, _ in ends.values() if t is not None]
        share = (max(ended) - min(e["t"] for e in events)) / len(releases) if ended else 0.0
        for release in releases:
            mine = [v for (r, _), v in ends.items() if r == release]
            out.append(
                RunMinutes(
                    release,
                    timeline.parent.relative_to(runs).as_posix(),
                    ok=sum(1 for t, rc in mine if t is not None and rc == 0),
                    failed=sum(1 for t, rc in mine if t is not None and rc != 0),
                    unended=sum(1 for t, _ in mine if t is None),
                    span_s=times[release]["span_s"],
                    share_s=round(share, 1),
                )
            )
    try:
        return sorted(out, key=lambda r: (Version(r.release), r.run))
    except InvalidVersion as exc:
        raise ValueError(f"{runs}: a timeline names a release that is not a version ({exc})") from None


def render_minutes(rows: list[RunMinutes]) -> str:
    """The table docs/VERIFICATION.md keeps between the device-minutes markers. A run's folder
    links to its record's README (the first folder under records/runs)."""
    lines = [
        "| vLLM | run | proofs | its install to its last proof | the run ÷ its releases |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        top = r.run.split("/", 1)[0]
        link = f"[{r.run}](../records/runs/{top}/README.md)"
        proofs = ", ".join(
            [f"{r.ok} to a verdict"]
            + ([f"{r.failed} exited non-zero"] if r.failed else [])
            + ([f"{r.unended} not ended"] if r.unended else [])
        )
        span = f"{r.span_s / 60:.1f} min" if r.span_s is not None else "-"
        lines.append(f"| {r.release} | {link} | {proofs} | {span} | {r.share_s / 60:.1f} min |")
    return "\n".join(lines)
