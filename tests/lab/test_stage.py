"""Staging: which of a release's pins the GPU machine lacks, and the wheels fetched for them."""

from __future__ import annotations

import pytest

from lab import stage


def test_pins_read_from_uvs_output_by_canonical_name():
    assert stage.parse_pins("Foo_Bar==1.0\n# comment\nbaz.qux==2  # why\n\n") == {"foo-bar": "1.0", "baz-qux": "2"}
    with pytest.raises(ValueError, match="not a pin"):
        stage.parse_pins("foo>=1\n")


def test_a_release_on_the_machines_torch_brings_none_of_its_stack_or_cuda():
    pins = {
        "torch": "2.11.0",
        "triton": "3.6.0",
        "nvidia-nccl-cu13": "2.28.9",
        "vllm": "0.22.0",
        "numpy": "2.2",
        "xgrammar": "0.2.5",
        "flashinfer-python": "0.6",
        "z3-solver": "4",
    }
    assert stage.needed(pins, {"torch", "triton", "numpy"}) == {"xgrammar": "0.2.5"}


def test_a_release_pinning_another_torch_brings_its_stack_and_nccl_only():
    pins = {
        "torch": "2.13.0",
        "triton": "3.7.0",
        "torchvision": "0.28.0",
        "nvidia-nccl-cu13": "2.29",
        "nvidia-cublas": "13.1",
        "numpy": "2.2",
        "xgrammar": "0.2.5",
    }
    got = stage.needed(pins, {"torch", "triton", "torchvision", "numpy", "nvidia-cublas"})
    assert got == {
        "torch": "2.13.0",
        "triton": "3.7.0",
        "torchvision": "0.28.0",
        "nvidia-nccl-cu13": "2.29",
        "xgrammar": "0.2.5",
    }


def test_the_image_list_is_read_by_canonical_name():
    names = stage.image_packages()
    assert {"torch", "triton", "transformers", "typing-extensions"} <= names and "vllm" not in names


def test_download_asks_pip_for_wheels_of_the_machines_python_and_names_what_did_not_come(tmp_path):
    seen = []

    def fake_pip(cmd, check):
        seen.append(cmd)
        (tmp_path / "xgrammar-0.2.5-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"w")
        (tmp_path / "xgrammar-0.2.4-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"old")

    got = stage.download({"xgrammar": "0.2.5"}, tmp_path, run=fake_pip)
    assert [p.name for p in got] == ["xgrammar-0.2.5-cp312-cp312-manylinux_2_28_x86_64.whl"]
    cmd = seen[0]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd and cmd[cmd.index("--python-version") + 1] == "3.12"
    assert cmd[-1] == "xgrammar==0.2.5"
    with pytest.raises(SystemExit, match="no wheel downloaded for llguidance"):
        stage.download({"xgrammar": "0.2.5", "llguidance": "1.7"}, tmp_path, run=lambda cmd, check: None)


def test_pip_may_take_a_wheel_of_any_glibc_up_to_the_machines():
    # pip matches platform tags exactly: a wheel tagged manylinux_2_18 (nvidia-nccl-cu13 2.30.7,
    # torch 2.14's NCCL) was refused when the list skipped from 2_17 to 2_24.
    from packaging.tags import parse_tag

    offered = set(stage.PLATFORMS)
    for minor in range(5, stage.GLIBC_MINOR + 1):
        (tag,) = parse_tag(f"py3-none-manylinux_2_{minor}_x86_64")
        assert tag.platform in offered
    assert "manylinux_2_36_x86_64" not in offered


def test_a_stage_round_trips_through_its_json(tmp_path):
    s = stage.Stage("0.22.0", "2.11.0", (stage.Blob("vllm.whl", "a" * 64, 3, "vllm"),))
    s.write(tmp_path / "s.json")
    assert stage.Stage.from_json(__import__("json").loads((tmp_path / "s.json").read_text())) == s


def test_a_release_on_cuda_12_brings_its_own_cuda_libraries_and_torch_stack():
    pins = {
        "torch": "2.10.0",
        "triton": "3.5.1",
        "nvidia-cublas-cu12": "12.8",
        "nvidia-nccl-cu12": "2.27",
        "cuda-bindings": "12.9",
        "numpy": "2.2",
        "xgrammar": "0.1.2",
        "flashinfer-python": "0.5",
    }
    got = stage.needed(pins, {"torch", "triton", "numpy", "cuda-bindings"}, cuda=12)
    assert got == {
        "torch": "2.10.0",
        "triton": "3.5.1",
        "nvidia-cublas-cu12": "12.8",
        "nvidia-nccl-cu12": "2.27",
        "cuda-bindings": "12.9",
        "xgrammar": "0.1.2",
    }


def test_the_images_own_triton_is_not_staged_again_whatever_torch_pins_it():
    pins = {"torch": "2.10.0", "triton": stage.MACHINE_TRITON, "nvidia-cublas-cu12": "12.8"}
    assert stage.needed(pins, {"torch", "triton"}, cuda=12) == {"torch": "2.10.0", "nvidia-cublas-cu12": "12.8"}
    assert stage.needed({**pins, "triton": "3.7.1"}, {"torch", "triton"}, cuda=12)["triton"] == "3.7.1"


def test_big_dependency_wheels_travel_repacked_once_and_the_releases_own_as_pypi_has_it(tmp_path, monkeypatch):
    from fake_wheel import wheel

    monkeypatch.setenv("VLLM_BACKPORTS_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(stage, "PACK_MIB", 1)
    (tmp_path / "w").mkdir()
    own = stage.into_store(wheel(tmp_path / "w", "vllm", "0.19.0", payload=2 << 20), "vllm")
    big = stage.into_store(wheel(tmp_path / "w", "nvidia_cudnn_cu12", "9.10", payload=2 << 20), "wheel")
    small = stage.into_store(wheel(tmp_path / "w", "xgrammar", "0.1"), "wheel")
    found = stage.Stage("0.19.0", "2.10.0", (own, big, small))
    made = []
    real = __import__("lab.parts", fromlist=["repack"]).repack
    monkeypatch.setattr("lab.parts.repack", lambda src, dest: made.append(src) or real(src, dest))
    got = stage.packed(found, log=lambda m: None)
    assert got.blobs[0] == own and got.blobs[2] == small
    repacked = got.blobs[1]
    assert (repacked.name, repacked.role, repacked.packed_from) == (big.name, "wheel", big.sha256)
    assert (tmp_path / "cache" / "store" / repacked.sha256).stat().st_size == repacked.size
    assert stage.packed(found, log=lambda m: None) == got and len(made) == 1  # kept in the store
    (tmp_path / "cache" / "packed" / f"{big.sha256}.json").write_text("")  # an entry cut short
    assert stage.packed(found, log=lambda m: None) == got and len(made) == 2  # is made again
    assert not [f for f in (tmp_path / "cache").rglob("*.tmp")]
    assert stage.Stage.from_json(got.to_json()) == got


def test_a_wheel_enters_the_store_once_and_as_a_link_not_a_copy(tmp_path, monkeypatch):
    from fake_wheel import wheel

    monkeypatch.setenv("VLLM_BACKPORTS_LAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "wheels").mkdir(parents=True)
    w = wheel(tmp_path / "cache" / "wheels", payload=1000)  # a download: never written again
    blob = stage.into_store(w, "wheel")
    kept = tmp_path / "cache" / "store" / blob.sha256
    assert kept.read_bytes() == w.read_bytes() and kept.stat().st_ino == w.stat().st_ino
    assert stage.into_store(w, "wheel") == blob and not list(kept.parent.glob("*.tmp"))
    # anything else (flashinfer-jit rebuilds its archives in place) is copied
    built = tmp_path / "fi-aot-x.tar.xz"
    built.write_bytes(b"module")
    other = tmp_path / "cache" / "store" / stage.into_store(built, "fi-aot").sha256
    assert other.read_bytes() == b"module" and other.stat().st_ino != built.stat().st_ino


def test_a_cached_stage_that_still_carries_the_images_triton_is_read_without_it(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_CACHE", str(tmp_path / "cache"))
    blobs = []
    for name in ("triton-3.6.0-cp312-cp312-manylinux_2_27_x86_64.whl", "triton-3.7.1-cp312-cp312-x.whl", "torch-2.10.0-x.whl"):
        (tmp_path / name).write_bytes(name.encode())
        blobs.append(stage.into_store(tmp_path / name, "wheel"))
    stage.Stage("0.19.0", "2.10.0", tuple(blobs)).write(tmp_path / "cache" / "stages" / "0.19.0.json")
    got = stage.stage("0.19.0", tmp_path, log=lambda m: None)
    assert [b.name for b in got.blobs] == ["triton-3.7.1-cp312-cp312-x.whl", "torch-2.10.0-x.whl"]
