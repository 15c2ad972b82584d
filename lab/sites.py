"""The runbook's sites of one release, what `setup` builds them from, and FlashInfer's site.

fix     $HOME/vllm-site          the release's shipped series
ctl     /tmp/site-ctl-REL        the series without turboquant-spec-decode (and what is written
                                 on its lines, lab.proofs.WRITTEN_ON): TurboQuant as released
p65     /tmp/site-p65-REL        ctl plus P65, where benchmarks/alternatives/turboquant-cudagraph has it
pc-hit  /tmp/site-pc-hit-REL     the shipped series plus the candidate fix of vLLM #53912, where
                                 benchmarks/alternatives/prefix-cache-mtp-hit has it
raw     /tmp/site-raw-REL        pristine: the GDN control
less-ID /tmp/site-less-ID-REL    the shipped series less backport ID and what is written on its
                                 lines, for each ID in LESS the series carries: the control that
                                 proves ID alone, the rest of the series on both sides
"""

from __future__ import annotations

import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

# spec-prefill-decode-graph: vLLM #49918; turboquant-prefill-fastpath: vLLM #46460;
# turboquant-decode-workspace: vLLM #42544; gdn-draft-free-plain: the A/B arm of what it saves
LESS = (
    "spec-prefill-decode-graph",
    "turboquant-prefill-fastpath",
    "turboquant-decode-workspace",
    "gdn-draft-free-plain",
)
# The sites an A/B run is handed, where this release has them
BENCH_SITES = ("raw", "fix", "p65", *(f"less-{b}" for b in LESS))
# What a job that outlives its call copies of the tool: the next call may refresh the working tree
TOOL = ("apply.py", "vllm_backports", "benchmarks", "backports", "versions.toml", "lab")
# NVLink multicast stays off on the shared GPU hosts; engines' workers (a TP=2 engine's too)
# inherit these.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
PY = sys.executable


def paths(rel: str, home: Path) -> dict[str, Path]:
    """Every site of `rel` by name, whether or not setup made it."""
    out = {"fix": home / "vllm-site"}
    out |= {n: Path(f"/tmp/site-{n}-{rel}") for n in ("ctl", "p65", "raw", "pc-hit")}
    return out | {f"less-{b}": Path(f"/tmp/site-less-{b}-{rel}") for b in LESS}


def series(rel: str, root: Path = Path(".")) -> str:
    """The release's series as versions.toml names it (point releases share one; "" for none)."""
    with open(root / "versions.toml", "rb") as f:
        return tomllib.load(f)["releases"].get(rel, {}).get("series", "")


def carries(rel: str, backport: str, root: Path = Path(".")) -> bool:
    name = series(rel, root)
    try:
        lines = (root / "backports" / name / "series").read_text().splitlines() if name else []
    except OSError:
        return False
    return any(line.endswith(f"-{backport}.patch") for line in lines)


def without(rel: str, backport: str, root: Path = Path(".")) -> list[str]:
    """apply.py's --skip options for `backport` and what this series carries that is written on
    its lines (apply.py refuses those alone): lab.proofs.WRITTEN_ON, the lab's one table."""
    from .proofs import WRITTEN_ON, skips_without

    return skips_without(backport, [d for d in WRITTEN_ON.get(backport, ()) if carries(rel, d, root)])


def tool_copy(dst: Path) -> None:
    """The tool's own copy in `dst`, for a job that outlives its call."""
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for name in TOOL:
        if Path(name).is_dir():
            shutil.copytree(name, dst / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        elif Path(name).exists():
            shutil.copy2(name, dst / name)


def touched() -> list[str]:
    """Every vLLM file any patch here touches, read off the patches, so a new backport cannot
    leave a site sharing a hard-linked file with the others."""
    found = set()
    for patch in [*Path("backports").glob("*/*.patch"), *Path("benchmarks/alternatives").glob("*/*/*.patch")]:
        for line in patch.read_text(errors="replace").splitlines():
            if line.startswith("+++ b/vllm/"):
                found.add(line[len("+++ b/vllm/") :].split("\t")[0])
    return sorted(found)


def site_copy(fix: Path, dst: Path, files: list[str], check: bool = False) -> None:
    """A hard-linked copy of the pristine install, with its own copy of every file a patch touches
    (`files`, as touched() lists them); `check`: a copy that fails raises."""
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-al", str(fix), str(dst)], check=check)
    for rel in files:
        f = dst / "vllm" / rel
        if f.is_file():
            shutil.copyfile(f, f.with_name(f.name + ".own"))
            os.replace(f.with_name(f.name + ".own"), f)


def apply(ctx, site: Path, args: list[str], out: Path) -> int:
    """apply.py on `site`, its JSON to `out`."""
    with open(out, "w") as f:
        return subprocess.run([PY, "apply.py", *args], stdout=f, env={**os.environ, "PYTHONPATH": str(site)}).returncode


def candidate(alternative: str, release: str) -> Path:
    """The candidate patch benchmarks/alternatives keeps of ALTERNATIVE for RELEASE (it may not exist)."""
    return Path("benchmarks/alternatives") / alternative / release / f"0001-{alternative}.patch"


def apply_candidate(site: Path, patch: Path) -> None:
    """PATCH on SITE exactly (no fuzz), by the hunks apply.py applies a series with, every file
    checked before any is written: a RuntimeError names the first mismatch, and nothing changed."""
    from vllm_backports.errors import PatchError
    from vllm_backports.hunks import Mismatch, apply_file
    from vllm_backports.patchfile import parse

    try:
        parsed = parse(patch.read_bytes(), patch.name)
    except PatchError as exc:
        raise RuntimeError(str(exc)) from None
    done: list[tuple[Path, bytes | None]] = []
    for fpatch in parsed.files:
        target = site / fpatch.path
        new = apply_file(target.read_bytes() if target.exists() else None, fpatch)
        if isinstance(new, Mismatch):
            raise RuntimeError(f"{patch}: {new}")
        done.append((target, new))
    for target, new in done:
        if new is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(new)


def alt_site(ctx, name: str, alternative: str, options: list[str], files: list[str]) -> None:
    """Site NAME: the series (less what the options skip) plus benchmarks/alternatives/ALTERNATIVE's
    patch for this release, where it has one."""
    patch = candidate(alternative, ctx.rel)
    if not patch.is_file():
        return
    site = ctx.site[name]
    site_copy(ctx.site["fix"], site, files)
    args = ["--vllm", ctx.rel, "--target", str(site), *options, "--json"]
    rc = apply(ctx, site, args, ctx.out / f"apply-{name}.json")
    print(f"{name} base: exit {rc}", flush=True)
    try:
        apply_candidate(site, patch)
    except RuntimeError as exc:
        # left, the site would be the shipped series alone, run under the candidate's name
        shutil.rmtree(site, ignore_errors=True)
        print(f"{name} patch: {exc}; site removed", flush=True)
    else:
        print(f"{name} patch: applied", flush=True)


def setup(ctx) -> int:
    """Revert a fix site an earlier setup patched, build every control site, patch the fix site,
    then tests/gpu's TurboQuant test (GPU_TESTS=0: not) and the release's own builder tests as CI's
    matrix lists them (RELEASE_TESTS=0: not), on the pristine site."""
    subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    fix, rel, env = ctx.site["fix"], ctx.rel, {**os.environ, "PYTHONPATH": str(ctx.site["fix"])}
    # A second setup on one install (chain with SKIP_INSTALL=1) finds the fix site patched by the
    # first: revert it, or the controls copied from it below would not be pristine.
    applied = len(applied_of(rel, fix))
    if applied:
        if apply(ctx, fix, ["revert", "--vllm", rel, "--json"], ctx.out / "revert-fix.json") != 0:
            print("setup: the fix site does not revert")
            return 1
        print(f"fix site: reverted the {applied} backports an earlier setup applied")
    if (fix / "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so").is_file():
        print("FA2: comes with the release's wheel")
    else:
        print(f"no FA2 in {fix} (vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so): TurboQuant proofs cannot run")
    files = touched()
    site_copy(fix, ctx.site["raw"], files)
    site_copy(fix, ctx.site["ctl"], files)
    for b in LESS:
        if not carries(rel, b):
            continue
        site = ctx.site[f"less-{b}"]
        site_copy(fix, site, files)
        args = ["--vllm", rel, "--target", str(site), *without(rel, b), "--json"]
        if apply(ctx, site, args, ctx.out / f"apply-less-{b}.json") == 0:
            print(f"less-{b}: exit 0", flush=True)
        else:
            print(f"less-{b}: the series does not apply without {b} here", flush=True)
            shutil.rmtree(site, ignore_errors=True)
    tq_skip = without(rel, "turboquant-spec-decode")
    ctl = ctx.site["ctl"]
    rc = apply(ctx, ctl, ["--vllm", rel, "--target", str(ctl), *tq_skip, "--json"], ctx.out / "apply-ctl.json")
    print(f"ctl: exit {rc}", flush=True)
    alt_site(ctx, "p65", "turboquant-cudagraph", tq_skip, files)
    alt_site(ctx, "pc-hit", "prefix-cache-mtp-hit", [], files)
    print(f"fix: exit {apply(ctx, fix, ['--vllm', rel, '--json'], ctx.out / 'apply-fix.json')}", flush=True)
    rc = apply(ctx, fix, ["status", "--vllm", rel, "--json"], ctx.out / "status-fix.json")
    print(f"status: exit {rc}", flush=True)
    if os.environ.get("GPU_TESTS", "1") != "0":
        cmd = [PY, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/gpu/test_turboquant_spec_decode.py"]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**env, "PYTHONPATH": f"{fix}:.gpu-pytest"})
        print("\n".join((done.stdout + done.stderr).splitlines()[-15:]), flush=True)
    # Less the interpreted kernel tests: tests/gpu runs those kernels on the GPU itself.
    matrix = subprocess.run([PY, "-m", "vllm_backports.maint", "matrix-json", "gdn-builder"], capture_output=True)
    try:
        rows = json.loads(matrix.stdout)["include"]
    except (ValueError, KeyError):
        rows = []
    tests = [t for r in rows if r["vllm"] == rel for t in r["tests"].split() if "interpreted" not in t]
    if tests and os.environ.get("RELEASE_TESTS", "1") != "0":
        env = {**os.environ, "PYTHONPATH": f"{ctx.site['raw']}:.gpu-pytest", "VLLM_BACKPORTS_REQUIRE_VLLM": "1"}
        with open(ctx.out / "release-tests.txt", "w") as f:
            cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", *tests]
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
        print("\n".join((ctx.out / "release-tests.txt").read_text().splitlines()[-3:]))
    # setup's status is the runs' above, not whether release tests were asked for: `chain` goes
    # on to the proofs on it
    return 0


# -- FlashInfer -----------------------------------------------------------------------------
# nvidia-cutlass-dsl puts `cutlass` on sys.path from a .pth file (python_packages in 4.5,
# dsl_packages from 4.6, from 4.8 code that inserts one), which Python reads in site directories
# only, not in a --target install on PYTHONPATH
_FI_PATH = """import site, sys
before = set(sys.path)
site.addsitedir(sys.argv[1])
print(":".join([sys.argv[1]] + [p for p in sys.path if p not in before and p != sys.argv[1]]))
"""


def fi_path(home: Path) -> str:
    """What Python's site machinery adds for $HOME/fi-site, read in a Python of its own (a .pth
    file's code runs as it is read)."""
    done = subprocess.run([PY, "-c", _FI_PATH, str(home / "fi-site")], capture_output=True, text=True, check=True)
    return done.stdout.strip()


FI_CHECK = """import importlib.util as u, pathlib, flashinfer, flashinfer.gdn_prefill
dsl = u.find_spec('cutlass') is not None
dsl and __import__('cutlass')
aot = sorted(p.name for p in (pathlib.Path(flashinfer.__file__).parent / 'data' / 'aot').glob('*'))
print('flashinfer', flashinfer.__version__, 'importable; cutlass dsl:', dsl, '; pre-built:', aot or 'none')"""


def fi_check(front: Path, home: Path, out=None) -> int:
    """FI_CHECK's exit code with FRONT, then HOME's FlashInfer site, on the path; its output to
    `out` (a file), else this process's."""
    env = {**os.environ, "PYTHONPATH": f"{front}:{fi_path(home)}"}
    return subprocess.run(
        [PY, "-c", FI_CHECK], stdout=out, stderr=subprocess.STDOUT if out else None, env=env
    ).returncode


def fi_install(wheels: list[Path], archives: list[Path], home: Path, front: Path) -> None:
    """FlashInfer's `wheels` into HOME/fi-site (pip --target, no index, no dependencies), the modules
    `python -m lab flashinfer-jit` pre-built (`archives`) extracted over it, where FlashInfer loads
    them without a build (flashinfer/data/aot/), and a cutlass-dsl without a CUDA toolkit flavor moved
    off the path to HOME/fi-off (FRONT, the release's site, before it for that probe). Raises
    RuntimeError with a line saying what failed."""
    site, off = home / "fi-site", home / "fi-off"
    shutil.rmtree(site, ignore_errors=True)
    pip = [PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--target", str(site)]
    done = subprocess.run([*pip, *map(str, wheels)], capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr + done.stdout).strip().splitlines()
        raise RuntimeError(f"pip install exited {done.returncode}: {said[-1] if said else ''}")
    for aot in archives:
        try:
            with tarfile.open(aot) as tar:
                tar.extractall(site, filter="data")
        except (tarfile.TarError, OSError, EOFError, lzma.LZMAError) as exc:
            raise RuntimeError(f"{aot.name}: {exc}") from None
    # 0.20.0's FlashInfer (0.6.8.post1) came with nvidia-cutlass-dsl 4.8.1 without a CUDA toolkit
    # flavor: its import raises RuntimeError, not the ImportError FlashInfer's optional import
    # expects, and every engine start failed (2026-11-27). Such a cutlass stays off the path.
    env = {**os.environ, "PYTHONPATH": f"{front}:{fi_path(home)}"}
    probe = subprocess.run([PY, "-c", "import cutlass"], capture_output=True, text=True, env=env)
    if "No CTK flavor" in probe.stdout + probe.stderr:
        off.mkdir(exist_ok=True)
        for pth in site.glob("nvidia_cutlass_dsl*.pth"):
            shutil.move(pth, off / pth.name)
        print("fi-site: cutlass-dsl has no CUDA toolkit flavor: left off the path", flush=True)


def fi_site(ctx) -> int:
    """FlashInfer into $HOME/fi-site, from the parts of `python -m lab flashinfer` (lab.flashinfer)
    put to $HOME/fi (p0 brings fi.tar.sha256)."""
    fi, work = ctx.home / "fi", ctx.home / "fi-w"
    with open(fi / "fi.tar", "wb") as tar:
        for part in sorted(fi.glob("fi.tar.[0-9]")):
            tar.write(part.read_bytes())
    if subprocess.run(["sha256sum", "-c", "fi.tar.sha256"], cwd=fi).returncode != 0:
        return 1
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    subprocess.run(["tar", "-xf", str(fi / "fi.tar"), "-C", str(work)], check=True)
    (fi / "fi.tar").unlink()
    try:
        fi_install(sorted(work.glob("*.whl")), sorted(work.glob("fi-aot-*.tar.xz")), ctx.home, ctx.site["fix"])
    except RuntimeError as exc:
        print(f"fi-site: {exc}", flush=True)
        return 1
    # the CuTe DSL only where the pin brought it: flashinfer-python before 0.6.14 builds its sm90
    # GDN prefill with nvcc instead (`python -m lab flashinfer-jit` pre-builds it)
    return fi_check(ctx.site["fix"], ctx.home)


def applied_of(rel: str, fix: Path) -> list[str]:
    """The backports the fix site carries, as apply.py status says (none where it cannot say)."""
    done = subprocess.run(
        [PY, "apply.py", "status", "--vllm", rel, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(fix)},
    )
    try:
        return list(json.loads(done.stdout).get("applied") or [])
    except (ValueError, AttributeError, TypeError):
        return []
