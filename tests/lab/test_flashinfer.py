"""lab/flashinfer.py without nvcc or network: the pins it reads, the module it picks, what it
refuses, and the layouts fi-site reads (.stage-fi-REL's parts, .stage-fi-prebuilt-REL's archive),
with stand-ins for pip, the build venv, gcc, nvcc and readelf."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from lab import flashinfer as fi

MIB = 1 << 20
SO = b"\x7fELF module"  # what the stand-in build writes as the module


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The lab's cache under tmp_path, with resolutions written by `resolve(release, text)`."""
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "resolve").mkdir(parents=True)
    return tmp_path / "cache"


def resolve(cache: Path, release: str, *pins: str) -> None:
    (cache / "resolve" / f"{release}.txt").write_text("".join(f"{p}\n" for p in ("vllm==" + release, *pins)))


@pytest.mark.parametrize(
    "version, module",
    [
        ("0.6.4", "gdn_prefill_sm90"),
        ("0.6.8.post1", "gdn_prefill_sm90"),
        ("0.6.9", "gdn_prefill_sm90"),
        ("0.6.12", "gdn_prefill_sm90"),
        ("0.6.13", "gdn_prefill_sm90"),
        ("0.7.0.post1", "sampling"),
        ("0.7.2.post1", "sampling"),
        ("0.6.14", ""),
        ("0.6.16.post3", ""),
        ("0.6.7", ""),
        ("0.6.40", ""),
    ],
)
def test_the_module_a_pin_builds_with_nvcc(version, module):
    assert fi.default_module(version) == module


def test_pins_are_read_from_the_labs_resolution_by_name_in_any_case(cache):
    resolve(cache, "0.25.0", "FlashInfer-Python==0.6.13", "apache-tvm-ffi==0.1.0", "flashinfer-cubin==0.6.13")
    assert fi.resolution("0.25.0") == cache / "resolve" / "0.25.0.txt"
    assert fi.pin("0.25.0", "flashinfer-python") == "0.6.13"
    assert fi.pin("0.25.0", "apache-tvm-ffi") == "0.1.0"
    assert fi.pin("0.25.0", "cuda-tile") == "" and fi.pin("0.99.0", "flashinfer-python") == ""
    assert fi.pin_lines("0.25.0", fi.WANT) == ["FlashInfer-Python==0.6.13"]


# ---- stage ---------------------------------------------------------------------------------------


def fake_pip(wheels: dict[str, int], seen: list):
    """pip download: writes a wheel of the given size for each pin it knows, warns as pip does."""

    def run(cmd, **kw):
        seen.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        for p in cmd[cmd.index("-d") + 2 :]:
            name, _, version = p.partition("==")
            if name in wheels:
                (dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(
                    hashlib.sha256(p.encode()).digest() * (wheels[name] // 32)
                )
        return subprocess.CompletedProcess(cmd, 0, "", "WARNING: Location 'x' is ignored.\n")

    return run


PINS_033 = ("flashinfer-python==0.7.2.post1", "nvidia-cutlass-dsl==4.8.0", "cuda-bindings==13.0.3", "torch==2.11.0")


def test_stage_packs_the_pinned_wheels_and_the_prebuilt_modules_as_fi_site_reads_them(cache, tmp_path, capsys):
    resolve(cache, "0.33.0", *PINS_033)
    root = tmp_path / "repo"
    prebuilt = root / ".stage-fi-prebuilt-0.33.0"
    prebuilt.mkdir(parents=True)
    (prebuilt / "fi-aot-sampling-sm90a.tar.xz").write_bytes(b"aot")
    (prebuilt / "MANIFEST-sampling.txt").write_text("not carried\n")
    (root / ".stage-fi-0.33.0" / "p7").mkdir(parents=True)  # an earlier stage's: gone
    seen: list = []
    sizes = {"flashinfer-python": 3 * MIB, "nvidia-cutlass-dsl": MIB, "cuda-bindings": MIB // 2}
    out = fi.stage("0.33.0", root, part_mb=2, run=fake_pip(sizes, seen))
    assert out == root / ".stage-fi-0.33.0"
    cmd = seen[0]
    assert cmd[1:5] == ["-m", "pip", "download", "-q"] and "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12" and cmd[cmd.index("--implementation") + 1] == "cp"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"] == list(fi.PLATFORMS)
    assert cmd[-3:] == list(PINS_033[:3])  # torch is the image's, not FlashInfer's
    assert sorted(p.name for p in out.iterdir()) == ["fi.tar.sha256", "p0", "p1", "p2"]
    assert [sorted(f.name for f in (out / f"p{i}").iterdir()) for i in range(3)] == [
        ["fi.tar.0", "fi.tar.sha256"],
        ["fi.tar.1"],
        ["fi.tar.2"],
    ]
    assert all((out / f"p{i}" / f"fi.tar.{i}").stat().st_size == 2 * MIB for i in (0, 1))
    # fi-site: joins fi.tar.[0-9] in $HOME/fi, checks them with sha256sum -c, untars the wheels
    home = tmp_path / "home" / "fi"
    home.mkdir(parents=True)
    for part in out.glob("p*/*"):
        (home / part.name).write_bytes(part.read_bytes())
    (home / "fi.tar").write_bytes(b"".join(p.read_bytes() for p in sorted(home.glob("fi.tar.[0-9]"))))
    assert subprocess.run(["sha256sum", "-c", "fi.tar.sha256"], cwd=home, capture_output=True).returncode == 0
    with tarfile.open(home / "fi.tar") as tar:
        assert sorted(tar.getnames()) == [
            "cuda_bindings-13.0.3-py3-none-any.whl",
            "fi-aot-sampling-sm90a.tar.xz",
            "flashinfer_python-0.7.2.post1-py3-none-any.whl",
            "nvidia_cutlass_dsl-4.8.0-py3-none-any.whl",
        ]
    said = capsys.readouterr().out
    assert "WARNING: Location" not in said
    assert (
        "staged flashinfer-python==0.7.2.post1 nvidia-cutlass-dsl==4.8.0 cuda-bindings==13.0.3 for vLLM 0.33.0: "
        in said
    )
    assert "in 3 parts under .stage-fi-0.33.0" in said and "no pre-built module" not in said


def test_stage_without_prebuilt_modules_says_flashinfer_builds_at_engine_start(cache, tmp_path, capsys):
    resolve(cache, "0.33.0", *PINS_033)
    out = fi.stage("0.33.0", tmp_path, run=fake_pip({n.split("==")[0]: 64 for n in PINS_033}, []))
    assert sorted(p.name for p in out.iterdir()) == ["fi.tar.sha256", "p0"]
    said = capsys.readouterr().out
    assert "no pre-built module under .stage-fi-prebuilt-0.33.0: FlashInfer JIT-builds what it needs" in said
    assert "in 1 parts under" in said


def test_stage_refuses_a_missing_wheel_a_zero_part_and_more_parts_than_fi_site_joins(cache, tmp_path):
    resolve(cache, "0.33.0", *PINS_033)
    with pytest.raises(fi.Refused, match="not every pin downloaded: flashinfer-python==0.7.2.post1 nvidia") as e:
        fi.stage("0.33.0", tmp_path, run=fake_pip({"flashinfer-python": 64}, []))
    assert e.value.code == 1
    with pytest.raises(fi.Refused, match="--part-mb: at least 1") as e:
        fi.stage("0.33.0", tmp_path, part_mb=0, run=fake_pip({}, []))
    assert e.value.code == 2
    sizes = {n.split("==")[0]: 4 * MIB for n in PINS_033}
    with pytest.raises(fi.Refused, match="fi.tar needs more than 10 parts of 1 MiB"):
        fi.stage("0.33.0", tmp_path, part_mb=1, run=fake_pip(sizes, []))


# ---- build ---------------------------------------------------------------------------------------


def curand_wheel() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("nvidia/cu13/include/curand_kernel.h", "/* curand */\n")
        z.writestr("nvidia/cu13/lib/libcurand.so.10", "not wanted")
    return buf.getvalue()


class Machine:
    """Stand-ins for what the build runs: PY and the build venv's Python and pip, gcc, the build
    (which writes the module where ninja would), fi_same_build.py, nvcc --version and readelf."""

    def __init__(self, tmp_path: Path, same: bool = True):
        self.tmp, self.same, self.seen = tmp_path, same, []

    def __call__(self, cmd, **kw):
        cmd = [str(c) for c in cmd]
        self.seen.append((cmd, kw))
        out = ""
        if cmd[1:3] == ["-m", "venv"]:
            Path(cmd[-1], "bin").mkdir(parents=True)
            Path(cmd[-1], "bin", "python").write_text("")
            Path(cmd[-1], "lib").mkdir()
        elif cmd[1:2] == ["-c"] and "purelib" in cmd[2]:
            out = str(Path(cmd[0]).parent.parent / "lib") if "/venv/" in cmd[0] else "/py/site-packages"
        elif cmd[1:4] == ["-m", "pip", "download"]:
            dest = Path(cmd[cmd.index("-d") + 1])
            dest.mkdir(parents=True)
            (dest / "nvidia_curand-10.4-py3-none-manylinux_2_27_x86_64.whl").write_bytes(curand_wheel())
        elif cmd[0] == "gcc":
            Path(cmd[-1]).write_text(kw["input"])
        elif cmd[1:2] == ["-c"] and cmd[2] == fi.BUILD_PY:
            ws = Path(kw["env"]["FLASHINFER_WORKSPACE_BASE"])  # WORK/<version>/ws
            module = cmd[4].removeprefix("gen_").removesuffix("_module")
            ops = ws / ".cache/flashinfer" / ws.parent.name / "90a/cached_ops" / module
            ops.mkdir(parents=True, exist_ok=True)
            if cmd[5:] != ["ninja-only"]:
                (ops / f"{module}.so").write_bytes(SO)
            (ops / "build.ninja").write_text("ninja\n")
        elif cmd[1].endswith("fi_same_build.py"):
            return subprocess.CompletedProcess(cmd, 0 if self.same else 1, "", "")
        elif cmd[0].endswith("/nvcc"):
            out = "nvcc: NVIDIA (R) Cuda compiler driver\nBuild cuda_13.0.r13.0/compiler.36424714_0\n"
        elif cmd[0] == "readelf":
            out = " 0x1 (NEEDED)  Shared library: [libcudart.so.13]\n 0xe (SONAME)  Library soname: [x.so]\n"
        return subprocess.CompletedProcess(cmd, 0, out, "")

    def commands(self) -> list[list[str]]:
        return [c for c, _ in self.seen]


@pytest.fixture
def toolkit(tmp_path):
    """A CUDA_HOME whose bin/nvcc is executable and which has no libcuda stub; the build's env."""
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    return {"CUDA_HOME": str(tmp_path / "cuda"), "PY": "/py/bin/python", "WORK": str(tmp_path / "work")}


def test_plan_build_reads_both_pins_and_the_module_the_pin_builds(cache, toolkit, tmp_path):
    resolve(cache, "0.25.0", "flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0")
    b = fi.plan_build("0.25.0", env=toolkit)
    assert (b.fi_ver, b.tvm_ver, b.module, b.py) == ("0.6.13", "0.1.0", "gdn_prefill_sm90", "/py/bin/python")
    assert b.ops() == tmp_path / "work/0.6.13/ws/.cache/flashinfer/0.6.13/90a/cached_ops/gdn_prefill_sm90"
    assert fi.plan_build("0.25.0", module="sampling", env=toolkit).module == "sampling"
    home = {k: v for k, v in toolkit.items() if k != "WORK"} | {"HOME": str(tmp_path / "h")}
    assert fi.plan_build("0.25.0", env=home).work() == tmp_path / "h/.cache/fi-prebuild/0.6.13"
    # without PY: the first of python3.12, python3.11, python3 that imports torch
    tried = []

    def torch_in_python3(cmd, **kw):
        tried.append(cmd[0])
        return subprocess.CompletedProcess(cmd, 0 if cmd[0] == "python3" else 1)

    no_py = {k: v for k, v in toolkit.items() if k != "PY"}
    assert fi.plan_build("0.25.0", env=no_py, run=torch_in_python3).py == "python3"
    assert tried == ["python3.12", "python3.11", "python3"]


@pytest.mark.parametrize(
    "pins, module, env, said",
    [
        (("flashinfer-python==0.6.13",), "", {}, "vLLM 0.25.0 resolves no flashinfer-python or apache-tvm-ffi"),
        (("apache-tvm-ffi==0.1.0",), "", {}, "vLLM 0.25.0 resolves no flashinfer-python or apache-tvm-ffi"),
        (
            ("flashinfer-python==0.6.16.post3", "apache-tvm-ffi==0.1.0"),
            "",
            {},
            "flashinfer-python 0.6.16.post3: no module known to pre-build (checked: 0.6.4, 0.6.8.post1 .. 0.6.13, 0.7.x); "
            "set MODULE",
        ),
        (
            ("flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0"),
            "gdn",
            {},
            "MODULE=gdn: one of sampling, gdn_prefill_sm90",
        ),
        (
            ("flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0"),
            "",
            {"CUDA_HOME": "/nowhere"},
            "no nvcc under /nowhere",
        ),
        (("flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0"), "", {"PY": ""}, "no Python with torch found: set PY"),
    ],
)
def test_plan_build_refuses(cache, toolkit, pins, module, env, said):
    resolve(cache, "0.25.0", *pins)
    no_torch = lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1)  # noqa: E731
    with pytest.raises(fi.Refused) as e:
        fi.plan_build("0.25.0", module, env=toolkit | env, run=no_torch)
    assert str(e.value) == said and e.value.code == 2


def test_plan_build_refuses_same_as_without_its_pin_or_its_build(cache, toolkit, tmp_path):
    resolve(cache, "0.23.0", "flashinfer-python==0.6.12", "apache-tvm-ffi==0.1.0")
    with pytest.raises(
        fi.Refused, match=r"^SAME_AS=0.25.0: no flashinfer-python in its resolution \(stage it first\)$"
    ):
        fi.plan_build("0.23.0", same_as="0.25.0", env=toolkit)
    resolve(cache, "0.25.0", "flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0")
    ref = tmp_path / "work/0.6.13/ws/.cache/flashinfer/0.6.13/90a/cached_ops/gdn_prefill_sm90"
    with pytest.raises(fi.Refused) as e:
        fi.plan_build("0.23.0", same_as="0.25.0", env=toolkit)
    assert str(e.value) == (
        f"SAME_AS=0.25.0: no gdn_prefill_sm90 built under {ref} (if 0.25.0 took it SAME_AS another release, "
        "name that one: its MANIFEST says which)"
    )
    ref.mkdir(parents=True)
    (ref / "gdn_prefill_sm90.so").write_bytes(b"so")
    assert fi.plan_build("0.23.0", same_as="0.25.0", env=toolkit).ref_ver == "0.6.13"


def test_build_stages_the_module_where_flashinfer_loads_it_without_a_build(cache, toolkit, tmp_path, capsys):
    resolve(cache, "0.25.0", "flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0")
    machine = Machine(tmp_path)
    b = fi.plan_build("0.25.0", env=toolkit)
    art = fi.build(b, tmp_path / "repo", env=toolkit | {"MAX_JOBS": "3"}, run=machine)
    out = tmp_path / "repo" / ".stage-fi-prebuilt-0.25.0"
    assert art == out / "fi-aot-gdn_prefill_sm90-sm90a.tar.xz"
    assert sorted(p.name for p in out.iterdir()) == [
        "MANIFEST-gdn_prefill_sm90.txt",
        "fi-aot-gdn_prefill_sm90-sm90a.tar.xz",
        "fi-aot-gdn_prefill_sm90-sm90a.tar.xz.sha256",
    ]
    assert subprocess.run(["sha256sum", "-c", art.name + ".sha256"], cwd=out, capture_output=True).returncode == 0
    # fi-site: tar -xJf into $HOME/fi-site, where FlashInfer's AOT path finds flashinfer/data/aot/M/M.so
    site = tmp_path / "fi-site"
    site.mkdir()
    subprocess.run(["tar", "-xJf", str(art), "-C", str(site)], check=True)
    assert (site / "flashinfer/data/aot/gdn_prefill_sm90/gdn_prefill_sm90.so").read_bytes() == SO
    assert [str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()] == [
        "flashinfer/data/aot/gdn_prefill_sm90/gdn_prefill_sm90.so"
    ]
    manifest = (out / "MANIFEST-gdn_prefill_sm90.txt").read_text().splitlines()
    assert manifest[0].startswith(
        "vllm=0.25.0 flashinfer-python=0.6.13 apache-tvm-ffi=0.1.0 arch=sm_90a module=gdn_prefill_sm90 build_s="
    )
    assert manifest[1:] == [
        "Build cuda_13.0.r13.0/compiler.36424714_0",
        f"so sha256: {hashlib.sha256(SO).hexdigest()}",
        " 0x1 (NEEDED)  Shared library: [libcudart.so.13]",
    ]
    work = tmp_path / "work" / "0.6.13"
    cmds = machine.commands()
    assert cmds[0] == ["/py/bin/python", "-m", "venv", "--system-site-packages", str(work / "venv")]
    assert (work / "venv/lib/_py-site.pth").read_text() == "/py/site-packages\n"
    assert [str(work / "venv/bin/pip"), "install", "-q", "--no-deps", "flashinfer-python==0.6.13"] in cmds
    assert [str(work / "venv/bin/pip"), "install", "-q", "apache-tvm-ffi==0.1.0", *fi.BUILD_DEPS] in cmds
    assert (work / "curand/nvidia/cu13/include/curand_kernel.h").is_file()
    assert not (work / "curand/nvidia/cu13/lib").exists()
    assert (work / "stubs/libcuda.so").read_text() == "void flashinfer_prebuild_stub(void) {}\n"
    (build_cmd, kw) = next((c, kw) for c, kw in machine.seen if fi.BUILD_PY in c)
    assert build_cmd == [str(work / "venv/bin/python"), "-c", fi.BUILD_PY, *fi.MODULES["gdn_prefill_sm90"]]
    assert {k: kw["env"][k] for k in ("LIBRARY_PATH", "CPATH", "FLASHINFER_WORKSPACE_BASE")} == {
        "LIBRARY_PATH": str(work / "stubs"),
        "CPATH": str(work / "curand/nvidia/cu13/include"),
        "FLASHINFER_WORKSPACE_BASE": str(work / "ws"),
    }
    assert (kw["env"]["FLASHINFER_CUDA_ARCH_LIST"], kw["env"]["MAX_JOBS"], kw["env"]["CUDA_HOME"]) == (
        "9.0a",
        "3",
        toolkit["CUDA_HOME"],
    )
    said = capsys.readouterr().out
    assert "python -m lab flashinfer 0.25.0 packs it with FlashInfer" in said
    assert "REL=0.25.0 python3 -m lab.steps fi-site" in said and "gen_gdn_prefill_sm90_module()" in said
    # a second run keeps the venv, cuRAND's headers and the stub: only the build and the manifest's tools
    machine.seen.clear()
    fi.build(b, tmp_path / "repo", env=toolkit, run=machine)
    assert [c[0] for c in machine.commands()] == [
        str(work / "venv/bin/python"),
        f"{toolkit['CUDA_HOME']}/bin/nvcc",
        "readelf",
    ]


def test_build_same_as_takes_the_other_pins_module_only_when_the_build_is_the_same(cache, toolkit, tmp_path):
    resolve(cache, "0.25.0", "flashinfer-python==0.6.13", "apache-tvm-ffi==0.1.0")
    resolve(cache, "0.23.0", "flashinfer-python==0.6.12", "apache-tvm-ffi==0.1.0")
    machine = Machine(tmp_path)
    fi.build(fi.plan_build("0.25.0", env=toolkit), tmp_path / "repo", env=toolkit, run=machine)
    machine.seen.clear()
    b = fi.plan_build("0.23.0", same_as="0.25.0", env=toolkit)
    art = fi.build(b, tmp_path / "repo", env=toolkit, run=machine)
    cmds = machine.commands()
    build_cmd = next(c for c in cmds if fi.BUILD_PY in c)
    assert build_cmd[-1] == "ninja-only"
    ops = "ws/.cache/flashinfer/{v}/90a/cached_ops/gdn_prefill_sm90"
    work = tmp_path / "work"
    same = next(c for c in cmds if c[1].endswith("fi_same_build.py"))
    assert same[1] == str(fi.ROOT / "lab/runbook/fi_same_build.py")
    assert same[2:] == [
        str(work / "0.6.13" / ops.format(v="0.6.13")),
        str(work / "0.6.12" / ops.format(v="0.6.12")),
        f"{work}/0.6.13/={work}/0.6.12/",
        "/flashinfer/0.6.13/=/flashinfer/0.6.12/",
    ]
    manifest = (art.parent / "MANIFEST-gdn_prefill_sm90.txt").read_text().splitlines()
    assert manifest[0].endswith(" same_build_as=flashinfer-python-0.6.13(vLLM-0.25.0)")
    assert "vllm=0.23.0 flashinfer-python=0.6.12 " in manifest[0]
    assert not (work / "0.6.12" / ops.format(v="0.6.12") / "gdn_prefill_sm90.so").exists()
    with pytest.raises(fi.Refused) as e:
        fi.build(b, tmp_path / "repo", env=toolkit, run=Machine(tmp_path, same=False))
    assert str(e.value) == (
        "flashinfer-python 0.6.12 would not build gdn_prefill_sm90 as 0.6.13 did (above): build it without SAME_AS"
    )
    assert e.value.code == 1


# ---- lab_set: what lab.machine's FlashInfer proofs need -------------------------------------------


def test_lab_set_is_the_pins_stage_packs_and_the_prebuilt_modules(cache, tmp_path):
    resolve(cache, "0.33.0", *PINS_033)
    assert fi.lab_set("0.33.0", tmp_path) == (
        {"flashinfer-python": "0.7.2.post1", "nvidia-cutlass-dsl": "4.8.0", "cuda-bindings": "13.0.3"},
        [],  # sampling's module: verify's engines never build it
    )
    resolve(cache, "0.25.0", "flashinfer-python==0.6.13", "quack-kernels==0.5.0")
    with pytest.raises(fi.Refused) as refused:
        fi.lab_set("0.25.0", tmp_path)
    said = str(refused.value)
    assert "\n" not in said and said.endswith("pre-build it first: python -m lab flashinfer-jit 0.25.0")
    assert "flashinfer-python 0.6.13 builds its GDN prefill with nvcc" in said
    prebuilt = tmp_path / ".stage-fi-prebuilt-0.25.0"
    prebuilt.mkdir()
    (prebuilt / "fi-aot-gdn_prefill_sm90-sm90a.tar.xz").write_bytes(b"aot")
    pins, archives = fi.lab_set("0.25.0", tmp_path)
    assert pins == {"flashinfer-python": "0.6.13", "quack-kernels": "0.5.0"}
    assert archives == [prebuilt / "fi-aot-gdn_prefill_sm90-sm90a.tar.xz"]
    with pytest.raises(fi.Refused, match="run python -m lab bundle 0.26.0 first"):
        fi.lab_set("0.26.0", tmp_path)
