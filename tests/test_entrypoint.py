"""The images' entrypoint: the flags read as vLLM reads them, the known bugs they meet, the guard
before vLLM starts, and the supervision of a fake `vllm` whose engine dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cli_runner import run
from conftest import MOD
from vllm_backports import entrypoint
from vllm_backports.catalogue import Catalogue
from vllm_backports.entrypoint import guard, parse_flags

REPO = Path(__file__).resolve().parent.parent
# Known bugs of the synthetic catalogue (conftest.build_home), each with a `when`.
KNOWN = textwrap.dedent("""\
    [known.mtp-prefix]
    title = "MTP with prefix caching reads stale K/V"
    bug = "https://github.com/vllm-project/vllm/issues/10"
    present = ">=0.20.0"
    status = "not yet run"
    evidence = "code read"
    checked = "2026-11-29"
    when = { speculative = ["mtp"], prefix_caching = true }
    workaround = "--no-enable-prefix-caching"

    [known.old-mtp]
    title = "MTP on old releases"
    bug = "https://github.com/vllm-project/vllm/issues/11"
    present = "<0.20.0"
    status = "reproduced"
    evidence = "a run"
    checked = "2026-11-29"
    when = { speculative = ["mtp"] }

    [known.kernel-mtp]
    title = "MTP in the kernel add-kernel brings"
    bug = "https://github.com/vllm-project/vllm/issues/12"
    present = ">=0.20.0"
    status = "reproduced"
    evidence = "a run"
    checked = "2026-11-29"
    when = { speculative = ["mtp"] }
    fixed_by = ["add-kernel"]
    """)
MTP = ["m", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}']


@pytest.fixture
def site(home, monkeypatch):
    """vLLM 0.20.0 with its series (fix-thing, add-kernel) applied, and the bugs above known."""
    toml = home.root / "versions.toml"
    toml.write_text(toml.read_text() + "\n" + KNOWN)
    monkeypatch.setenv("VLLM_BACKPORTS_HOME", str(home.root))
    tree = home.tree("0.20.0")
    assert run("--vllm", "0.20.0", "--target", str(tree)).code == 0
    return tree


# -- the flags


@pytest.mark.parametrize(
    "argv",
    [
        MTP,
        ["m", "--speculative_config", '{"method": "qwen3_next_mtp"}'],
        ["m", '--speculative-config={"method": "mtp"}'],
        ["m", "--speculative-config.method", "mtp", "--speculative-config.num_speculative_tokens=2"],
        ["m", "--speculative_config.method=deepseek_mtp"],
        ["m", "-sc", '{"method": "mtp"}'],
        ["m", "--spec-method", "mtp"],
    ],
)
def test_every_spelling_of_an_mtp_speculative_config_reads_as_mtp(argv):
    assert parse_flags(argv, "0.22.0").speculative == "mtp"


def test_flags_a_release_lacks_are_not_read_as_its_parser_would_refuse_them():
    assert parse_flags(["m", "-sc", '{"method": "mtp"}'], "0.18.0").speculative is None
    assert parse_flags(["m", "--spec-method", "mtp"], "0.21.0").speculative is None
    assert parse_flags(["m", "-sc", '{"method": "mtp"}'], "0.19.0").speculative == "mtp"


def test_the_last_of_repeated_flags_wins_and_values_take_both_forms():
    flags = parse_flags(
        ["m", "--enable-prefix-caching", "--no-enable-prefix-caching", "-tp=2", "--kv_cache_dtype", "fp8"], "0.20.0"
    )
    assert not flags.prefix_caching and flags.tensor_parallel_size == 2 and flags.kv_cache_dtype == "fp8"
    assert parse_flags(["m", "--tensor-parallel-size", "4"], "0.20.0").tensor_parallel_size == 4


def test_defaults_are_each_release_s():
    # prefix caching: on, but opt-in for hybrids in 0.26.0 .. 0.27.1
    assert parse_flags(["m"], "0.25.1").prefix_caching and parse_flags(["m"], "0.28.0").prefix_caching
    assert not parse_flags(["m"], "0.26.0").prefix_caching and not parse_flags(["m"], "0.27.1").prefix_caching
    # async scheduling: on, but off by default for ngram before 0.33.0
    assert parse_flags(MTP, "0.20.0").async_scheduling and not parse_flags(MTP + ["--no-async-scheduling"], "0.20.0").async_scheduling
    ngram = ["m", "--speculative-config", '{"method": "ngram"}']
    assert not parse_flags(ngram, "0.32.0").async_scheduling and parse_flags(ngram, "0.33.0").async_scheduling
    # ngram's prompt_lookup_min: 5 unless set (or taken from prompt_lookup_max)
    assert parse_flags(ngram, "0.20.0").prompt_lookup_min == 5
    assert parse_flags(["m", "--speculative-config.method=ngram", "--speculative-config.prompt_lookup_max=8"], "0.20.0").prompt_lookup_min == 8


def test_tool_calls_are_either_tool_flag():
    assert parse_flags(["m", "--enable-auto-tool-choice"], "0.20.0").tool_calls
    assert parse_flags(["m", "--tool-call-parser=hermes"], "0.20.0").tool_calls
    assert not parse_flags(["m"], "0.20.0").tool_calls


def test_the_catalogue_s_conditions_meet_the_flags_they_name():
    cat = Catalogue(REPO)
    tools = ["m", "--speculative-config", '{"method": "ngram"}', "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_xml"]

    def hit(version, flags):
        backports = cat.releases[version].backports
        return {k.id for k in entrypoint.applying(cat, version, backports, parse_flags(flags, version))}

    # 0.20.0's series fixes what of #56077 reproduced (gdn-spec-state); 0.33.0's ships no such fix
    assert "align-allocate-shrink" in hit("0.20.0", tools) and "ngram-tool-calls" not in hit("0.20.0", tools)
    assert "ngram-tool-calls" in hit("0.33.0", tools)
    fixed = tools[:2] + ['{"method": "ngram", "prompt_lookup_min": 8}'] + tools[3:] + ["--no-enable-prefix-caching"]
    assert not hit("0.20.0", fixed) & {"ngram-tool-calls", "align-allocate-shrink"}
    assert "ngram-tool-calls" not in hit("0.33.0", fixed)


# -- the guard


def test_a_matching_bug_is_warned_with_its_workaround(site):
    lines, problems = guard(Catalogue(Path(os.environ["VLLM_BACKPORTS_HOME"])), MTP, target=site)
    assert lines[0] == "vLLM 0.20.0; backports applied: fix-thing, add-kernel"
    assert problems == [
        "known bug #10 (mtp-prefix, not yet run) applies to these flags: MTP with prefix caching reads stale K/V; "
        "workaround: --no-enable-prefix-caching"
    ]


def test_flags_that_match_no_bug_are_silent(site):
    cat = Catalogue(Path(os.environ["VLLM_BACKPORTS_HOME"]))
    assert guard(cat, MTP + ["--no-enable-prefix-caching"], target=site)[1] == []
    assert guard(cat, ["m"], target=site)[1] == []


def test_a_release_outside_present_is_silent(home, site):
    # old-mtp is present before 0.20.0 only: the same flags warn of it on 0.19.1 (no series), not here
    flags = MTP + ["--no-enable-prefix-caching"]
    assert guard(Catalogue(home.root), flags, target=site)[1] == []
    lines, problems = guard(Catalogue(home.root), flags, target=home.tree("0.19.1"))
    assert lines[0] == "vLLM 0.19.1; backports applied: none"
    assert [p.split(" applies")[0] for p in problems] == ["known bug #11 (old-mtp, reproduced)"]


def test_a_bug_the_shipped_series_fixes_is_silent(site):
    problems = guard(Catalogue(Path(os.environ["VLLM_BACKPORTS_HOME"])), MTP, target=site)[1]
    assert not any("kernel-mtp" in p for p in problems)


def test_a_local_build_is_judged_by_the_backports_its_files_carry(home, site):
    # 0.20.0+cu129 (vLLM's CUDA 12.9 wheel) has no entry of its own in versions.toml: the series
    # applied to it still fixes kernel-mtp, so only mtp-prefix is warned of
    cu129 = home.tree("0.20.0+cu129", files=home.pristine["0.20.0"])
    assert run("--target", str(cu129)).code == 0
    lines, problems = guard(Catalogue(home.root), MTP, target=cu129)
    assert lines[0] == "vLLM 0.20.0+cu129; backports applied: fix-thing, add-kernel"
    assert [p.split(" applies")[0] for p in problems] == ["known bug #10 (mtp-prefix, not yet run)"]


def test_a_reinstalled_vllm_is_not_read_as_patched(home, site):
    # `pip install --force-reinstall vllm` in a derived image puts back the files RECORD lists and
    # leaves the manifest, and the file add-kernel created, behind: the bugs the series fixed are
    # back, and STRICT must see them
    for rel, data in home.pristine["0.20.0"].items():
        (site / rel).write_bytes(data)
    lines, problems = guard(Catalogue(home.root), MTP, target=site)
    assert problems[0] == "vllm/mod.py is pristine, not as the manifest records it"
    assert [p.split(" applies")[0] for p in problems[1:]] == [
        "known bug #10 (mtp-prefix, not yet run)",
        "known bug #12 (kernel-mtp, reproduced)",
    ]
    # with the created file gone too, the manifest is stale: read as none
    (site / "vllm/kernels/new_kernel.py").unlink()
    lines, problems = guard(Catalogue(home.root), MTP, target=site)
    assert lines[0] == "vLLM 0.20.0; backports applied: none"
    assert problems[0] == "backports of this release's series not applied: fix-thing, add-kernel"
    assert [p.split(" applies")[0] for p in problems[1:]] == [
        "known bug #10 (mtp-prefix, not yet run)",
        "known bug #12 (kernel-mtp, reproduced)",
    ]


def test_part_of_the_series_applied_is_a_problem_and_in_a_crash_report(home, monkeypatch, tmp_path, capsys):
    tree = home.tree("0.20.0")
    assert run("--target", str(tree), "--only", "fix-thing").code == 0
    problems = guard(Catalogue(home.root), ["m"], target=tree)[1]
    assert problems == ["backports of this release's series not applied: add-kernel"]
    # a crash report names what is missing, with the guard on or off
    monkeypatch.setenv("VLLM_BACKPORTS_HOME", str(home.root))
    monkeypatch.setattr(entrypoint, "supervise", lambda cmd: entrypoint.Outcome(3, False, False, ["boom"]))
    for guard_on, reports in (("1", tmp_path / "on"), ("0", tmp_path / "off")):
        monkeypatch.setenv("VLLM_BACKPORTS_GUARD", guard_on)
        monkeypatch.setenv("VLLM_BACKPORTS_REPORT_DIR", str(reports))
        assert entrypoint.main(["m"], target=tree) == 3
        (report,) = reports.iterdir()
        assert "backports of this release's series not applied: add-kernel" in report.read_text(), guard_on


def test_a_patch_the_release_has_upstream_is_not_missing(home):
    # 0.21.0's series still carries fix-thing, which 0.21.0 has upstream: apply finds it in place
    tree = home.tree("0.21.0")
    assert run("--target", str(tree)).code == 0
    assert guard(Catalogue(home.root), ["m"], target=tree)[1] == []


def test_files_modified_after_apply_are_reported(site):
    (site / "vllm/mod.py").write_bytes(MOD + b"# edited\n")
    problems = guard(Catalogue(Path(os.environ["VLLM_BACKPORTS_HOME"])), ["m"], target=site)[1]
    assert problems == ["vllm/mod.py is modified, not as the manifest records it"]


def test_strict_mode_refuses_to_start_one_line_a_bug(site, monkeypatch, capsys):
    monkeypatch.setattr(entrypoint, "supervise", lambda cmd: pytest.fail(f"started {cmd}"))
    monkeypatch.setenv("VLLM_BACKPORTS_STRICT", "1")
    assert entrypoint.main(MTP, target=site) == 2
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "known bug" in line] == [
        "vllm-backports: known bug #10 (mtp-prefix, not yet run) applies to these flags: MTP with prefix caching "
        "reads stale K/V; workaround: --no-enable-prefix-caching"
    ]
    assert err[-1] == "vllm-backports: VLLM_BACKPORTS_STRICT is set: not starting vLLM"


def test_without_strict_a_warning_starts_vllm_and_guard_0_skips_the_guard(site, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(entrypoint, "supervise", lambda cmd: started.append(cmd) or entrypoint.Outcome(0, False, False, []))
    assert entrypoint.main(MTP, target=site) == 0
    assert "known bug #10" in capsys.readouterr().err
    monkeypatch.setenv("VLLM_BACKPORTS_GUARD", "0")
    monkeypatch.setenv("VLLM_BACKPORTS_STRICT", "1")
    assert entrypoint.main(MTP, target=site) == 0
    assert capsys.readouterr().err == ""
    assert started == [["vllm", "serve", *MTP]] * 2


# -- the supervision, of a fake `vllm` that starts an engine process

FAKE_VLLM = textwrap.dedent("""\
    #!{python}
    import os, signal, subprocess, sys, time
    assert sys.argv[1] == "serve", sys.argv
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    def stop(signum, frame):
        engine.kill()
        engine.wait()
        print(f"stopped by signal {{signum}}", flush=True)
        sys.exit(7)

    signal.signal(signal.SIGTERM, stop)
    if os.environ["FAKE_MODE"] == "long-line":  # 8 MiB without a newline, then the engine dies
        for _ in range(128):
            sys.stderr.write("\\r" + "x" * 65535)
        sys.stderr.flush()
        engine.kill()
        print("\\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", file=sys.stderr,
              flush=True)
        sys.exit(0)
    if os.environ["FAKE_MODE"] == "split-marker":  # the death line across two 64 KiB pieces, then exit 0
        engine.kill()
        sys.stderr.write("x" * (65536 - 10) + "EngineCore encountered an issue. See stack trace\\n")
        sys.stderr.flush()
        sys.exit(0)
    if os.environ["FAKE_MODE"] == "flood":
        engine.kill()
        for i in range(100000):
            print(f"INFO line {{i}}")
        sys.exit(0)
    print("INFO serving", flush=True)
    with open(os.environ["FAKE_PIDS"] + ".tmp", "w") as f:
        f.write(f"{{os.getpid()}} {{engine.pid}}")
    os.rename(os.environ["FAKE_PIDS"] + ".tmp", os.environ["FAKE_PIDS"])
    if os.environ["FAKE_MODE"] == "clean":
        engine.kill()
        engine.wait()
        sys.exit(0)
    if os.environ["FAKE_MODE"] == "sigterm":
        time.sleep(120)  # until stop() (a wait here would hold the lock stop's wait needs)
        sys.exit(1)
    engine.wait()  # the test kills it
    # vLLM #53726: the API server logs EngineDeadError's message and exits 0
    print("ERROR [async_llm.py] AsyncLLM output_handler failed.", file=sys.stderr, flush=True)
    print("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
          "for the root cause.", file=sys.stderr, flush=True)
    print("INFO Shutting down", flush=True)
    sys.exit(0)
    """)


def _launch(site: Path, tmp_path: Path, mode: str, hook: str = "") -> subprocess.Popen:
    """The entrypoint in a process of its own, `hook` run first, with the fake `vllm` on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "vllm"
    fake.write_text(FAKE_VLLM.format(python=sys.executable))
    fake.chmod(0o755)
    pids = tmp_path / "pids"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "FAKE_PIDS": str(pids),
        "FAKE_MODE": mode,
        "VLLM_BACKPORTS_REPORT_DIR": str(tmp_path / "reports"),
    }
    code = hook + "import sys; from pathlib import Path; from vllm_backports.entrypoint import main; "
    code += f"sys.exit(main(sys.argv[1:], target=Path({str(site)!r})))"
    return subprocess.Popen([sys.executable, "-c", code, "m", "--port", "8000"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _start(site: Path, tmp_path: Path, mode: str) -> tuple[subprocess.Popen, list[int]]:
    pids = tmp_path / "pids"
    proc = _launch(site, tmp_path, mode)
    deadline = time.monotonic() + 60
    while not pids.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return proc, [int(p) for p in pids.read_text().split()]


def test_an_engine_that_dies_under_a_server_exiting_0_makes_the_container_fail_with_a_report(site, tmp_path):
    proc, (_server, engine) = _start(site, tmp_path, "engine")
    os.kill(engine, signal.SIGKILL)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1, err
    assert "INFO serving" in out and "INFO Shutting down" in out  # its output passed through
    reports = list((tmp_path / "reports").iterdir())
    assert len(reports) == 1 and f"report written to {reports[0]}" in err
    text = reports[0].read_text()
    assert text.startswith("vllm-backports: vLLM exited 0 after its engine died\n")
    assert "vLLM 0.20.0; backports applied: fix-thing, add-kernel" in text
    # stdout and stderr are read by a thread each: their lines interleave in the order they came
    assert "EngineDeadError: EngineCore encountered an issue" in text and "INFO Shutting down" in text
    assert text.strip() in err  # on stderr too


def test_sigterm_reaches_vllm_and_its_exit_code_comes_back(site, tmp_path):
    proc, (server, engine) = _start(site, tmp_path, "sigterm")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7, err
    assert "stopped by signal 15" in out
    assert not (tmp_path / "reports").exists()  # a stop asked for is no crash


def test_a_clean_exit_is_0_and_writes_no_report(site, tmp_path):
    proc, _ = _start(site, tmp_path, "clean")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "INFO serving" in out and not (tmp_path / "reports").exists()


# -- what must not keep vLLM from starting, or leave the container without a clear exit


def test_a_guard_that_fails_warns_and_starts_vllm_and_strict_refuses(site, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(entrypoint, "supervise", lambda cmd: started.append(cmd) or entrypoint.Outcome(0, False, False, []))
    argv = ["m", "--speculative-config.a=1", "--speculative-config.a.b=2"]  # vLLM's to refuse, not the guard's
    assert entrypoint.main(argv, target=site) == 0
    assert started == [["vllm", "serve", *argv]]
    assert "vllm-backports: the guard failed (TypeError" in capsys.readouterr().err
    monkeypatch.setenv("VLLM_BACKPORTS_STRICT", "1")
    assert entrypoint.main(argv, target=site) == 2
    assert len(started) == 1


def test_an_unreadable_install_after_a_crash_still_writes_the_report(site, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("VLLM_BACKPORTS_GUARD", "0")
    monkeypatch.setenv("VLLM_BACKPORTS_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setattr(entrypoint, "supervise", lambda cmd: entrypoint.Outcome(3, False, False, ["boom"]))
    monkeypatch.setattr(entrypoint, "describe", lambda cat, target: {}["no"])
    assert entrypoint.main(["m"], target=site) == 3
    assert "cannot read what this vLLM carries: KeyError" in capsys.readouterr().err
    assert len(list((tmp_path / "reports").iterdir())) == 1


def test_no_vllm_on_path_is_one_line_and_127(site, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("VLLM_BACKPORTS_GUARD", "0")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert entrypoint.main(["m"], target=site) == 127
    assert capsys.readouterr().err == "vllm-backports: cannot run vllm: no such command on PATH\n"


def test_a_sigterm_as_vllm_starts_reaches_it(site, tmp_path):
    # the signal lands as Popen returns, before supervise could have set its handlers afterwards
    hook = (
        "import os, signal, subprocess; real = subprocess.Popen\n"
        "class P(real):\n"
        "    def __init__(self, *a, **k):\n"
        "        super().__init__(*a, **k); os.kill(os.getpid(), signal.SIGTERM)\n"
        "subprocess.Popen = P\n"
    )
    proc = _launch(site, tmp_path, "sigterm", hook)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode in (7, 143), err  # vLLM's own stop, or the signal before it set one
    assert not (tmp_path / "reports").exists()


def test_a_closed_stdout_does_not_hang_vllm(site, tmp_path):
    proc = _launch(site, tmp_path, "flood")
    proc.stdout.close()  # `docker run ... | head`, a log shipper gone
    proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()


def test_a_line_without_end_passes_through_whole_and_the_report_keeps_its_start(site, tmp_path):
    proc = _launch(site, tmp_path, "long-line")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err[-2000:]
    # byte for byte, though read in pieces (the test reads text, where a carriage return is a newline)
    assert ("\n" + "x" * 65535) * 128 + "\n" in err
    text = next((tmp_path / "reports").iterdir()).read_text()
    assert "EngineDeadError: EngineCore encountered an issue" in text
    assert max(len(line) for line in text.splitlines()) <= entrypoint.REPORT_LINE + len(" [...]")


def test_a_death_line_read_in_two_pieces_is_still_seen(site, tmp_path):
    proc = _launch(site, tmp_path, "split-marker")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err[-2000:]
    assert "vllm-backports: vLLM exited 0 after its engine died" in err
