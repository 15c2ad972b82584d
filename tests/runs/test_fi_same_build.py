"""lab/runbook/fi_same_build.py: one FlashInfer JIT artifact for two pins only when the build is the same."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("fi_same_build", REPO / "lab/runbook/fi_same_build.py")
fsb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fsb)

NINJA = """rule cc
  command = gcc -MD -MF $out.d -I{inc} -O2 -c $in -o $out
  depfile = $out.d
  deps = gcc
build {build}/k.o: cc {gen}/k.c
"""


def install(root: Path, version: str, header: str = "#define N 4\n", flags: str = "-O2") -> tuple[Path, Path]:
    """A stand-in for one pin: its venv (a header under flashinfer/data/include), its workspace (a
    generated source and the build directory with build.ninja), as FlashInfer lays them out."""
    inc = root / version / "venv/site-packages/flashinfer/data/include"
    gen = root / version / f"ws/flashinfer/{version}/generated/m"
    build = root / version / f"ws/flashinfer/{version}/cached_ops/m"
    for d in (inc, gen, build):
        d.mkdir(parents=True)
    (inc / "k.h").write_text(header)
    (gen / "k.c").write_text('#include "k.h"\nint k(void) { return N; }\n')
    (build / "build.ninja").write_text(NINJA.format(inc=inc, gen=gen, build=build).replace("-O2", flags))
    return root / version, build


def mapping(root: Path) -> list[tuple[str, str]]:
    return [(f"{root}/0.6.13/", f"{root}/0.6.12/"), ("/flashinfer/0.6.13/", "/flashinfer/0.6.12/")]


def deps_of(ref: Path, build: Path) -> list[str]:
    # what ninja -t deps records for this build: the generated source and the header it read
    return [
        str(ref / "ws/flashinfer/0.6.13/generated/m/k.c"),
        str(ref / "venv/site-packages/flashinfer/data/include/k.h"),
        "/usr/include/stdc-predef.h",
    ]


def test_the_same_inputs_under_other_paths_are_the_same_build(tmp_path):
    ref, ref_build = install(tmp_path, "0.6.13")
    _, new_build = install(tmp_path, "0.6.12")
    found, compared = fsb.differences(ref_build, new_build, mapping(tmp_path), deps_of(ref, ref_build))
    # the system header lies outside both installs and is not compared
    assert found == [] and compared == 2


def test_a_header_that_differs_makes_another_build(tmp_path):
    ref, ref_build = install(tmp_path, "0.6.13")
    _, new_build = install(tmp_path, "0.6.12", header="#define N 8\n")
    found, _ = fsb.differences(ref_build, new_build, mapping(tmp_path), deps_of(ref, ref_build))
    assert found == [f"{tmp_path}/0.6.12/venv/site-packages/flashinfer/data/include/k.h: differs"]


def test_other_compiler_flags_make_another_build(tmp_path):
    ref, ref_build = install(tmp_path, "0.6.13")
    _, new_build = install(tmp_path, "0.6.12", flags="-O3")
    found, _ = fsb.differences(ref_build, new_build, mapping(tmp_path), deps_of(ref, ref_build))
    assert found == ["build.ninja differs (line 2)"]


def test_an_input_the_other_pin_lacks_is_a_difference(tmp_path):
    ref, ref_build = install(tmp_path, "0.6.13")
    new, new_build = install(tmp_path, "0.6.12")
    (new / "venv/site-packages/flashinfer/data/include/k.h").unlink()
    found, _ = fsb.differences(ref_build, new_build, mapping(tmp_path), deps_of(ref, ref_build))
    assert found == [f"{tmp_path}/0.6.12/venv/site-packages/flashinfer/data/include/k.h: missing"]


def test_a_relative_input_is_read_from_the_build_directory(tmp_path):
    ref, ref_build = install(tmp_path, "0.6.13")
    new, new_build = install(tmp_path, "0.6.12")
    (ref_build / "local.h").write_text("1")
    (new_build / "local.h").write_text("2")
    found, compared = fsb.differences(ref_build, new_build, mapping(tmp_path), ["local.h"])
    assert compared == 1 and found == [f"{new_build}/local.h: differs"]


def test_the_longer_prefix_maps_first_and_nothing_maps_twice():
    table = [("/w/", "/v/"), ("/w/0.6.13/", "/w/0.6.12/")]
    assert fsb.remap("/w/0.6.13/venv/x /w/y", table) == "/w/0.6.12/venv/x /v/y"


def test_bad_input_is_refused_before_anything_is_read(tmp_path, capsys, monkeypatch):
    assert fsb.main([str(tmp_path)]) == 2
    assert fsb.main([str(tmp_path), str(tmp_path), "no-equals-sign"]) == 2
    assert fsb.main([str(tmp_path), str(tmp_path), "a=b"]) == 2
    assert f"no build.ninja under {tmp_path}" in capsys.readouterr().err
    # a reference whose inputs ninja cannot list (never built, or no ninja) is refused too
    ref, ref_build = install(tmp_path, "0.6.13")
    _, new_build = install(tmp_path, "0.6.12")
    monkeypatch.setattr(fsb.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("ninja")))
    assert fsb.main([str(ref_build), str(new_build), "a=b"]) == 2
    assert "ninja -t deps under" in capsys.readouterr().err


@pytest.mark.skipif(not (shutil.which("ninja") and shutil.which("gcc")), reason="needs ninja and gcc")
def test_end_to_end_with_the_inputs_ninja_recorded(tmp_path, capsys):
    ref, ref_build = install(tmp_path, "0.6.13")
    _, new_build = install(tmp_path, "0.6.12")
    subprocess.run(["ninja", "-C", str(ref_build)], check=True, capture_output=True)
    recorded = fsb.ninja_deps(ref_build)
    assert str(ref / "venv/site-packages/flashinfer/data/include/k.h") in recorded
    args = [str(ref_build), str(new_build), *(f"{a}={b}" for a, b in mapping(tmp_path))]
    assert fsb.main(args) == 0
    assert "same build: build.ninja and 2 inputs compared" in capsys.readouterr().out
    (tmp_path / "0.6.12/venv/site-packages/flashinfer/data/include/k.h").write_text("#define N 5\n")
    assert fsb.main(args) == 1
