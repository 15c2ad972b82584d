"""FlashInfer for the runbook's proofs on FlashInfer's GDN prefill, staged on a machine with network
for a GPU machine without it. `python -m lab bundle` brings no FlashInfer, so verify runs there on
the Triton GDN prefill unless FlashInfer is brought. Two commands, both reading the release's pins
from the lab's resolution (lab.stage.resolve's `resolve/REL.txt` in the lab's cache):

    python -m lab bundle 0.33.0 && python -m lab flashinfer 0.33.0     # -> .stage-fi-0.33.0/p0 .. pN
    python -m lab flashinfer-jit 0.25.0                                # -> .stage-fi-prebuilt-0.25.0/
    python -m lab flashinfer-jit 0.23.0 --same-as 0.25.0               # 0.25.0's build, if the same

`stage` (`flashinfer`) packs what FlashInfer's GDN prefill imports and the bundle lacks, at the
versions vLLM's own resolution chose: flashinfer-python, cuda-tile, nvidia-cudnn-frontend and, from
flashinfer-python 0.6.14 on (vLLM 0.26+), the CuTe DSL that compiles its sm90 chunk kernel in the
engine's process (nvidia-cutlass-dsl and its libs for CUDA 13, cuda-bindings, cuda-pathfinder);
plus the modules `build` pre-built for the release when they are there. Not flashinfer-cubin
(295 MiB). It comes as one tar, fi.tar, cut into parts under one call's 64 MiB carry
(.stage-fi-REL/pN/fi.tar.N, p0 with fi.tar.sha256); on the GPU machine each part goes to $HOME/fi
(`lab.steps put fi-pN`, one call a part), then `lab.steps fi-site` installs it into $HOME/fi-site
(lab.sites). FlashInfer stays out of the release's sites: importable, it changes the sampler of
every run.

`build` (`flashinfer-jit`) pre-builds, on a machine without a GPU, a FlashInfer nvcc-JIT module that
vLLM's FlashInfer path would build at engine start on the GPU machine (the bundle has no
flashinfer-cubin or flashinfer-jit-cache), for sm_90a (H100), and packs it where FlashInfer loads
it without a build: .stage-fi-prebuilt-REL/fi-aot-MODULE-sm90a.tar.xz (flashinfer/data/aot/MODULE/
MODULE.so inside), its .sha256 and MANIFEST-MODULE.txt. The module (`--module`, or MODULE) is by
default the one the pin builds with nvcc on the path verify takes:
- `gdn_prefill_sm90` (flashinfer.jit.gdn.gen_gdn_prefill_sm90_module(): 64 CUTLASS instances,
  2 dtypes x 32 flag combinations, plus launcher and kernel): the sm90 GDN prefill of
  flashinfer-python before 0.6.14 (vLLM 0.20/0.21: 0.6.8.post1; 0.23: 0.6.12; 0.25: 0.6.13).
  On 2026-11-23 (0.24.0) the GPU machine's engine had not finished this build after 570 s.
- `sampling` (flashinfer.jit.sampling.gen_sampling_module(): csrc/sampling.cu, renorm.cu,
  flashinfer_sampling_binding.cu), the module of vLLM's FlashInfer top-k/top-p sampler
  (VLLM_USE_FLASHINFER_SAMPLER defaults to on in 0.31/0.33 once flashinfer imports). verify's
  and the benchmarks' engines turn it off (verify/engine.py: they decode greedily), so only
  engines started otherwise need this module. The default for 0.7.x pins.
- NOT the GDN prefill from flashinfer-python 0.6.14 (vLLM 0.26) on: there the sm90
  chunk_gated_delta_rule is a CuTe-DSL kernel
  (flashinfer/gdn_kernels/delta_rule_dsl/delta_rule_sm90.py, and delta_rule_cp_sm90.py for the
  context-parallel route), compiled in-process by cute.compile (nvidia-cutlass-dsl, not nvcc);
  cute.compile forces no_cache=True and FlashInfer keeps the result in an in-memory dict only,
  so there is nothing on disk to pre-build. It also needs nvidia-cutlass-dsl on the GPU
  machine: `import flashinfer.gdn_prefill` fails with "No module named 'cutlass'" without it.

How FlashInfer finds the result: JitSpecNvcc.try_load() (0.7.x; JitSpec.build_and_load() in
0.6.x) loads <flashinfer package>/data/aot/<name>/<name>.so (flashinfer.jit.env's AOT dir
fallback) with no ninja and no source/path/mtime check. The JIT cache
($FLASHINFER_WORKSPACE_BASE/.cache/flashinfer/<ver>/<arch>/cached_ops/<name>/) is the wrong
place to carry: there FlashInfer rewrites build.ninja and runs ninja on every load, and the
build.ninja holds absolute paths (the flashinfer and tvm_ffi install dirs, the Python include
dir, CUDA_HOME) that differ on the GPU machine, so ninja sees a changed command and rebuilds.

Seen 2026-11-25 on the H100 (driver 580.159.04, nvcc 13.0.88 as here, glibc 2.39, torch 2.11+cu130):
0.31.0's sampling artifact in a --target install of flashinfer-python 0.7.0.post1 loaded from
data/aot with FLASHINFER_DISABLE_JIT=1 (no build, no nvcc, nothing written under
FLASHINFER_WORKSPACE_BASE), and top_k_top_p_sampling_from_logits / top_p_sampling_from_probs
ran (picks within the top 20).
Seen 2026-11-27 here (2 cores, nvcc 13.0.88): 0.25.0's gdn_prefill_sm90 (flashinfer-python 0.6.13)
built in about 77 min, a 3.7 MB module (2.0 MB xz); 0.6.12's build compared the same over 795
inputs (SAME_AS, 3 s); with FLASHINFER_DISABLE_JIT=1 and FLASHINFER_CUDA_ARCH_LIST=9.0a it loaded
through FlashInfer's AOT path (gen_gdn_prefill_sm90_module().build_and_load(), is_aot True) and
exports gdn_prefill, on a host without a GPU. On 2026-11-27 vLLM 0.23.0 and 0.25.0 loaded it on an
H200 without a build and ran their FlashInfer proofs on it (docs/VERIFICATION.md). 0.6.8.post1's
(vLLM 0.20.0, 0.21.0) built here too, over two sessions: an 8.5 MB module, 0.3 MB xz; both
releases loaded it on an H100 and ran their FlashInfer proofs on it (2026-11-27). 0.6.4's (vLLM
0.17.x) built here on 2026-12-06 in 44 min, 0.2 MiB xz, and loaded through the AOT path with
FLASHINFER_DISABLE_JIT=1 (exports gdn_prefill); built by nvcc 13 it needs libcudart.so.13, which
a 0.17 engine (torch 2.10 on CUDA 12's runtime) finds beside its own on the GPU machine: on an
H100 on 2026-12-06 0.17.0's and 0.17.1's engines mapped both runtimes and ran their FlashInfer
proofs on it.

Build environment (env vars honoured): PY (a Python that imports torch; FlashInfer's __init__
needs it; a CPU torch will do), WORK (scratch, default ~/.cache/fi-prebuild), MAX_JOBS (2),
CUDA_HOME (/usr/local/cuda). The build is FLASHINFER_CUDA_ARCH_LIST=9.0a and, since this
toolkit has no cuRAND headers, CPATH=<nvidia-curand wheel>/nvidia/cu13/include.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import stage as lab_stage

MIB = 1 << 20
ROOT = Path(__file__).resolve().parents[1]
SAME_BUILD = ROOT / "lab" / "runbook" / "fi_same_build.py"

# lab.stage drops every flashinfer, cuda- and nvidia- package (and quack-kernels) from its stage
# (the GPU image has its own CUDA packages); of those, these are what FlashInfer's GDN prefill imports
WANT = (
    "flashinfer-python",
    "quack-kernels",
    "cuda-tile",
    "nvidia-cudnn-frontend",
    "nvidia-cutlass-dsl",
    "nvidia-cutlass-dsl-libs-base",
    "nvidia-cutlass-dsl-libs-core",
    "nvidia-cutlass-dsl-libs-cu13",
    "cuda-bindings",
    "cuda-pathfinder",
)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "any",
)
MAX_PARTS = 10  # fi-site joins fi.tar.[0-9]

# flashinfer-python pins (shell patterns) and the module each builds with nvcc on verify's path
DEFAULTS = (("0.7.*", "sampling"), ("0.6.8*", "gdn_prefill_sm90"), ("0.6.9*", "gdn_prefill_sm90"))
DEFAULTS += (("0.6.1[0-3]*", "gdn_prefill_sm90"),)
# 0.6.4 (vLLM 0.17.x, whose Hopper engines always take FlashInfer's prefill): the same generator,
# 32 instances over two dtypes (read in its wheel's flashinfer/jit/gdn.py, 2026-12-06)
DEFAULTS += (("0.6.4", "gdn_prefill_sm90"),)
# The first vLLM release whose pin (flashinfer-python 0.6.14) compiles the sm90 GDN prefill with the
# CuTe DSL in the engine's process: before it, every pin builds gdn_prefill_sm90 with nvcc (DEFAULTS)
DSL_FROM = "0.26.0"
# each module's generator in flashinfer.jit
MODULES = {
    "sampling": ("flashinfer.jit.sampling", "gen_sampling_module"),
    "gdn_prefill_sm90": ("flashinfer.jit.gdn", "gen_gdn_prefill_sm90_module"),
}
ARCH = "90a"

# run in the build venv: MODULE's spec, built (or with `ninja-only`, only its build.ninja written)
BUILD_PY = """import importlib, sys
gen = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])
spec = gen()  # renders the generated sources
if sys.argv[3:] == ["ninja-only"]:
    spec.write_ninja()
    print("wrote", spec.ninja_path)
else:
    spec.build(verbose=True)
    print("built", spec.jit_library_path)
"""
BUILD_DEPS = ("einops", "tabulate", "tqdm", "nvidia-ml-py", "packaging", "requests", "click", "filelock", "numpy")


class Refused(Exception):
    """What the staging will not do, and the exit status to say it with (2: bad input, 1: failed)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def resolution(release: str) -> Path:
    """The release's resolution, as lab.stage.resolve writes it in the lab's cache."""
    return lab_stage.cache() / "resolve" / f"{release}.txt"


def pin_lines(release: str, names: tuple[str, ...]) -> list[str]:
    """The `name==version` lines of the release's resolution for `names` (any case), in its order;
    none where the release has no resolution."""
    try:
        text = resolution(release).read_text()
    except OSError:
        return []
    want = {n.lower() for n in names}
    found = []
    for line in text.splitlines():
        name, sep, _ = line.partition("==")
        if sep and name.lower() in want:
            found.append(line.strip())
    return found


def pin(release: str, name: str) -> str:
    """`name`'s version in the release's resolution, or ''."""
    lines = pin_lines(release, (name,))
    return lines[0].partition("==")[2].split("=")[0].strip() if lines else ""


def needs_resolution(release: str) -> None:
    if not resolution(release).is_file():
        raise Refused(f"no {resolution(release)}: run python -m lab bundle {release} first")


def default_module(fi_ver: str) -> str:
    """The module flashinfer-python `fi_ver` builds with nvcc on verify's path, or ''."""
    return next((m for pattern, m in DEFAULTS if fnmatch.fnmatchcase(fi_ver, pattern)), "")


def sha256sum_line(path: Path) -> str:
    """sha256sum's line for `path`, named by its file name."""
    return f"{lab_stage.sha256_file(path)}  {path.name}\n"


def prebuilt(release: str, root: Path) -> list[Path]:
    """The archives `build` left for the release under `root` (.stage-fi-prebuilt-REL)."""
    return sorted((root / f".stage-fi-prebuilt-{release}").glob("fi-aot-*-sm90a.tar.xz"))


def lab_set(release: str, root: Path) -> tuple[dict[str, str], list[Path]]:
    """What lab.machine's FlashInfer proofs of `release` need: the pins `stage` packs (WANT, as the
    release's resolution pins them) and the modules `build` pre-built. Refused where the pin builds
    its GDN prefill with nvcc and that module is not pre-built here: no engine finished that build
    within a call (vLLM 0.24.0, 2026-11-23)."""
    needs_resolution(release)
    fi_ver = pin(release, "flashinfer-python")
    if not fi_ver:
        raise Refused(f"vLLM {release}'s resolution has no flashinfer-python")
    archives = prebuilt(release, root)
    module = default_module(fi_ver)
    if module == "gdn_prefill_sm90" and f"fi-aot-{module}-sm90a.tar.xz" not in {a.name for a in archives}:
        raise Refused(
            f"vLLM {release}: flashinfer-python {fi_ver} builds its GDN prefill with nvcc; "
            f"pre-build it first: python -m lab flashinfer-jit {release}"
        )
    return lab_stage.parse_pins("\n".join(pin_lines(release, WANT))), archives


# ---- stage: FlashInfer's wheels and the pre-built modules, in parts -------------------------------


def split(src: Path, out: Path, part: int) -> list[Path]:
    """`src` cut into out/p0/NAME.0, out/p1/NAME.1, ... of `part` bytes each (the last: the rest)."""
    paths = []
    with open(src, "rb") as f:
        while chunk := f.read(part):
            n = len(paths)
            if n == MAX_PARTS:
                raise Refused(f"{src.name} needs more than {MAX_PARTS} parts of {part >> 20} MiB: larger parts", 1)
            (out / f"p{n}").mkdir(parents=True)
            paths.append(out / f"p{n}" / f"{src.name}.{n}")
            paths[-1].write_bytes(chunk)
    return paths


def download(pins: list[str], dest: Path, run: Callable = subprocess.run) -> None:
    """The wheels of `pins` for CPython 3.12 on manylinux x86_64, without their dependencies; what pip
    cannot find shows in the count of wheels afterwards, not as a failure here."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    cmd += ["--python-version", "3.12", "--implementation", "cp"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    done = run([*cmd, "-d", str(dest), *pins], capture_output=True, text=True)
    for line in (done.stdout + done.stderr).splitlines():
        if not line.startswith("WARNING: Location"):
            print(line)


def stage(release: str, root: Path, part_mb: int = 54, run: Callable = subprocess.run, log=print) -> Path:
    """.stage-fi-REL under `root`: FlashInfer's wheels for the release and the modules `build`
    pre-built for it, one tar (fi.tar) in parts of `part_mb` MiB, a call carrying the tree beside each."""
    needs_resolution(release)
    if part_mb < 1:
        raise Refused("--part-mb: at least 1")
    pins = pin_lines(release, WANT)
    if not any(p.lower().startswith("flashinfer-python==") for p in pins):
        raise Refused(f"vLLM {release}'s resolution has no flashinfer-python")
    out = root / f".stage-fi-{release}"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheels = work / "w"
        wheels.mkdir()
        download(pins, wheels, run)
        if len(list(wheels.glob("*.whl"))) != len(pins):
            raise Refused(f"not every pin downloaded: {' '.join(pins)}", 1)
        archives = prebuilt(release, root)
        for aot in archives:
            shutil.copyfile(aot, wheels / aot.name)
        if not archives:
            where = f".stage-fi-prebuilt-{release}"
            log(f"no pre-built module under {where}: FlashInfer JIT-builds what it needs at engine start")
        with tarfile.open(work / "fi.tar", "w") as tar:
            for f in sorted(wheels.iterdir()):
                tar.add(f, arcname=f.name)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        (out / "fi.tar.sha256").write_text(sha256sum_line(work / "fi.tar"))
        parts = split(work / "fi.tar", out, part_mb * MIB)
    shutil.copyfile(out / "fi.tar.sha256", out / "p0" / "fi.tar.sha256")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    log(f"staged {' '.join(pins)} for vLLM {release}: {-(-size // MIB)} MiB in {len(parts)} parts under {out.name}")
    return out


# ---- build: an nvcc-JIT module pre-built for sm_90a ------------------------------------------------


@dataclass
class Build:
    """One module's build for a release, as its resolution and the environment say."""

    release: str
    fi_ver: str
    tvm_ver: str
    module: str
    cuda_home: Path
    py: str
    work_base: Path  # WORK: a venv and workspace a flashinfer-python version under it
    same_as: str = ""
    ref_ver: str = ""

    def work(self, fi_ver: str = "") -> Path:
        """A flashinfer-python version's venv and workspace."""
        return self.work_base / (fi_ver or self.fi_ver)

    def ops(self, fi_ver: str = "") -> Path:
        """Where ninja builds the module for a flashinfer-python version."""
        v = fi_ver or self.fi_ver
        return self.work(v) / "ws" / ".cache" / "flashinfer" / v / ARCH / "cached_ops" / self.module


def _imports_torch(python: str, run: Callable) -> bool:
    try:
        return run([python, "-c", "import torch"], capture_output=True).returncode == 0
    except OSError:
        return False


def plan_build(
    release: str, module: str = "", same_as: str = "", env: Mapping[str, str] = os.environ, run=subprocess.run
) -> Build:
    """What `build` will do, or what it refuses, before it installs or builds anything."""
    needs_resolution(release)
    fi_ver, tvm_ver = pin(release, "flashinfer-python"), pin(release, "apache-tvm-ffi")
    if not fi_ver or not tvm_ver:
        raise Refused(f"vLLM {release} resolves no flashinfer-python or apache-tvm-ffi")
    module = module or default_module(fi_ver)
    if not module:
        checked = "0.6.4, 0.6.8.post1 .. 0.6.13, 0.7.x"
        raise Refused(f"flashinfer-python {fi_ver}: no module known to pre-build (checked: {checked}); set MODULE")
    if module not in MODULES:
        raise Refused(f"MODULE={module}: one of {', '.join(MODULES)}")
    cuda_home = Path(env.get("CUDA_HOME") or "/usr/local/cuda")
    nvcc = cuda_home / "bin" / "nvcc"
    if not (nvcc.is_file() and os.access(nvcc, os.X_OK)):
        raise Refused(f"no nvcc under {cuda_home}")
    py = env.get("PY") or next((p for p in ("python3.12", "python3.11", "python3") if _imports_torch(p, run)), "")
    if not py:
        raise Refused("no Python with torch found: set PY")
    work_base = Path(env.get("WORK") or Path(env.get("HOME", "~")) / ".cache" / "fi-prebuild").expanduser()
    b = Build(release, fi_ver, tvm_ver, module, cuda_home, py, work_base, same_as)
    if same_as:
        b.ref_ver = pin(same_as, "flashinfer-python")
        if not b.ref_ver:
            raise Refused(f"SAME_AS={same_as}: no flashinfer-python in its resolution (stage it first)")
        if not (b.ops(b.ref_ver) / f"{module}.so").is_file():
            raise Refused(
                f"SAME_AS={same_as}: no {module} built under {b.ops(b.ref_ver)} (if {same_as} took it SAME_AS "
                "another release, name that one: its MANIFEST says which)"
            )
    return b


def _site(python: str, run: Callable) -> str:
    done = run(
        [python, "-c", 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], capture_output=True, text=True
    )
    return done.stdout.strip()


def prepare(b: Build, run: Callable = subprocess.run) -> None:
    """The build venv (the pinned FlashInfer over PY's torch), cuRAND's headers and a libcuda.so to
    link against, each made once under the version's work directory."""
    work = b.work()
    work.mkdir(parents=True, exist_ok=True)
    venv = work / "venv"
    if not (venv / "bin" / "python").exists():
        run([b.py, "-m", "venv", "--system-site-packages", str(venv)], check=True)
        # PY may itself be a venv, whose packages (torch) --system-site-packages does not reach: a
        # .pth appends PY's own site after the build venv's, so the pinned FlashInfer installed here wins
        Path(_site(str(venv / "bin" / "python"), run), "_py-site.pth").write_text(_site(b.py, run) + "\n")
        pip = [str(venv / "bin" / "pip"), "install", "-q"]
        run([*pip, "--no-deps", f"flashinfer-python=={b.fi_ver}"], check=True)
        run([*pip, f"apache-tvm-ffi=={b.tvm_ver}", *BUILD_DEPS], check=True)
    curand = work / "curand"
    if not (curand / "nvidia/cu13/include/curand_kernel.h").is_file():  # sampling.cuh includes curand.h
        dl = work / "curand-dl"
        shutil.rmtree(dl, ignore_errors=True)
        cmd = [b.py, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12"]
        cmd += ["--platform", "manylinux_2_27_x86_64", "--platform", "manylinux_2_28_x86_64", "-d", str(dl)]
        run([*cmd, "nvidia-curand"])
        wheels = sorted(dl.glob("*.whl"))
        if not wheels:
            raise Refused(f"no nvidia-curand wheel under {dl}: its headers are needed to build", 1)
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                z.extractall(curand, [n for n in z.namelist() if n.startswith("nvidia/cu13/include/")])
    # The link line has -lcuda from $CUDA_HOME/lib64/stubs, which a toolkit without a driver may
    # lack; the module uses no driver symbol (--as-needed drops it), so any libcuda.so lets ld finish.
    stubs = work / "stubs"
    stubs.mkdir(exist_ok=True)
    if not (b.cuda_home / "lib64/stubs/libcuda.so").is_file() and not (stubs / "libcuda.so").is_file():
        cc = ["gcc", "-shared", "-fPIC", "-x", "c", "-", "-Wl,-soname,libcuda.so.1", "-o", str(stubs / "libcuda.so")]
        run(cc, input="void flashinfer_prebuild_stub(void) {}\n", text=True, check=True)


def pack(so: Path, module: str, out: Path, pkg: Path) -> Path:
    """`so` as out/fi-aot-MODULE-sm90a.tar.xz (flashinfer/data/aot/MODULE/MODULE.so, where fi-site
    extracts it into $HOME/fi-site) and its .sha256; `pkg` is scratch. One archive a module: a
    release may carry more than one."""
    shutil.rmtree(pkg, ignore_errors=True)
    aot = pkg / "flashinfer" / "data" / "aot" / module
    aot.mkdir(parents=True)
    shutil.copy2(so, aot / so.name)
    out.mkdir(parents=True, exist_ok=True)
    art = out / f"fi-aot-{module}-sm90a.tar.xz"
    with tarfile.open(art, "w:xz") as tar:
        tar.add(pkg / "flashinfer", arcname="flashinfer")
    Path(f"{art}.sha256").write_text(sha256sum_line(art))
    return art


def check_hint(release: str, module: str) -> str:
    """What the GPU side does with the archive, and how to see that it loads without a build."""
    gen = "sampling as m; s = m.gen_sampling_module()"
    if module != "sampling":
        gen = "gdn as m; s = m.gen_gdn_prefill_sm90_module()"
    return f"""GPU side, 'REL={release} python3 -m lab.steps fi-site' extracts it into $HOME/fi-site/flashinfer.
No env var is needed (FLASHINFER_WORKSPACE_BASE does not matter for this path). To confirm it loads
without a build (FLASHINFER_DISABLE_JIT=1 makes any build raise):
  PYTHONPATH=$HOME/vllm-site:$HOME/fi-site FLASHINFER_DISABLE_JIT=1 python3 -c "import torch, flashinfer
from flashinfer.jit import {gen}; print('aot', s.is_aot, s.get_library_path())"
In vLLM's log: no 'Building JIT module {module}' line (flashinfer.jit logger), and no nvcc/cicc processes."""


def build(b: Build, root: Path, env: Mapping[str, str] = os.environ, run: Callable = subprocess.run, log=print) -> Path:
    """b.module built (or, with b.same_as, found the same as the build for that release's pin) and
    staged in .stage-fi-prebuilt-REL under `root`."""
    prepare(b, run)
    work, ops = b.work(), b.ops()
    start = time.monotonic()
    # the work directory's ws is kept between runs: ninja resumes where an earlier run stopped (a
    # 2-core build of sampling's three sources takes about 20 min, of gdn_prefill_sm90's 66 about 80 min)
    build_env = {
        **env,
        "CUDA_HOME": str(b.cuda_home),
        "LIBRARY_PATH": str(work / "stubs"),
        "CPATH": str(work / "curand/nvidia/cu13/include"),
        "FLASHINFER_WORKSPACE_BASE": str(work / "ws"),
        "FLASHINFER_CUDA_ARCH_LIST": "9.0a",
        "MAX_JOBS": env.get("MAX_JOBS") or "2",
    }
    cmd = [str(work / "venv/bin/python"), "-c", BUILD_PY, *MODULES[b.module]]
    run([*cmd, *(["ninja-only"] if b.same_as else [])], env=build_env, check=True)
    same_as = ""
    if b.same_as:
        # the module built for the other release's pin serves this one when lab/runbook/fi_same_build.py
        # finds the build the same: build.ninja alike but for each install's paths, and every input
        # ninja recorded from inside the install byte for byte (0.6.12 and 0.6.13 compare the same;
        # 0.6.8.post1 has their GDN sources but other CUTLASS headers)
        ref_work, ref_ops = b.work(b.ref_ver), b.ops(b.ref_ver)
        maps = [f"{ref_work}/={work}/", f"/flashinfer/{b.ref_ver}/=/flashinfer/{b.fi_ver}/"]
        if run([sys.executable, str(SAME_BUILD), str(ref_ops), str(ops), *maps]).returncode != 0:
            raise Refused(
                f"flashinfer-python {b.fi_ver} would not build {b.module} as {b.ref_ver} did (above): "
                "build it without SAME_AS",
                1,
            )
        so = ref_ops / f"{b.module}.so"
        same_as = f" same_build_as=flashinfer-python-{b.ref_ver}(vLLM-{b.same_as})"
    else:
        so = ops / f"{b.module}.so"
    secs = int(time.monotonic() - start)
    if not so.is_file():
        raise Refused(f"no {so}", 1)
    out = root / f".stage-fi-prebuilt-{b.release}"
    art = pack(so, b.module, out, work / "pkg")
    nvcc = run([str(b.cuda_home / "bin/nvcc"), "--version"], capture_output=True, text=True, check=True).stdout
    elf = run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    manifest = [
        f"vllm={b.release} flashinfer-python={b.fi_ver} apache-tvm-ffi={b.tvm_ver} arch=sm_90a "
        f"module={b.module} build_s={secs}{same_as}",
        (nvcc.strip().splitlines() or [""])[-1],
        f"so sha256: {lab_stage.sha256_file(so)}",
        *(line for line in elf.splitlines() if "NEEDED" in line),
    ]
    (out / f"MANIFEST-{b.module}.txt").write_text("\n".join(manifest) + "\n")
    log("\n".join(manifest))
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    log(f"staged in {size / MIB:.1f} MiB: {out}; python -m lab flashinfer {b.release} packs it with FlashInfer")
    log(check_hint(b.release, b.module))
    return art
