"""The happy paths of the CLI on a synthetic catalogue: apply, idempotence, status, revert."""

from __future__ import annotations

from cli_runner import run
from conftest import KERNEL, MOD, MOD_FIXED, sha


def test_apply_then_again_changes_nothing(home):
    site = home.tree("0.20.0")
    first = run("--vllm", "0.20.0", "--target", str(site), "--json")
    assert first.code == 0, first.out + first.err
    assert first.json["summary"] == {"applied": 2, "already": 0, "upstream": 0, "failed": 0}
    assert (site / "vllm/mod.py").read_bytes() == MOD_FIXED
    assert (site / "vllm/kernels/new_kernel.py").read_bytes() == KERNEL
    stamp = (site / "vllm/.backports/manifest.json").stat().st_mtime_ns

    second = run("--vllm", "0.20.0", "--target", str(site), "--json")
    assert second.code == 0
    assert second.json["summary"] == {"applied": 0, "already": 2, "upstream": 0, "failed": 0}
    assert second.json["changed_files"] == []
    assert (site / "vllm/.backports/manifest.json").stat().st_mtime_ns == stamp


def test_human_output_ends_with_summary(home):
    site = home.tree("0.20.0")
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    assert result.code == 0
    assert result.out.strip().splitlines()[-1] == "applied=2 already=0 upstream=0 failed=0"


def test_check_writes_nothing(home):
    site = home.tree("0.20.0")
    result = run("check", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert result.code == 0
    assert [b["state"] for b in result.json["backports"]] == ["clean", "clean"]
    assert (site / "vllm/mod.py").read_bytes() == MOD
    assert not (site / "vllm/.backports").exists()


def test_upstream_is_detected_from_the_pristine_file(home):
    site = home.tree("0.21.0")
    result = run("--vllm", "0.21.0", "--target", str(site), "--json")
    assert result.code == 0
    assert result.json["summary"] == {"applied": 0, "already": 0, "upstream": 1, "failed": 0}
    assert (site / "vllm/mod.py").read_bytes() == MOD_FIXED


def test_revert_restores_pristine_bytes_and_removes_new_files(home):
    site = home.tree("0.20.0")
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    result = run("revert", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert result.code == 0, result.out
    assert result.json["summary"]["reverted"] == 2
    assert sha((site / "vllm/mod.py").read_bytes()) == sha(MOD)
    assert not (site / "vllm/kernels").exists()
    assert not (site / "vllm/.backports").exists()


def test_only_and_skip(home):
    site = home.tree("0.20.0")
    result = run("--vllm", "0.20.0", "--target", str(site), "--only", "add-kernel", "--json")
    assert [b["state"] for b in result.json["backports"]] == ["skipped", "applied"]
    assert (site / "vllm/mod.py").read_bytes() == MOD
    result = run("--vllm", "0.20.0", "--target", str(site), "--skip", "add-kernel", "--json")
    assert [b["state"] for b in result.json["backports"]] == ["applied", "skipped"]
    status = run("status", "--target", str(site), "--json")
    assert {a["id"] for a in status.json["applied"]} == {"fix-thing", "add-kernel"}
    assert status.json["consistent"] is True
    result = run("revert", "--target", str(site), "--only", "fix-thing", "--json")
    assert [b["state"] for b in result.json["backports"]] == ["reverted", "skipped"]
    assert (site / "vllm/mod.py").read_bytes() == MOD
    assert (site / "vllm/kernels/new_kernel.py").exists()


def test_status_reports_a_file_changed_after_apply(home):
    site = home.tree("0.20.0")
    run("--vllm", "0.20.0", "--target", str(site))
    (site / "vllm/mod.py").write_bytes(MOD)
    status = run("status", "--target", str(site), "--json")
    assert status.code == 1
    assert {f["path"]: f["state"] for f in status.json["files"]}["vllm/mod.py"] == "pristine"


def test_status_reads_a_manifest_left_on_pristine_files_as_none(home):
    """pip install --force-reinstall vllm puts the files back and leaves vllm/.backports/: status
    said the backports were applied, and the image banner with it; apply starts fresh there."""
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.entrypoint import describe

    site = home.tree("0.20.0")
    assert run("--vllm", "0.20.0", "--target", str(site), "--only", "fix-thing").code == 0
    (site / "vllm/mod.py").write_bytes(MOD)  # reinstalled
    assert (site / "vllm/.backports/manifest.json").is_file()
    status = run("status", "--target", str(site), "--json")
    assert status.code == 0 and status.json["stale_manifest"] is True and status.json["consistent"] is True
    assert status.json["applied"] == [] and status.json["not_applied"] == ["fix-thing", "add-kernel"]
    human = run("status", "--target", str(site))
    assert "the manifest is stale" in human.err and "no backports applied" in human.out
    _, fixing, lines, problems = describe(Catalogue(home.root), site)
    assert lines[0] == "vLLM 0.20.0; backports applied: none" and fixing == ()
    assert problems == ["backports of this release's series not applied: fix-thing, add-kernel"]
    (site / "vllm/mod.py").write_bytes(MOD + b"# mine\n")  # not pristine: the manifest stands
    assert run("status", "--target", str(site), "--json").json["stale_manifest"] is False


def test_status_rebuilds_a_missing_manifest_from_files_the_series_wrote(home):
    site = home.tree("0.20.0")
    assert run("--vllm", "0.20.0", "--target", str(site), "--only", "fix-thing").code == 0
    import shutil

    shutil.rmtree(site / "vllm/.backports")  # a copy that dropped dot-folders
    status = run("status", "--target", str(site), "--json")
    assert status.code == 0 and status.json["rebuilt_manifest"] is True and status.json["consistent"] is True
    assert [a["id"] for a in status.json["applied"]] == ["fix-thing"]
    assert not (site / "vllm/.backports").exists()  # status reads; apply writes it again
    assert run("revert", "--target", str(site)).code == 0 and (site / "vllm/mod.py").read_bytes() == MOD


def test_release_without_backports_says_so(home):
    site = home.tree("0.19.1")
    result = run("--vllm", "0.19.1", "--target", str(site))
    assert result.code == 0
    assert "no backports shipped for this release yet" in result.out
    assert "fix-thing, lost-count" in result.out
    machine = run("--vllm", "0.19.1", "--target", str(site), "--json").json
    assert machine["known_bugs"] == ["fix-thing"] and machine["known"] == ["lost-count"]


def test_removes_stale_bytecode_of_changed_files(home):
    site = home.tree("0.20.0")
    cache = site / "vllm/__pycache__"
    cache.mkdir()
    (cache / "mod.cpython-312.pyc").write_bytes(b"stale")
    (cache / "other.cpython-312.pyc").write_bytes(b"keep")
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    assert not (cache / "mod.cpython-312.pyc").exists()
    assert (cache / "other.cpython-312.pyc").exists()


def test_list_names_every_backport(home):
    result = run("list", "--json")
    assert result.code == 0
    ids = {b["id"]: b for b in result.json["backports"]}
    assert ids["fix-thing"]["releases"] == ["0.20.0"]
    assert ids["fix-thing"]["affected_without_backport"] == ["0.19.1"]
    # a known bug without a backport, on the releases whose code has it
    (known,) = result.json["known"]
    assert known["id"] == "lost-count" and known["releases"] == ["0.19.1"] and known["status"] == "not reproduced"
    assert known["number"] == "#3" and known["title"] == "a count read from a moved row"
    assert known["present"] == "<0.20.0" and known["checked"] == "2026-11-25"
    assert known["fixed_on"] == [] and known["fixed_by"] == []


def test_json_before_the_command_counts_for_list_and_verify(home):
    assert run("--json", "list").json["backports"] == run("list", "--json").json["backports"]
    # verify refuses before it looks for vLLM: the refusal is the JSON object --json promises
    result = run("--json", "verify", "--server", "not a url")
    assert result.code == 2 and result.json["exit_code"] == 2 and "--server" in result.json["error"]


def test_tree_options_before_list_or_verify_are_refused_not_ignored(home, tmp_path):
    target = tmp_path / "site"
    target.mkdir()
    for words in (
        ("--fetch", "list"),
        ("--vllm", "0.20.0", "list"),
        ("--only", "fix-thing", "verify"),
        ("--target", str(target), "--lock-timeout", "1", "verify"),
    ):
        result = run(*words)
        assert result.code == 2, words
        (line,) = result.err.strip().splitlines()
        assert f"{words[-1]} reads no vLLM tree" in line and line.startswith(f"error: {words[0]}"), line
        assert result.out == ""
    result = run("--json", "--skip", "x", "list")
    assert result.json == {
        "error": "--skip: for apply, check, revert and status; list reads no vLLM tree",
        "exit_code": 2,
    }
    assert list(target.iterdir()) == []


def test_list_says_where_a_backport_fixes_a_known_bug_and_where_it_is_left_alone(home, monkeypatch):
    toml = home.root / "versions.toml"
    text = toml.read_text().replace('present = "<0.20.0"', 'present = "<0.21.0"')
    toml.write_text(text.replace('checked = "2026-11-25"\n', 'checked = "2026-11-25"\nfixed_by = ["fix-thing"]\n', 1))
    (known,) = run("list", "--json").json["known"]
    # 0.19.1 ships no series; 0.20.0's ships fix-thing; 0.21.0's code does not have it
    assert known["releases"] == ["0.19.1"] and known["fixed_on"] == ["0.20.0"] and known["fixed_by"] == ["fix-thing"]
    monkeypatch.setenv("COLUMNS", "200")
    assert run("list").out.splitlines()[-2] == (
        "known, fixed by fix-thing: lost-count (vllm#3, not reproduced, checked 2026-11-25) on 0.20.0, "
        "left alone on 0.19.1: a count read from a moved row"
    )
    # present only where the series fixes it: no release is left with it, and the summary says so
    toml.write_text(toml.read_text().replace('present = "<0.21.0"', 'present = ">=0.20.0,<0.21.0"'))
    lines = run("list").out.splitlines()
    assert lines[-2] == (
        "known, fixed by fix-thing: lost-count (vllm#3, not reproduced, checked 2026-11-25) on 0.20.0: "
        "a count read from a moved row"
    )
    assert "known_without_backport=0 " in lines[-1]


def test_list_for_humans_keeps_ids_whole_and_ends_with_a_summary(home, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    result = run("list")
    assert result.code == 0
    lines = result.out.splitlines()
    assert any(" fix-thing " in f" {ln} " for ln in lines) and any(" add-kernel " in f" {ln} " for ln in lines)
    summary = "backports=2 shipped=2 not_yet_backported=1 known_without_backport=1 releases=3 (0.19.1 .. 0.21.0)"
    assert lines[-1] == summary
    assert lines[-2] == (
        "known, no backport: lost-count (vllm#3, not reproduced, checked 2026-11-25) on 0.19.1: "
        "a count read from a moved row"
    )
    assert not any(ln.strip().startswith("lost-count") for ln in lines)  # not a row of the backports' table
    assert "https://" not in result.out  # issue links are shortened to vllm#N


def test_backports_that_go_together_are_selected_together(home):
    toml = home.root / "versions.toml"
    toml.write_text(
        toml.read_text().replace("[backports.add-kernel]\n", '[backports.add-kernel]\ntogether_with = ["fix-thing"]\n')
    )
    site = home.tree("0.20.0")
    for args in (("--only", "add-kernel"), ("--skip", "fix-thing")):
        result = run("--vllm", "0.20.0", "--target", str(site), *args)
        assert result.code == 2 and "add-kernel and fix-thing go together in series s1" in result.err
        assert (site / "vllm/mod.py").read_bytes() == MOD and not (site / "vllm/kernels").exists()
    both = run("--vllm", "0.20.0", "--target", str(site), "--only", "add-kernel", "--only", "fix-thing", "--json")
    assert both.code == 0 and both.json["summary"]["applied"] == 2
    alone = run("revert", "--target", str(site), "--only", "fix-thing")
    assert alone.code == 2 and "go together" in alone.err


def test_status_after_a_revert_reads_as_a_state_not_damage(home):
    site = home.tree("0.20.0")
    run("--vllm", "0.20.0", "--target", str(site))
    run("revert", "--target", str(site))
    human = run("status", "--target", str(site))
    assert human.code == 0 and "missing" not in human.out
    assert "no backports applied" in human.out and "applied=0 not_applied=2 consistent=yes" in human.out
    machine = run("status", "--target", str(site), "--json")
    assert machine.json["not_applied"] == ["fix-thing", "add-kernel"] and machine.json["consistent"] is True


def test_tables_are_not_cut_at_80_columns_when_piped(monkeypatch):
    # CliRunner's stdout is no terminal, as with `| grep` or `> file`
    monkeypatch.delenv("COLUMNS", raising=False)
    out = run("list").out
    rows = [line for line in out.splitlines() if line.split() and line.split()[0] == "turboquant-spec-decode"]
    assert len(rows) == 1 and "0.20.0 .. 0.33.0" in rows[0] and "vllm#40880" in rows[0], out
    assert not any(line.strip().startswith("│") and not line.split("│")[0].strip() for line in out.splitlines())


def test_status_title_is_not_folded_when_piped(home, tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    site = home.tree("0.20.0", dest=tmp_path / ("a-long-folder-name-" * 6) / "site-packages")
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    out = run("status", "--target", str(site)).out
    assert f"vLLM 0.20.0 at {site}" in out.splitlines(), out
