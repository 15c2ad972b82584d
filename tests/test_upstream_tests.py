"""maint upstream-tests without a network or a vLLM: selection, the archive, explanations, results,
the verdict, and its errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from vllm_backports import upstream_tests as ut
from vllm_backports.errors import CatalogueError, FetchError, UsageError
from vllm_backports.pypi import WheelInfo, download

REPO = Path(__file__).resolve().parent.parent
GDN = "vllm/v1/attention/backends/gdn_attn.py"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def _tests_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# -- selection


def test_patched_modules_are_dotted_names_of_python_files():
    mods = ut.patched_modules([GDN, "vllm/v1/pkg/__init__.py", "vllm/kernels/x.cu", "setup.py"])
    assert mods == {GDN: "vllm.v1.attention.backends.gdn_attn", "vllm/v1/pkg/__init__.py": "vllm.v1.pkg"}


def test_selection_by_dotted_name_or_mirrored_path(tmp_path):
    root = _tests_tree(
        tmp_path,
        {
            "tests/v1/attention/test_builder.py": "from vllm.v1.attention.backends.gdn_attn import X\n",
            "tests/v1/worker/test_gpu_model_runner.py": "import torch\n",  # mirrors the runner
            "tests/v1/test_mock.py": 'mock.patch("vllm.v1.worker.gpu_model_runner.GPUModelRunner")\n',
            "tests/v1/test_longer_name.py": "import vllm.v1.attention.backends.gdn_attn_extra\n",
            "tests/v1/test_parent.py": "from vllm.v1.attention.backends import utils\n",
            "tests/v1/attention/helpers.py": "from vllm.v1.attention.backends.gdn_attn import X\n",
        },
    )
    chosen = {s.module: s.why for s in ut.select(root, [GDN, RUNNER])}
    assert chosen == {
        "tests/v1/attention/test_builder.py": "names vllm.v1.attention.backends.gdn_attn",
        "tests/v1/worker/test_gpu_model_runner.py": f"mirrors {RUNNER}",
        "tests/v1/test_mock.py": "names vllm.v1.worker.gpu_model_runner",
    }


def test_selection_by_import_from_the_package(tmp_path):
    # tests/model_executor/test_routed_experts_capture.py imports the runner this way
    root = _tests_tree(
        tmp_path,
        {
            "tests/model_executor/test_routed_experts_capture.py": (
                "import torch\nfrom vllm.v1.worker import gpu_model_runner as gmr\n"
            ),
            "tests/v1/test_plain.py": "from vllm.v1.worker import gpu_input_batch, gpu_model_runner\n",
            "tests/v1/test_paren.py": (
                "from vllm.v1.attention.backends import (\n    utils,\n    gdn_attn as gdn,\n)\n"
            ),
            "tests/v1/test_other.py": "from vllm.v1.worker import gpu_model_runner_v2\nfrom vllm.v1 import worker\n",
            "tests/v1/test_deeper.py": "from vllm.v1.worker.gpu import gpu_model_runner\n",
        },
    )
    chosen = {s.module: s.why for s in ut.select(root, [GDN, RUNNER])}
    assert chosen == {
        "tests/model_executor/test_routed_experts_capture.py": "names vllm.v1.worker.gpu_model_runner",
        "tests/v1/test_plain.py": "names vllm.v1.worker.gpu_model_runner",
        "tests/v1/test_paren.py": "names vllm.v1.attention.backends.gdn_attn",
    }


# -- the archive


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_extract_takes_tests_only(tmp_path):
    archive = _archive(
        tmp_path / "vllm-9.9.9.tar.gz",
        {
            "vllm-9.9.9/tests/__init__.py": b"",
            "vllm-9.9.9/tests/v1/test_a.py": b"def test_a(): pass\n",
            "vllm-9.9.9/vllm/__init__.py": b"raise SystemExit('the sources must not shadow the install')\n",
            "vllm-9.9.9/pyproject.toml": b"",
        },
    )
    out = tmp_path / "work"
    assert ut.extract_tests(archive, out) == out / "tests"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "tests/__init__.py",
        "tests/v1/test_a.py",
    ]


def test_archive_without_tests_or_unreadable_is_one_line_usage_error(tmp_path):
    bare = _archive(tmp_path / "bare.tar.gz", {"vllm-9.9.9/vllm/__init__.py": b""})
    with pytest.raises(UsageError, match=r"^bare.tar.gz: has no tests/ directory$"):
        ut.extract_tests(bare, tmp_path / "w1")
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tarball")
    with pytest.raises(UsageError, match=r"^junk.tar.gz: not a readable source archive") as exc:
        ut.extract_tests(junk, tmp_path / "w2")
    assert "\n" not in str(exc.value)


def test_archive_member_escaping_the_work_directory_is_refused(tmp_path):
    evil = _archive(tmp_path / "evil.tar.gz", {"vllm-9.9.9/tests/../../escape.py": b"x"})
    with pytest.raises(UsageError, match="not a readable source archive"):
        ut.extract_tests(evil, tmp_path / "w")
    assert not (tmp_path / "escape.py").exists()


class _Response:
    def __init__(self, data: bytes):
        self.data = data

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def raise_for_status(self):
        pass

    def iter_content(self, size):
        yield self.data


class _Session:
    def __init__(self, data: bytes):
        self.data = data
        self.gets = 0

    def get(self, url, **kwargs):
        self.gets += 1
        return _Response(self.data)


def test_download_checks_pypi_sha256_and_reuses_a_good_copy(tmp_path):
    data = b"archive bytes"
    good = WheelInfo("vllm-9.9.9.tar.gz", "https://example.invalid/x", ut_sha(data), len(data))
    session = _Session(data)
    dest = tmp_path / "cache" / "vllm-9.9.9.tar.gz"
    assert download(session, good, dest).read_bytes() == data  # type: ignore[arg-type]
    assert download(session, good, dest) == dest  # type: ignore[arg-type]
    assert session.gets == 1
    bad = WheelInfo("vllm-9.9.9.tar.gz", "https://example.invalid/x", "0" * 64, len(data))
    with pytest.raises(FetchError, match=r"sha256 \w{12} differs from PyPI's \(000000000000\)"):
        download(_Session(data), bad, tmp_path / "other.tar.gz")  # type: ignore[arg-type]
    assert not list(tmp_path.glob("other.tar.gz*"))


def ut_sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# -- explanations


def test_explanations_for_one_release(tmp_path):
    path = tmp_path / "upstream-tests.toml"
    path.write_text(
        'schema = 1\n[releases."9.9.9"]\n"tests/t.py::test_a" = "the series changes what it asserts"\n'
        '[releases."1.0.0"]\n"tests/t.py::test_b" = "other release"\n'
    )
    assert ut.load_explanations(path, "9.9.9") == {"tests/t.py::test_a": "the series changes what it asserts"}
    assert ut.load_explanations(path, "2.0.0") == {}
    assert ut.load_explanations(tmp_path / "absent.toml", "9.9.9") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("schema = 1\n[releases\n", r"^upstream-tests.toml: "),
        ("schema = 2\n", r"schema 2 is not 1"),
        ("schema = 1\nextra = 1\n", r"unknown key 'extra'"),
        ('schema = 1\n[releases."9.9.9"]\n"test_a" = "why"\n', r"'test_a' is not a test node id"),
        ('schema = 1\n[releases."9.9.9"]\n"tests/t.py::test_a" = ""\n', r"needs a reason"),
        ('schema = 1\n[releases]\n"9.9.9" = "x"\n', r'\[releases."9.9.9"\] must be a table'),
    ],
)
def test_bad_explanations_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "upstream-tests.toml"
    path.write_text(text)
    with pytest.raises(CatalogueError, match=message) as exc:
        ut.load_explanations(path, "9.9.9")
    assert "\n" not in str(exc.value)


# -- results and the verdict


def test_results_fold_phases_worst_first(tmp_path):
    lines = [
        {"meta": True, "vllm": "/site/vllm/__init__.py", "platform": "CpuPlatform"},
        {"nodeid": "tests/t.py::test_ok", "when": "call", "outcome": "passed", "reason": ""},
        {"nodeid": "tests/t.py::test_teardown", "when": "call", "outcome": "passed", "reason": ""},
        {"nodeid": "tests/t.py::test_teardown", "when": "teardown", "outcome": "error", "reason": "boom"},
        {"nodeid": "tests/t.py::test_skip", "when": "setup", "outcome": "skipped", "reason": "needs CUDA"},
        {"nodeid": "tests/u.py", "when": "collect", "outcome": "error", "reason": "ImportError: x"},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    vllm_from, results = ut.read_results(path)
    assert vllm_from == "/site/vllm/__init__.py"
    assert {t: r.outcome for t, r in results.items()} == {
        "tests/t.py::test_ok": "passed",
        "tests/t.py::test_teardown": "failed",
        "tests/t.py::test_skip": "skipped",
        "tests/u.py": "failed",
    }
    assert results["tests/t.py::test_skip"].reason == "needs CUDA"
    assert ut.counts(results) == {
        "tests/t.py": {"passed": 1, "failed": 1, "skipped": 1},
        "tests/u.py": {"passed": 0, "failed": 1, "skipped": 0},
    }


P, F, S = ut.Result("passed"), ut.Result("failed", "AssertionError: 1 != 2"), ut.Result("skipped", "needs CUDA")


def test_pass_pristine_fail_patched_unexplained_fails_the_run():
    diffs = ut.differences({"tests/t.py::test_a[x]": P}, {"tests/t.py::test_a[x]": F}, {})
    assert diffs == [
        {
            "test": "tests/t.py::test_a[x]",
            "pristine": "passed",
            "patched": "failed",
            "patched_reason": "AssertionError: 1 != 2",
            "regression": True,
            "explained": None,
        }
    ]
    assert ut.verdict(diffs) == "fail"


@pytest.mark.parametrize("key", ["tests/t.py::test_a[x]", "tests/t.py::test_a"])
def test_explained_regression_passes_by_node_id_or_without_parameters(key):
    diffs = ut.differences({"tests/t.py::test_a[x]": P}, {"tests/t.py::test_a[x]": F}, {key: "by design"})
    assert diffs[0]["explained"] == "by design"
    assert ut.verdict(diffs) == "ok"


def test_skipped_or_gone_after_passing_is_a_regression_and_fixes_are_not():
    pristine = {"tests/t.py::a": P, "tests/t.py::b": P, "tests/t.py::c": F, "tests/t.py::d": S}
    patched = {"tests/t.py::b": S, "tests/t.py::c": P, "tests/t.py::d": S}
    diffs = {d["test"]: (d["patched"], d["regression"]) for d in ut.differences(pristine, patched, {})}
    assert diffs == {
        "tests/t.py::a": ("absent", True),
        "tests/t.py::b": ("skipped", True),
        "tests/t.py::c": ("passed", False),
    }
    only_fixes = ut.differences({"tests/t.py::c": F}, {"tests/t.py::c": P}, {})
    assert ut.verdict(only_fixes) == "ok"


def test_report_markdown_lists_modules_differences_and_skip_reasons():
    data = {
        "vllm": "9.9.9",
        "series": "9.9.9",
        "patched_files": [GDN],
        "modules": [
            {
                "module": "tests/t.py",
                "why": "names x",
                "pristine": {"passed": 2, "failed": 0, "skipped": 1},
                "patched": {"passed": 1, "failed": 1, "skipped": 1},
            }
        ],
        "totals": {
            "pristine": {"passed": 2, "failed": 0, "skipped": 1},
            "patched": {"passed": 1, "failed": 1, "skipped": 1},
        },
        "skips": {"pristine": {"tests/t.py::d": "needs CUDA"}, "patched": {"tests/t.py::d": "needs CUDA"}},
        "seconds": {"pristine": 1.0, "patched": 1.0},
        "differences": ut.differences({"tests/t.py::a": P}, {"tests/t.py::a": F}, {"tests/t.py::a": "by design"}),
        "verdict": "ok",
        "machine": {"python": "3.11", "torch": "2.13.0+cpu", "cpus": 2},
        "date": "2026-11-25",
        "command": "python -m vllm_backports.maint upstream-tests 9.9.9",
        "host": "Linux x86_64",
    }
    text = ut.markdown([data])
    assert "| `tests/t.py` | names x | 2/0/1 | 1/1/1 |" in text
    assert "- `tests/t.py::a`: passed pristine, failed patched; explained: by design" in text
    assert "- 1 / 1: needs CUDA" in text


# -- the command's bad input


def test_unknown_release_is_a_one_line_usage_error():
    done = subprocess.run(
        [sys.executable, "-m", "vllm_backports.maint", "upstream-tests", "9.9.9"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "error: vLLM 9.9.9 is not in versions.toml"


def test_release_without_a_series_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(ut, "installed_tree", lambda: pytest.fail("nothing may be looked up"))
    home = tmp_path / "home"
    home.mkdir()
    text = (REPO / "versions.toml").read_text()
    (home / "versions.toml").write_text(
        text + '\n[releases."99.0.0"]\ntorch = "x"\ncuda = 13\nwheel = "w"\nwheel_sha256 = "s"\nrecord_sha256 = "r"\n'
    )
    (home / "backports").symlink_to(REPO / "backports")
    with pytest.raises(UsageError, match=r"^vLLM 99.0.0 has no series: nothing is patched"):
        ut.run("99.0.0", home, tmp_path / "work")


def test_report_counts_per_module_and_names_stale_explanations():
    sides = {
        "pristine": ut.Side("pristine", results={"tests/t.py::a[1]": P, "tests/t.py::b": S}),
        "patched": ut.Side("patched", results={"tests/t.py::a[1]": F, "tests/t.py::b": S}),
    }
    explained = {"tests/t.py::a": "by design", "tests/t.py::gone": "no longer differs"}
    data = ut.report("9.9.9", "9.9.9", [GDN], [ut.Selected("tests/t.py", "names x")], sides, explained, "a.tar.gz")
    assert data["modules"][0]["pristine"] == {"passed": 1, "failed": 0, "skipped": 1}
    assert data["modules"][0]["patched"] == {"passed": 0, "failed": 1, "skipped": 1}
    assert data["skips"]["patched"] == {"tests/t.py::b": "needs CUDA"}
    assert data["failures"]["patched"] == {"tests/t.py::a[1]": "AssertionError: 1 != 2"}
    assert data["verdict"] == "ok"
    assert data["stale_explanations"] == ["tests/t.py::gone"]


# -- on a GPU, from an archive brought along


def test_a_local_archive_is_taken_only_with_its_sha256(tmp_path):
    archive = tmp_path / "vllm-9.9.9.tar.gz"
    archive.write_bytes(b"archive bytes")
    assert ut.local_sdist(archive, ut_sha(b"archive bytes").upper()) == archive
    with pytest.raises(UsageError, match=r"^--sdist .*vllm-9.9.9.tar.gz: sha256 \w{12} differs from the one given"):
        ut.local_sdist(archive, "0" * 64)
    with pytest.raises(UsageError, match=r"^--sdist .*missing.tar.gz: no such file$"):
        ut.local_sdist(tmp_path / "missing.tar.gz", "0" * 64)


def test_an_unknown_device_is_refused_before_anything_is_looked_up(monkeypatch, tmp_path):
    monkeypatch.setattr(ut, "installed_tree", lambda: pytest.fail("nothing may be looked up"))
    with pytest.raises(UsageError, match=r"^device 'rocm' is not one of cpu, cuda$"):
        ut.run("0.20.0", REPO, tmp_path / "work", device="rocm")


@pytest.mark.parametrize(("device", "hidden"), [("cpu", True), ("cuda", False)])
def test_only_the_cpu_side_hides_the_gpu(monkeypatch, tmp_path, device, hidden):
    seen = {}

    def fake_run(cmd, cwd, env, **kw):
        seen.update(env)
        Path(env["VLLM_BACKPORTS_UPSTREAM_RESULTS"]).write_text(json.dumps({"meta": True, "vllm": "/x/vllm"}) + "\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(ut.subprocess, "run", fake_run)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    ut.run_side("pristine", tmp_path, ["tests/t.py"], "", 10, device)
    assert seen["VLLM_BACKPORTS_UPSTREAM_DEVICE"] == device
    assert ("CUDA_VISIBLE_DEVICES" in seen) is hidden


def test_the_conftest_leaves_a_gpu_run_unshimmed():
    """On a GPU the conftest must not set the CPU platform: importing it imports neither vLLM nor
    torch there (on the CPU it does both at import)."""
    code = (
        "import sys, vllm_backports.upstream_conftest as c; "
        "print(c._ON_CPU, 'vllm' in sys.modules, 'torch' in sys.modules)"
    )
    env = {**__import__("os").environ, "VLLM_BACKPORTS_UPSTREAM_DEVICE": "cuda"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False"]


def test_sdist_and_sha256_go_together():
    done = subprocess.run(
        [sys.executable, "-m", "vllm_backports.maint", "upstream-tests", "0.20.0", "--sdist", "x.tar.gz"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --sdist and --sha256 go together: the archive and the hash PyPI gave for it"
    )


def test_gpu_reports_follow_the_cpu_ones_under_their_own_heading():
    cpu = {
        "vllm": "9.9.9",
        "series": "9.9.9",
        "patched_files": [GDN],
        "modules": [],
        "totals": {s: {"passed": 0, "failed": 0, "skipped": 0} for s in ("pristine", "patched")},
        "seconds": {"pristine": 1.0, "patched": 1.0},
        "differences": [],
        "verdict": "ok",
        "machine": {"python": "3.12", "torch": "2.11.0", "cpus": 16},
        "date": "2026-11-30",
        "command": "python -m vllm_backports.maint upstream-tests 9.9.9",
        "host": "Linux x86_64",
    }
    gpu = {**cpu, "device": "cuda", "machine": {**cpu["machine"], "gpu": "NVIDIA H200"}}
    text = ut.markdown([cpu], [gpu])
    assert text.index("## vLLM 9.9.9\n") < text.index("## vLLM 9.9.9 on a GPU (NVIDIA H200)\n")
    assert "No GPU run is recorded yet" not in text
    assert "No GPU run is recorded yet (docs/upstream-tests/gpu/)." in ut.markdown([cpu])


# -- the recorded results


def test_every_series_has_recorded_upstream_results_of_a_release_it_serves():
    """docs/upstream-tests/<release>.json is per release; a series is covered by the results of
    any release it serves, run with that series (the file's `series` says which it was)."""
    from vllm_backports.catalogue import Catalogue

    cat = Catalogue(REPO)
    results = REPO / "docs" / "upstream-tests"
    uncovered = []
    for name in cat.series_names():
        tables = [results / f"{v}.json" for v in cat.series(name).releases]
        if not any(t.is_file() and json.loads(t.read_text())["series"] == name for t in tables):
            uncovered.append(name)
    assert uncovered == []
    assert {p.name for p in (REPO / "backports").iterdir() if p.is_dir()} == set(cat.series_names())


def test_a_table_records_its_series_patches_in_order_with_their_pinned_hashes():
    from vllm_backports.catalogue import Catalogue

    cat = Catalogue(REPO)
    patches = ut.series_patches(cat, "0.26.0")
    order = [line for line in (REPO / "backports/0.26.0/series").read_text().split() if line.endswith(".patch")]
    assert list(patches) == order
    assert all(patches[f] == ut_sha((REPO / "backports/0.26.0" / f).read_bytes()) for f in order)
    assert ut.stale_patches(patches, patches) == []
    assert ut.stale_patches({**patches, "0099-x.patch": "0" * 64}, patches) == ["0099-x.patch"]


def test_a_side_out_of_time_says_how_far_it_got(monkeypatch, tmp_path):
    """The conftest writes a line as each test ends: a side that runs out of time names the last
    test that reported and the modules none of whose tests had (where it hangs, and after)."""
    modules = ["tests/a.py", "tests/b.py", "tests/c.py", "tests/d.py", "tests/e.py", "tests/f.py"]

    def fake_run(cmd, cwd, env, timeout, **kw):
        lines = [{"meta": True, "vllm": "/x/vllm"}] + [{"nodeid": m, "outcome": "passed"} for m in modules]
        lines += [{"nodeid": "tests/a.py::t1", "outcome": "passed"}, {"nodeid": "tests/a.py::t2", "outcome": "failed"}]
        Path(env["VLLM_BACKPORTS_UPSTREAM_RESULTS"]).write_text("".join(json.dumps(x) + "\n" for x in lines))
        raise subprocess.TimeoutExpired(cmd, timeout)

    monkeypatch.setattr(ut.subprocess, "run", fake_run)
    with pytest.raises(ut.RunError) as caught:
        ut.run_side("pristine", tmp_path, modules, "", 10, "cuda")
    assert str(caught.value) == (
        "pristine: pytest ran past 10s: 2 tests had reported, the last tests/a.py::t2; "
        "none yet from tests/b.py, tests/c.py, tests/d.py and 2 more"
    )

    def silent(cmd, cwd, env, timeout, **kw):
        raise subprocess.TimeoutExpired(cmd, timeout)

    monkeypatch.setattr(ut.subprocess, "run", silent)
    with pytest.raises(ut.RunError, match=r"^patched: pytest ran past 10s: no test had reported$"):
        ut.run_side("patched", tmp_path, modules, "", 10, "cuda")
