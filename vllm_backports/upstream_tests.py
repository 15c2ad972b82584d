"""A release's own tests, from its PyPI source archive, run against the installed release as
published (pristine) and against a copy of it with the release's series applied (patched): on the
CPU, with the shims of upstream_conftest.py, or on a GPU as upstream runs them (`device` "cuda";
there the archive may come from a local file with its sha256, since GPU machines may be offline).

Selection: a module `tests/**/test_*.py` of the archive is selected when its text names a module
the series patches by its dotted name (`vllm.v1.attention.backends.gdn_attn`, in an import or a
mock target), imports it from its package (`from vllm.v1.worker import gpu_model_runner as gmr`,
also inside parentheses), or when its path mirrors one (`tests/v1/attention/backends/test_gdn_attn.py` for
`vllm/v1/attention/backends/gdn_attn.py`).

Verdict: a test that passes pristine and does not pass patched (fails, errors, is skipped or is
gone) fails the run, unless docs/upstream-tests/explained.toml explains it for that release.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import requests

from .catalogue import Catalogue
from .digest import sha256_file
from .errors import BackportError, CatalogueError, UsageError
from .pypi import cache_root, download, release_sdist
from .tree import installed_tree

CONFTEST = Path(__file__).with_name("upstream_conftest.py")
EXPLANATIONS = "docs/upstream-tests/explained.toml"
OUTCOMES = ("passed", "failed", "skipped")
DEVICES = ("cpu", "cuda")
# Worst first: a test reported failed in any phase failed, one skipped in setup never ran.
_RANK = {"error": 0, "failed": 0, "skipped": 1, "passed": 2}


class RunError(BackportError):
    """A side of the run could not be carried out (pytest did not start, a wrong vLLM was tested)."""


@dataclass(frozen=True)
class Selected:
    module: str  # tests/... as a pytest path, relative to the run's directory
    why: str


@dataclass(frozen=True)
class Result:
    outcome: str  # passed, failed or skipped (errors count as failed)
    reason: str = ""


@dataclass
class Side:
    name: str
    vllm_from: str = ""
    seconds: float = 0.0
    results: dict[str, Result] = field(default_factory=dict)


# -- selection


def patched_modules(paths) -> dict[str, str]:
    """Dotted module name of each python file a series patches, by path."""
    out = {}
    for path in paths:
        if path.startswith("vllm/") and path.endswith(".py"):
            out[path] = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
    return out


def _names(dotted: str) -> tuple[re.Pattern[str], ...]:
    """What names a module in a test's text: its dotted name, or an import of it from its package
    (`from vllm.v1.worker import gpu_model_runner as gmr`, one line or in parentheses)."""
    parent, _, name = dotted.rpartition(".")
    word = rf"(?<![\w.]){re.escape(name)}(?![\w])"
    return (
        re.compile(rf"(?<![\w.]){re.escape(dotted)}(?![\w])"),
        re.compile(rf"^[ \t]*from[ \t]+{re.escape(parent)}[ \t]+import[ \t]+[^(\n]*?{word}", re.M),
        re.compile(rf"^[ \t]*from[ \t]+{re.escape(parent)}[ \t]+import[ \t]*\([^)]*?{word}", re.M),
    )


def select(root: Path, paths) -> list[Selected]:
    """The modules under root/tests that the selection rule (this module's docstring) picks."""
    modules = patched_modules(paths)
    mirrors = {}
    for path in modules:
        parent, _, name = path.removeprefix("vllm/").rpartition("/")
        mirrors[f"tests/{parent}/test_{name}".replace("//", "/")] = path
    names = {dotted: _names(dotted) for dotted in modules.values()}
    chosen = []
    for file in sorted((root / "tests").rglob("test_*.py")):
        rel = file.relative_to(root).as_posix()
        if rel in mirrors:
            chosen.append(Selected(rel, f"mirrors {mirrors[rel]}"))
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        named = [dotted for dotted, patterns in names.items() if any(p.search(text) for p in patterns)]
        if named:
            chosen.append(Selected(rel, "names " + ", ".join(named)))
    return chosen


# -- the release's tests


def fetch_sdist(version: str, session: requests.Session | None = None) -> Path:
    """vllm-VERSION.tar.gz from PyPI, checked against the sha256 PyPI's JSON reports, cached."""
    session = session or requests.Session()
    entry = release_sdist(session, version)
    return download(session, entry, cache_root() / "sdist" / entry.filename)


def local_sdist(path: Path, sha256: str) -> Path:
    """A source archive brought along (where PyPI cannot be reached), checked against the sha256
    that a fetch from PyPI recorded (fetch_sdist's check), before anything runs."""
    if not path.is_file():
        raise UsageError(f"--sdist {path}: no such file")
    got = sha256_file(path)
    if got != sha256.lower():
        raise UsageError(f"--sdist {path}: sha256 {got[:12]} differs from the one given ({sha256[:12]})")
    return path


def extract_tests(archive: Path, dest: Path) -> Path:
    """The archive's top-level tests/ under dest/tests; nothing else of it (its vllm/ sources would
    shadow the installed package)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = []
            for member in tar.getmembers():
                top, _, rest = member.name.partition("/")
                if rest == "tests" or rest.startswith("tests/"):
                    member.name = rest
                    members.append(member)
            if not members:
                raise UsageError(f"{archive.name}: has no tests/ directory")
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UsageError(f"{archive.name}: not a readable source archive ({exc})") from None
    return dest / "tests"


# -- explanations


def load_explanations(path: Path, version: str) -> dict[str, str]:
    """The explanations for one release: test node id (or node id without its [parameters]) ->
    why it may pass pristine and not patched."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{path.name}: {exc}") from None
    if data.get("schema") != 1:
        raise CatalogueError(f"{path.name}: schema {data.get('schema')!r} is not 1")
    unknown = set(data) - {"schema", "releases"}
    if unknown:
        raise CatalogueError(f"{path.name}: unknown key {sorted(unknown)[0]!r} at the top level")
    releases = data.get("releases", {})
    if not isinstance(releases, dict):
        raise CatalogueError(f"{path.name}: releases must be a table")
    table = releases.get(version, {})
    if not isinstance(table, dict):
        raise CatalogueError(f'{path.name}: [releases."{version}"] must be a table')
    for test, why in table.items():
        if not test.startswith("tests/") or "::" not in test:
            raise CatalogueError(
                f'{path.name}: [releases."{version}"]: {test!r} is not a test node id (tests/...::name)'
            )
        if not isinstance(why, str) or not why.strip():
            raise CatalogueError(f'{path.name}: [releases."{version}"]: {test!r} needs a reason (a non-empty string)')
    return dict(table)


def explanation(test: str, explained: dict[str, str]) -> str | None:
    return explained.get(test) or explained.get(test.split("[", 1)[0])


# -- results


def read_results(path: Path) -> tuple[str, dict[str, Result]]:
    """The vLLM file a side imported and each test's outcome, from the lines our conftest wrote."""
    vllm_from = ""
    results: dict[str, Result] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return "", {}
    for line in lines:
        entry = json.loads(line)
        if entry.get("meta"):
            vllm_from = entry["vllm"]
            continue
        outcome = "failed" if entry["outcome"] == "error" else entry["outcome"]
        new = Result(outcome, entry.get("reason", ""))
        old = results.get(entry["nodeid"])
        if old is None or _RANK[new.outcome] < _RANK[old.outcome]:
            results[entry["nodeid"]] = new
    return vllm_from, results


def where_it_stopped(path: Path, modules: list[str]) -> str:
    """What a side that ran out of time had reported, for its error: how many tests, the last one,
    and the modules none of whose tests had reported (the one running, and those after it), from
    the lines our conftest writes as each test ends (collection reports, written first for every
    module, are not tests)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    ends = [e["nodeid"] for e in map(json.loads, lines) if "::" in e.get("nodeid", "")]
    if not ends:
        return ": no test had reported"
    reached = {module_of(n) for n in ends}
    waiting = [m for m in modules if m not in reached]
    said = f": {len(set(ends))} tests had reported, the last {ends[-1]}"
    if waiting:
        more = f" and {len(waiting) - 3} more" if len(waiting) > 3 else ""
        said += f"; none yet from {', '.join(waiting[:3])}{more}"
    return said


def module_of(test: str) -> str:
    return test.split("::", 1)[0]


def counts(results: dict[str, Result]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for test, result in results.items():
        row = out.setdefault(module_of(test), dict.fromkeys(OUTCOMES, 0))
        row[result.outcome] += 1
    return out


def differences(pristine: dict[str, Result], patched: dict[str, Result], explained: dict[str, str]) -> list[dict]:
    """Every test whose outcome differs; those that passed pristine and not patched are regressions
    (explained or not)."""
    rows = []
    for test in sorted(set(pristine) | set(patched)):
        before = pristine[test].outcome if test in pristine else "absent"
        after = patched[test].outcome if test in patched else "absent"
        if before == after:
            continue
        regression = before == "passed"
        why = explanation(test, explained) if regression else None
        rows.append(
            {
                "test": test,
                "pristine": before,
                "patched": after,
                "patched_reason": patched[test].reason if test in patched else "",
                "regression": regression,
                "explained": why,
            }
        )
    return rows


def verdict(diffs: list[dict]) -> str:
    return "fail" if any(d["regression"] and not d["explained"] for d in diffs) else "ok"


# -- running


def patched_copy(src_root: Path, dest: Path, series_paths, version: str, home: Path) -> None:
    """The installed vllm/ and its dist-info under dest, then the series applied there by apply.py.
    Files the series leaves alone are hard links (the copy is 0.7 GB otherwise); the ones it
    patches are real copies, since apply writes only those (by rename, never in place)."""
    patched = {str(src_root / p) for p in series_paths}

    def link_or_copy(src: str, dst: str) -> None:
        if src in patched:
            shutil.copy2(src, dst)
            return
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    dist_info = f"vllm-{version}.dist-info"
    for name in ("vllm", dist_info):
        shutil.copytree(
            src_root / name, dest / name, copy_function=link_or_copy, ignore=shutil.ignore_patterns("__pycache__")
        )
    cmd = [sys.executable, "-m", "vllm_backports", "apply", "--vllm", version, "--target", str(dest), "--json"]
    done = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "VLLM_BACKPORTS_HOME": str(home)}, check=False
    )
    if done.returncode != 0:
        last = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:] or [""]
        raise RunError(f"apply.py on the copy exited {done.returncode}: {last[0]}")


def run_side(name: str, work: Path, modules: list[str], pythonpath: str, timeout: int, device: str = "cpu") -> Side:
    results = work / f"results-{name}.jsonl"
    results.unlink(missing_ok=True)
    env = {
        **os.environ,
        "VLLM_BACKPORTS_UPSTREAM_RESULTS": str(results),
        "VLLM_BACKPORTS_UPSTREAM_DEVICE": device,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if device == "cpu":  # the CPU shims assume no GPU is seen, also where there is one
        env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, os.environ.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    cmd += ["--rootdir", str(work), *modules]  # a module that fails to import is a result, not a stop
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunError(f"{name}: pytest ran past {timeout}s{where_it_stopped(results, modules)}") from None
    side = Side(name, seconds=round(time.monotonic() - start, 1))
    side.vllm_from, side.results = read_results(results)
    # pytest's exit codes: 0 all passed, 1 some failed; anything else means it did not run them.
    if done.returncode not in (0, 1) or not side.vllm_from:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise RunError(f"{name}: pytest exited {done.returncode}: {tail[0]}")
    return side


def run(
    version: str,
    home: Path,
    work: Path,
    timeout: int = 1800,
    session: requests.Session | None = None,
    device: str = "cpu",
    sdist: tuple[Path, str] | None = None,
) -> dict:
    """Fetch (or take `sdist`, a path and its sha256), select, run both sides on `device` and
    compare: the report `maint upstream-tests` prints."""
    if device not in DEVICES:
        raise UsageError(f"device {device!r} is not one of {', '.join(DEVICES)}")
    cat = Catalogue(home)
    release = cat.releases.get(version)
    if release is None:
        raise UsageError(f"vLLM {version} is not in versions.toml")
    if not release.series:
        raise UsageError(f"vLLM {version} has no series: nothing is patched, so nothing to compare")
    paths = list(cat.series(release.series).paths)
    tree = installed_tree()
    if tree.version.split("+", 1)[0] != version:
        raise UsageError(f"this Python has vLLM {tree.version} installed, not {version}")
    explained = load_explanations(home / EXPLANATIONS, version)

    archive = local_sdist(*sdist) if sdist else fetch_sdist(version, session)
    extract_tests(archive, work)
    selected = select(work, paths)
    if not selected:
        raise UsageError(f"no test module of vLLM {version} names or mirrors a file its series patches")
    shutil.copyfile(CONFTEST, work / "conftest.py")
    (work / "pytest.ini").write_text("[pytest]\n")  # no ini file from above the work directory applies

    copy = work / "patched"
    patched_copy(tree.root, copy, paths, version, home)
    modules = [s.module for s in selected]
    sides = {
        "pristine": run_side("pristine", work, modules, "", timeout, device),
        "patched": run_side("patched", work, modules, str(copy), timeout, device),
    }
    if not Path(sides["pristine"].vllm_from).is_relative_to(tree.root):
        raise RunError(f"pristine: vLLM was imported from {sides['pristine'].vllm_from}, not {tree.root}")
    if not Path(sides["patched"].vllm_from).is_relative_to(copy):
        raise RunError(f"patched: vLLM was imported from {sides['patched'].vllm_from}, not the patched copy")
    data = report(version, release.series, paths, selected, sides, explained, archive.name)
    data["device"] = device
    data["patches"] = series_patches(cat, release.series)
    return data


def series_patches(cat: Catalogue, name: str) -> dict[str, str]:
    """Series NAME's patch files and their pinned sha256, in the order they apply: what a table
    records of the series it ran, so that one run before the series changed shows as stale."""
    series = cat.series(name)
    return {patch.name: series.pinned[patch.name] for patch in series.patches}


def stale_patches(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """The patch files that differ between a table's record and the series as it ships now."""
    return sorted(f for f in recorded.keys() | current.keys() if recorded.get(f) != current.get(f))


def report(version, series, paths, selected, sides: dict[str, Side], explained, archive: str) -> dict:
    import platform

    tallies = {name: counts(side.results) for name, side in sides.items()}
    zero = dict.fromkeys(OUTCOMES, 0)
    modules = [
        {"module": s.module, "why": s.why, **{name: tallies[name].get(s.module, zero) for name in sides}}
        for s in selected
    ]
    diffs = differences(sides["pristine"].results, sides["patched"].results, explained)
    used = {key for d in diffs if d["explained"] for key in (d["test"], d["test"].split("[", 1)[0])}
    return {
        "vllm": version,
        "series": series,
        "archive": archive,
        "patched_files": list(paths),
        "modules": modules,
        "totals": {name: {o: sum(m[name][o] for m in modules) for o in OUTCOMES} for name in ("pristine", "patched")},
        "skips": {
            name: {t: r.reason for t, r in sorted(side.results.items()) if r.outcome == "skipped"}
            for name, side in sides.items()
        },
        "failures": {
            name: {t: r.reason for t, r in sorted(side.results.items()) if r.outcome == "failed"}
            for name, side in sides.items()
        },
        "seconds": {name: side.seconds for name, side in sides.items()},
        "differences": diffs,
        "stale_explanations": sorted(t for t in explained if t not in used),
        "verdict": verdict(diffs),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(),
            "torch": _version_of("torch"),
        },
    }


def _version_of(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""


# -- rendering


def table(data: dict):
    from rich.table import Table

    t = Table(
        title=f"vLLM {data['vllm']} (series {data['series']}): upstream tests, pristine vs patched",
        title_justify="left",
        show_edge=False,
    )
    t.add_column("test module", overflow="fold")
    for side in ("pristine", "patched"):
        t.add_column(f"{side} p/f/s", justify="right")
    for m in data["modules"]:
        t.add_row(m["module"], *(_pfs(m[side]) for side in ("pristine", "patched")))
    t.add_row("[bold]total[/bold]", *(_pfs(data["totals"][side]) for side in ("pristine", "patched")))
    return t


def _pfs(c: dict) -> str:
    return f"{c['passed']}/{c['failed']}/{c['skipped']}"


def _state(d: dict, unexplained: str) -> str:
    """What a test that differs between pristine and patched is: explained, `unexplained`, or no regression."""
    if not d["regression"]:
        return "not a regression"
    return f"explained: {d['explained']}" if d["explained"] else unexplained


def summary_lines(data: dict) -> list[str]:
    lines = []
    for d in data["differences"]:
        lines.append(f"{d['test']}: {d['pristine']} pristine, {d['patched']} patched ({_state(d, 'UNEXPLAINED')})")
    for test in data["stale_explanations"]:
        lines.append(f"note: {EXPLANATIONS} explains {test}, which no longer passes pristine and fails patched")
    regressions = sum(d["regression"] for d in data["differences"])
    unexplained = sum(d["regression"] and not d["explained"] for d in data["differences"])
    lines.append(
        f"verdict={data['verdict']} modules={len(data['modules'])} regressions={regressions} unexplained={unexplained}"
    )
    return lines


def markdown(reports: list[dict], gpu_reports: list[dict] | None = None) -> str:
    """docs/UPSTREAM-TESTS.md, from the committed results: docs/upstream-tests/<release>.json, run
    on the CPU, then docs/upstream-tests/gpu/<release>.json, run on a GPU without the CPU shims."""
    out = [
        "# Upstream tests, pristine and patched",
        "",
        "<!-- Generated by `python -m vllm_backports.maint upstream-tests-doc --write` from",
        "     docs/upstream-tests/<release>.json; do not edit by hand. -->",
        "",
        "Each release's own tests, from its source archive on PyPI (sha256 checked against PyPI's),",
        "run on the CPU against the installed release as published (pristine) and against a copy with",
        "its series applied by `apply.py --target` (patched). A test module is selected when its text",
        "names a module the series patches by its dotted name (an import, a mock target) or imports it",
        "from its package (`from vllm.v1.worker import gpu_model_runner as gmr`), or when its",
        "path mirrors one (`tests/v1/worker/test_gpu_model_runner.py` for",
        "`vllm/v1/worker/gpu_model_runner.py`). The CPU shims (CPU platform, no pinned memory, no",
        "global accelerator clean-up, hub models as local config-only directories, torch's AVX-512",
        "probe where the torch standing in for a release's pin lacks it) are in",
        "`vllm_backports/upstream_conftest.py`, put above upstream's `tests/`; upstream files are never",
        "edited. A test that passes pristine and not patched fails the run unless",
        f"`{EXPLANATIONS}` explains it. Counts are passed / failed (errors included) / skipped.",
        "The GPU runs, after the CPU ones, are the same selection run on a GPU as upstream runs it",
        "(`--device cuda`: no CPU shim; the hub configs above still stand in for downloads).",
        "The host's CPU moves some outcomes, on both sides alike. Where it has AVX-512BF16, the tests of",
        "vLLM's accelerated CPU GDN path run instead of skipping and fail on CPU ops the CUDA wheel lacks",
        "(0.29.0 .. 0.31.0, `tests/kernels/mamba/cpu/test_cpu_gdn_ops.py`), and vLLM's CPU platform keeps",
        "the SSM state in float32 for that path (0.33.0: `vllm/platforms/cpu.py:319`), which doubles the",
        "hybrid block size `test_blocks_land_on_the_mamba_checkpoint_grid` expects.",
        "",
    ]
    gpu_reports = gpu_reports or []
    if not gpu_reports:
        out += ["No GPU run is recorded yet (docs/upstream-tests/gpu/).", ""]
    for data in [*reports, *gpu_reports]:
        where = f" on a GPU ({data['machine'].get('gpu') or 'unnamed'})" if data.get("device") == "cuda" else ""
        out += [
            f"## vLLM {data['vllm']}{where}",
            "",
            f"Series {data['series']}, patching {', '.join(f'`{p}`' for p in data['patched_files'])}"
            + (
                f"; its {len(data['patches'])} patches as they were then (sha256 recorded). **Stale:** the"
                f" series has changed since ({', '.join(data['stale'])}); a run of it as it ships is owed."
                if data.get("stale")
                else f"; its {len(data['patches'])} patches as they ship (sha256 recorded)."
                if "patches" in data
                else " (run before tables recorded the patches' sha256)."
            ),
            f"Run on {data['date']}: `{data['command']}` on {data['host']}; Python"
            f" {data['machine']['python']}, torch {data['machine']['torch']}, {data['machine']['cpus']} CPUs;"
            f" pristine {data['seconds']['pristine']}s, patched {data['seconds']['patched']}s."
            f" Verdict: **{data['verdict']}**.",
            "",
            "| test module | selected because | pristine p/f/s | patched p/f/s |",
            "|---|---|---|---|",
        ]
        for m in data["modules"]:
            out.append(f"| `{m['module']}` | {m['why']} | {_pfs(m['pristine'])} | {_pfs(m['patched'])} |")
        out.append(f"| **total** | | {_pfs(data['totals']['pristine'])} | {_pfs(data['totals']['patched'])} |")
        out += ["", "Outcomes that differ:", ""]
        if not data["differences"]:
            out.append("- none")
        for d in data["differences"]:
            state = _state(d, "**unexplained**")
            out.append(f"- `{d['test']}`: {d['pristine']} pristine, {d['patched']} patched; {state}")
        for key, title in (("skips", "Skip reasons"), ("failures", "Failure reasons")):
            out += ["", f"{title} (tests per reason, pristine / patched):", ""]
            out += _by_reason(data.get(key, {}))
        out.append("")
    return "\n".join(out)


def _by_reason(per_side: dict) -> list[str]:
    reasons: dict[str, list[int]] = {}
    for i, side in enumerate(("pristine", "patched")):
        for why in per_side.get(side, {}).values():
            reasons.setdefault(why or "(no reason given)", [0, 0])[i] += 1
    if not reasons:
        return ["- none"]
    ordered = sorted(reasons.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    return [f"- {a} / {b}: {why.replace('|', '/')}" for why, (a, b) in ordered]
