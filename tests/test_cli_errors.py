"""Bad input and refused runs: one clear line (stderr, or a JSON object on stdout with --json),
the documented exit code, and not one byte changed in the target tree (or anywhere else).

Exit codes come from errors.py: UsageError -> 2; CatalogueError, TargetError, PatchError,
StateError, FetchError -> 1.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from cli_runner import Result, run
from conftest import FIX, HEADER, MOD, build_home, record_line, sha
from tree_snapshot import assert_unchanged, snapshot

REPO = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------------
# helpers


def assert_one_line_error(result: Result, code: int, *needles: str, as_json: bool = False) -> str:
    """The run failed with `code` and exactly one error line; return the message."""
    assert result.code == code, (result.code, result.out, result.err)
    if as_json:
        out = result.out.strip()
        assert "\n" not in out, f"--json must print one object on one line: {result.out!r}"
        payload = json.loads(out)
        assert set(payload) == {"error", "exit_code"}, payload
        assert payload["exit_code"] == code
        message = payload["error"]
        assert result.err == "", f"--json must keep stderr quiet: {result.err!r}"
    else:
        assert result.out == "", f"an error must not print a report on stdout: {result.out!r}"
        err_lines = result.err.splitlines()
        errors = [ln for ln in err_lines if ln.startswith("error: ")]
        assert len(errors) == 1, result.err
        assert err_lines[-1] == errors[0], f"the error must be the last line: {result.err!r}"
        assert "Traceback" not in result.err
        message = errors[0][len("error: "):]
    assert message and "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


def refused(root: Path, args: list[str], code: int, *needles: str, allow_added: frozenset[str] = frozenset(),
            snapshot_root: Path | None = None) -> str:
    """Run args as a human and with --json; both refuse the same way and change nothing."""
    top = snapshot_root or root
    before = snapshot(top)
    human = run(*args)
    message = assert_one_line_error(human, code, *needles)
    assert_unchanged(top, before, allow_added)
    machine = run(*args, "--json")
    assert assert_one_line_error(machine, code, *needles, as_json=True) == message
    assert_unchanged(top, before, allow_added)
    return message


def repin(home, series: str, fname: str, data: bytes) -> None:
    """Write a backport file and record its sha256 in versions.toml, as `maint rehash` would."""
    (home.root / "backports" / series / fname).write_bytes(data)
    toml_path = home.root / "versions.toml"
    text = toml_path.read_text()
    section = f'[series."{series}".files]\n'
    start = text.index(section) + len(section)
    end = text.find("\n[", start)
    end = len(text) if end < 0 else end
    body, n = re.subn(
        rf'^"{re.escape(fname)}" = "[0-9a-f]+"$', f'"{fname}" = "{sha(data)}"', text[start:end], flags=re.M
    )
    if n == 0:
        body = body.rstrip("\n") + f'\n"{fname}" = "{sha(data)}"\n'
    toml_path.write_text(text[:start] + body + text[end:])


def with_patch_body(body: str) -> bytes:
    return (HEADER.format(desc="edited") + body).encode()


@pytest.fixture
def site(home):
    return home.tree("0.20.0")


def apply_args(site: Path, *more: str) -> list[str]:
    return ["--vllm", "0.20.0", "--target", str(site), *more]


# --------------------------------------------------------------------------------------------
# the --vllm value


def test_unknown_version(home, site, tmp_path):
    message = refused(tmp_path, ["--vllm", "9.9.9", "--target", str(site)], 2, "9.9.9", "versions.toml")
    assert "0.19.1" in message and "0.21.0" in message  # the known range


def test_near_miss_version_gets_a_hint(home, site, tmp_path):
    refused(tmp_path, ["--vllm", "0.20.1", "--target", str(site)], 2, "did you mean 0.20.0")


@pytest.mark.parametrize("value", ["latest", "0.20.x", "0.20.0!!"])
def test_not_a_version(home, site, tmp_path, value):
    refused(tmp_path, ["--vllm", value, "--target", str(site)], 2, "is not a version")


def test_unpublished_version_on_a_release_tree(home, site, tmp_path):
    message = refused(tmp_path, ["--vllm", "0.19.2", "--target", str(site)], 2, "0.19.2", "never published")
    assert "0.19.1" in message and ("0.20.0" in message or "auto" in message)
    assert "installed here: 0.20.0" in message


def test_installed_version_differs_from_the_request(home, site, tmp_path):
    refused(tmp_path, ["--vllm", "0.21.0", "--target", str(site)], 2,
            "the vLLM here is 0.20.0, not 0.21.0", "--vllm auto")


@pytest.mark.parametrize("command", ["apply", "check", "revert", "status"])
def test_every_command_checks_the_version(home, site, tmp_path, command):
    refused(tmp_path, [command, "--vllm", "0.21.0", "--target", str(site)], 2, "not 0.21.0")


@pytest.mark.parametrize("value", ["[/x]", "0.2[i]0"])
def test_error_text_is_printed_verbatim(home, site, tmp_path, value):
    message = refused(tmp_path, ["--vllm", value, "--target", str(site)], 2, "is not a version")
    assert value in message


# --------------------------------------------------------------------------------------------
# where vLLM is


def test_no_vllm_installed(home, tmp_path, monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    refused(tmp_path, ["--vllm", "0.20.0"], 2, "no vLLM is installed", "--target", "--fetch")


def test_target_without_dist_info(home, tmp_path):
    bare = tmp_path / "bare"
    (bare / "vllm").mkdir(parents=True)
    (bare / "vllm" / "mod.py").write_bytes(MOD)
    refused(tmp_path, ["--vllm", "0.20.0", "--target", str(bare)], 2, "no vllm-*.dist-info", str(bare))


def test_target_that_does_not_exist(home, tmp_path):
    missing = tmp_path / "nowhere"
    refused(tmp_path, ["--vllm", "0.20.0", "--target", str(missing)], 2, str(missing), "not a directory")
    assert not missing.exists()


def test_target_with_two_dist_infos(home, site, tmp_path):
    (site / "vllm-0.19.1.dist-info").mkdir()
    refused(tmp_path, apply_args(site), 1, "several vLLM installs")


# --------------------------------------------------------------------------------------------
# an unwritable target, as an unprivileged user


def _world_readable_tmp():
    base = Path(tempfile.mkdtemp(prefix="vbp-nobody-"))
    os.chmod(base, 0o755)
    return base


def _unprivileged_prefix(probe_dir: Path) -> list[str]:
    """A command prefix that runs as nobody and really cannot write to a root-owned 0755 dir."""
    if os.geteuid() != 0:
        return []  # already unprivileged
    candidates = []
    if shutil.which("setpriv"):
        candidates.append(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    if shutil.which("runuser"):
        candidates.append(["runuser", "-u", "nobody", "--"])
    check = (
        "import os, sys; assert os.geteuid() != 0\n"
        "try:\n    open(os.path.join(sys.argv[1], 'x'), 'w')\nexcept PermissionError:\n    sys.exit(0)\nsys.exit(3)"
    )
    for prefix in candidates:
        try:
            done = subprocess.run(
                [*prefix, sys.executable, "-c", check, str(probe_dir)], capture_output=True, timeout=60
            )
        except OSError:
            continue
        if done.returncode == 0:
            return prefix
    pytest.skip("neither setpriv nor runuser can run this Python as an unprivileged user that is denied writes")


def _dependencies_for(prefix: list[str], base: Path) -> list[str]:
    """sys.path entries that give the unprivileged user this Python's third-party packages.

    This interpreter's site-packages may sit where that user cannot read (a pyenv under /root):
    it then starts without them and could not import click. The packages the command line loads
    are copied to a world-readable folder for it."""
    check = [*prefix, sys.executable, "-c", "import click, rich, requests, packaging"]
    if subprocess.run(check, capture_output=True, timeout=60).returncode == 0:
        return []
    import vllm_backports.cli  # noqa: F401  (loads every package the command line needs)

    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    deps = base / "deps"
    deps.mkdir()
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if "." in name or not where or Path(where).resolve().is_relative_to(REPO):
            continue
        path = Path(where).resolve()
        if path.is_relative_to(stdlib) and "-packages" not in str(path):
            continue
        source = path.parent if path.name == "__init__.py" else path
        if not (deps / source.name).exists():
            (shutil.copytree if source.is_dir() else shutil.copy)(source, deps / source.name)
    for p in [deps, *deps.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    done = subprocess.run(check, env={**os.environ, "PYTHONPATH": str(deps)}, capture_output=True, timeout=60)
    if done.returncode != 0:
        pytest.skip(f"the unprivileged user's Python cannot import the dependencies: {done.stderr[-200:]!r}")
    return [str(deps)]


def test_target_not_writable():
    base = _world_readable_tmp()
    try:
        home = build_home(base / "home")
        site = home.tree("0.20.0")
        for p in [base, *base.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        prefix = _unprivileged_prefix(site / "vllm")
        path = os.pathsep.join([str(REPO), *_dependencies_for(prefix, base)])
        env = {**os.environ, "VLLM_BACKPORTS_HOME": str(home.root), "PYTHONPATH": path,
               "PYTHONDONTWRITEBYTECODE": "1", "VLLM_BACKPORTS_CACHE": str(base / "cache"), "HOME": str(base)}
        before = snapshot(base)
        for extra in ([], ["--json"]):
            done = subprocess.run(
                [*prefix, sys.executable, "apply.py", "--vllm", "0.20.0", "--target", str(site), *extra],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            result = Result(done.returncode, done.stdout, done.stderr)
            assert_one_line_error(result, 1, "not writable", "run as the owner", as_json=bool(extra))
            assert_unchanged(base, before)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# the tree's files


def test_target_file_edited_locally(home, site, tmp_path):
    data = bytearray(MOD)
    data[3] ^= 0x01
    (site / "vllm/mod.py").write_bytes(bytes(data))
    refused(tmp_path, apply_args(site), 1, "vllm/mod.py", "edited locally", "reinstall vllm==0.20.0")


def test_check_reports_a_local_edit_without_writing(home, site, tmp_path):
    (site / "vllm/mod.py").write_bytes(MOD.replace(b"line 3", b"line three"))
    refused(tmp_path, ["check", *apply_args(site)], 1, "edited locally")


def test_target_file_missing(home, site, tmp_path):
    (site / "vllm/mod.py").unlink()
    refused(tmp_path, apply_args(site), 1, "vllm/mod.py", "missing from the vLLM tree")


def test_record_of_another_build(home, site, tmp_path):
    (site / "vllm-0.20.0.dist-info/RECORD").write_text("vllm/mod.py,sha256=AAAA,1\n")
    refused(tmp_path, apply_args(site), 1, "another build")


@pytest.mark.parametrize("damage", ["edited", "missing"])
def test_refused_apply_leaves_no_trace(home, site, tmp_path, damage):
    if damage == "edited":
        (site / "vllm/mod.py").write_bytes(MOD.replace(b"line 3", b"line three"))
    else:
        (site / "vllm/mod.py").unlink()
    refused(tmp_path, apply_args(site), 1)


# --------------------------------------------------------------------------------------------
# the catalogue's backport files


def test_malformed_patch_names_the_file(home, site, tmp_path):
    broken = FIX.replace("@@ -8,5 +8,5 @@", "@@ -8,5 +8,5").encode()
    repin(home, "s1", "0001-fix-thing.patch", broken)
    message = refused(tmp_path, apply_args(site), 1, "0001-fix-thing.patch", "malformed hunk header")
    assert "backports/s1/" in message


def test_patch_with_wrong_line_counts_names_the_file(home, site, tmp_path):
    repin(home, "s1", "0001-fix-thing.patch", FIX.replace("@@ -8,5 +8,5 @@", "@@ -8,6 +8,6 @@").encode())
    refused(tmp_path, apply_args(site), 1, "0001-fix-thing.patch", "truncated")


def test_patch_missing_a_dep3_field(home, site, tmp_path):
    repin(home, "s1", "0002-add-kernel.patch",
          b"".join(ln for ln in (home.root / "backports/s1/0002-add-kernel.patch").read_bytes().splitlines(True)
                   if not ln.startswith(b"Forwarded:")))
    refused(tmp_path, apply_args(site), 1, "0002-add-kernel.patch", "DEP-3 header lacks Forwarded")


def test_patch_with_an_empty_path(home, site, tmp_path):
    repin(home, "s1", "0001-fix-thing.patch", with_patch_body("--- a/\n+++ b/\n@@ -1 +1 @@\n-a\n+b\n"))
    refused(tmp_path, apply_args(site), 1, "0001-fix-thing.patch")


@pytest.mark.parametrize("path, needle", [
    ("../evil.py", "leaves the vllm tree"),
    ("vllm/../../evil.py", "leaves the vllm tree"),
    ("/etc/x", "absolute path"),
    ("tools/x.py", "outside vllm/"),
])
def test_patch_path_outside_the_tree(home, site, tmp_path, path, needle):
    old = "/dev/null"
    new = path if path.startswith("/") else f"b/{path}"
    repin(home, "s1", "0002-add-kernel.patch", with_patch_body(f"--- {old}\n+++ {new}\n@@ -0,0 +1 @@\n+pwned = 1\n"))
    refused(tmp_path, apply_args(site), 1, "0002-add-kernel.patch", needle)
    assert not (tmp_path / "evil.py").exists() and not (site / "evil.py").exists()
    assert not Path("/etc/x").exists()


@pytest.fixture
def symlinked(home, tmp_path):
    """Series s1's first patch edits vllm/sub/x.py, and vllm/sub links to a directory outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    x = b"".join(b"x %d\n" % i for i in range(10))
    (outside / "x.py").write_bytes(x)
    repin(home, "s1", "0001-fix-thing.patch",
          with_patch_body("--- a/vllm/sub/x.py\n+++ b/vllm/sub/x.py\n@@ -1,3 +1,3 @@\n x 0\n-x 1\n+x one\n x 2\n"))
    toml = home.root / "versions.toml"
    toml.write_text(toml.read_text().replace('[releases."0.20.0".files]\n',
                                             f'[releases."0.20.0".files]\n"vllm/sub/x.py" = "{sha(x)}"\n'))
    site = home.tree("0.20.0", files={"vllm/mod.py": MOD, "vllm/sub/x.py": x})
    shutil.rmtree(site / "vllm/sub")
    (site / "vllm/sub").symlink_to(outside, target_is_directory=True)
    return site, outside


def test_patch_path_through_a_symlink(home, symlinked, tmp_path):
    site, outside = symlinked
    refused(tmp_path, apply_args(site), 1, "vllm/sub/x.py", "outside the vllm tree")
    assert (outside / "x.py").read_bytes() == b"".join(b"x %d\n" % i for i in range(10))


def test_symlink_refusal_writes_nothing_outside(home, symlinked, tmp_path):
    site, outside = symlinked
    before = snapshot(outside, mtimes=True)
    assert run(*apply_args(site)).code == 1
    assert_unchanged(outside, before, mtimes=True)


def test_file_symlink_is_refused(home, site, tmp_path):
    real = tmp_path / "real_mod.py"
    real.write_bytes(MOD)
    (site / "vllm/mod.py").unlink()
    (site / "vllm/mod.py").symlink_to(real)
    refused(tmp_path, apply_args(site), 1, "vllm/mod.py", "symlink")
    assert real.read_bytes() == MOD


def test_tampered_backport(home, site, tmp_path):
    path = home.root / "backports/s1/0001-fix-thing.patch"
    data = bytearray(path.read_bytes())
    data[data.index(b"line 10 fixed") + 5] ^= 0x01
    path.write_bytes(bytes(data))
    refused(tmp_path, apply_args(site), 1, "0001-fix-thing.patch", "tampered")


def test_backport_not_recorded_in_versions_toml(home, site, tmp_path):
    (home.root / "backports/s1/0003-sneaky.patch").write_bytes(
        (home.root / "backports/s1/0001-fix-thing.patch").read_bytes()
    )
    refused(tmp_path, apply_args(site), 1, "0003-sneaky.patch", "not recorded in versions.toml")


def test_series_names_an_unrecorded_patch(home, site, tmp_path):
    repin(home, "s1", "series", b"0001-fix-thing.patch\n0002-add-kernel.patch\n0003-ghost.patch\n")
    refused(tmp_path, apply_args(site), 1, "0003-ghost.patch", "not recorded")


# --------------------------------------------------------------------------------------------
# the manifest beside vLLM


@pytest.fixture
def applied(home, site):
    assert run(*apply_args(site)).code == 0
    return site


@pytest.mark.parametrize("command", ["apply", "status", "revert", "check"])
def test_corrupted_manifest(home, applied, tmp_path, command):
    (applied / "vllm/.backports/manifest.json").write_bytes(b"\x00garbage{")
    refused(tmp_path, [command, *apply_args(applied)], 1, "manifest.json", "corrupted manifest")


@pytest.mark.parametrize("command", ["apply", "status", "revert"])
def test_manifest_without_format(home, applied, tmp_path, command):
    (applied / "vllm/.backports/manifest.json").write_text('{"applied": []}')
    refused(tmp_path, [command, *apply_args(applied)], 1, "corrupted manifest")


@pytest.mark.parametrize("command", ["apply", "status", "revert"])
def test_manifest_from_a_newer_tool(home, applied, tmp_path, command):
    path = applied / "vllm/.backports/manifest.json"
    data = json.loads(path.read_text())
    data["format"] = 2
    path.write_text(json.dumps(data))
    refused(tmp_path, [command, *apply_args(applied)], 1, "format 2", "newer", "upgrade vllm-backports")


@pytest.mark.parametrize("command", ["apply", "status", "revert", "check"])
def test_manifest_of_an_unknown_older_format(home, applied, tmp_path, command):
    path = applied / "vllm/.backports/manifest.json"
    data = json.loads(path.read_text())
    data["format"] = 0
    path.write_text(json.dumps(data))
    refused(tmp_path, [command, *apply_args(applied)], 1, "manifest format 0 is unknown", "reads format 1")


def test_manifest_for_another_version(home, applied, tmp_path):
    path = applied / "vllm/.backports/manifest.json"
    data = json.loads(path.read_text())
    data["vllm"] = "0.19.1"
    path.write_text(json.dumps(data))
    refused(tmp_path, ["revert", *apply_args(applied)], 1, "for vLLM 0.19.1", "0.20.0 is installed")


# --------------------------------------------------------------------------------------------
# drift: a release pin whose pristine file the patch does not fit


@pytest.fixture
def drifting(home):
    """0.20.0's pinned mod.py has 'x = a[i]' where the fix expects 'line 10'."""
    drifted = MOD.replace(b"line 10\n", b"x = a[i]\n")
    toml = home.root / "versions.toml"
    toml.write_text(toml.read_text().replace(
        f'[releases."0.20.0".files]\n"vllm/mod.py" = "{sha(MOD)}"',
        f'[releases."0.20.0".files]\n"vllm/mod.py" = "{sha(drifted)}"'))
    return home.tree("0.20.0", files={"vllm/mod.py": drifted})


@pytest.mark.parametrize("command", ["apply", "check"])
def test_drift_is_reported_and_nothing_is_written(home, drifting, tmp_path, command):
    before = snapshot(tmp_path)
    result = run(command, *apply_args(drifting), "--json")
    assert result.code == 1
    states = {b["id"]: b for b in result.json["backports"]}
    assert states["fix-thing"]["state"] == "drift"
    assert states["fix-thing"]["detail"].startswith("vllm/mod.py: hunk #1 at line 8: line 10 is 'x = a[i]'")
    assert result.json["summary"]["drift" if command == "check" else "failed"] == 1
    assert_unchanged(tmp_path, before)


def test_drift_detail_is_shown_verbatim(home, drifting, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    result = run("check", *apply_args(drifting))
    assert result.code == 1
    assert "'x = a[i]'" in result.out


# --------------------------------------------------------------------------------------------
# --only / --skip


@pytest.mark.parametrize("flag", ["--only", "--skip"])
def test_unknown_backport_id_with_hint(home, site, tmp_path, flag):
    refused(tmp_path, [*apply_args(site), flag, "fix-thin"], 2, "'fix-thin'", "did you mean fix-thing?")


def test_unknown_backport_id_lists_the_series(home, site, tmp_path):
    refused(tmp_path, ["revert", *apply_args(site), "--only", "zzz"], 2, "series s1 has: fix-thing, add-kernel")


@pytest.mark.parametrize("flag", ["--only", "--skip"])
@pytest.mark.parametrize("where", ["command", "group"])
def test_status_refuses_a_selection(home, site, tmp_path, flag, where):
    words = ["status", *apply_args(site), flag, "fix-thing"]
    if where == "group":  # given before the command, as the group's shared options allow
        words = [flag, "fix-thing", "status", *apply_args(site)]
    message = refused(tmp_path, words, 2)
    assert message == f"{flag} goes with apply, revert and check, not status"


# s1's second patch rewritten to sit on the first one's output line
STACKED = (HEADER.format(desc="edit line 11, on top of fix-thing") + "--- a/vllm/mod.py\n+++ b/vllm/mod.py\n"
           "@@ -9,3 +9,3 @@\n line 9\n line 10 fixed\n-line 11\n+line 11 edited\n").encode()


@pytest.mark.parametrize("command", ["apply", "check"])
@pytest.mark.parametrize("selection", [("--skip", "fix-thing"), ("--only", "add-kernel")])
def test_leaving_out_a_patch_another_is_written_on(home, site, tmp_path, command, selection):
    repin(home, "s1", "0002-add-kernel.patch", STACKED)
    refused(tmp_path, [command, *apply_args(site), *selection], 2,
            "add-kernel applies only on top of fix-thing in series s1", "select it too, or leave add-kernel out")
    whole = run(*apply_args(site), "--json")
    assert whole.code == 0 and whole.json["summary"]["applied"] == 2
    assert (site / "vllm/mod.py").read_bytes() == MOD.replace(b"line 10\n", b"line 10 fixed\n").replace(
        b"line 11\n", b"line 11 edited\n")


# s1 rewritten so that its first patch moves the lines below it and its second is numbered after it
SHIFTS = (HEADER.format(desc="a line after line 4") + "--- a/vllm/mod.py\n+++ b/vllm/mod.py\n"
          "@@ -3,3 +3,4 @@\n line 3\n line 4\n+line 4b\n line 5\n").encode()
BELOW = (HEADER.format(desc="edit line 15, numbered after the line added above it") + "--- a/vllm/mod.py\n"
         "+++ b/vllm/mod.py\n@@ -15,3 +15,3 @@\n line 14\n-line 15\n+line 15 edited\n line 16\n").encode()


@pytest.mark.parametrize("selection", [("--only", "fix-thing"), ("--skip", "add-kernel")])
def test_reverting_a_patch_another_kept_one_is_numbered_after(home, site, tmp_path, selection):
    """Reverting fix-thing alone would succeed, and leave add-kernel at lines that no longer hold:
    the next revert would drift, with the release's bytes out of reach."""
    repin(home, "s1", "0001-fix-thing.patch", SHIFTS)
    repin(home, "s1", "0002-add-kernel.patch", BELOW)
    assert run(*apply_args(site)).code == 0
    refused(tmp_path, ["revert", *apply_args(site), *selection], 2,
            "add-kernel is written on fix-thing in series s1", "select add-kernel too")
    assert run("revert", *apply_args(site), "--only", "add-kernel").code == 0
    assert run("revert", *apply_args(site)).code == 0 and (site / "vllm/mod.py").read_bytes() == MOD


def test_reverting_a_patch_another_kept_one_is_written_on(home, site, tmp_path):
    repin(home, "s1", "0002-add-kernel.patch", STACKED)
    assert run(*apply_args(site)).code == 0
    refused(tmp_path, ["revert", *apply_args(site), "--only", "fix-thing"], 2,
            "fix-thing cannot be reverted in series s1 while add-kernel stays applied on its lines",
            "select add-kernel too")


ABOVE = (HEADER.format(desc="a line after line 2, above fix-thing's hunk") + "--- a/vllm/mod.py\n"
         "+++ b/vllm/mod.py\n@@ -1,3 +1,4 @@\n line 1\n line 2\n+line 2b\n line 3\n").encode()


def test_a_later_patch_that_moves_an_earlier_ones_lines_applies_again_as_already(home, site):
    """fix-thing's hunk no longer sits at its stated line once add-kernel has added one above it:
    a second run knows it from the manifest, not by reversing it where the lines have moved."""
    repin(home, "s1", "0002-add-kernel.patch", ABOVE)
    assert run(*apply_args(site)).code == 0
    for command in ("apply", "check"):
        again = run(command, *apply_args(site), "--json")
        assert again.code == 0 and again.json["summary"]["already"] == 2, again.out
        assert again.json["changed_files"] == []
    assert run("revert", *apply_args(site)).code == 0 and (site / "vllm/mod.py").read_bytes() == MOD


def test_a_patch_that_fits_neither_way_stays_a_drift(home, site):
    repin(home, "s1", "0002-add-kernel.patch", STACKED.replace(b" line 9\n", b" line nine\n"))
    result = run(*apply_args(site), "--skip", "fix-thing", "--json")
    assert result.code == 1, result.out + result.err
    outcomes = {b["id"]: b["state"] for b in result.json["backports"]}
    assert outcomes == {"fix-thing": "skipped", "add-kernel": "drift"}


def test_a_backport_given_to_both_only_and_skip_is_refused(home, tmp_path):
    site = home.tree("0.20.0")
    for command in ([], ["revert"], ["check"]):
        refused(tmp_path, [*command, "--vllm", "0.20.0", "--target", str(site), "--only", "add-kernel",
                           "--skip", "fix-thing", "--skip", "add-kernel"], 2,
                "--only and --skip both name add-kernel: give each backport to one of them")


def test_skipping_every_backport_says_nothing_was_selected(home):
    site = home.tree("0.20.0")
    done = run("--vllm", "0.20.0", "--target", str(site), "--skip", "add-kernel", "--skip", "fix-thing")
    assert done.code == 0 and "nothing selected: --skip leaves out every backport" in done.out
    assert "already carries" not in done.out and not (site / "vllm/.backports").exists()


# --------------------------------------------------------------------------------------------
# --fetch


@pytest.mark.parametrize("vllm", [["--vllm", "auto"], []])
def test_fetch_needs_a_published_release(home, tmp_path, vllm):
    target = tmp_path / "fetched"
    refused(tmp_path, ["--fetch", *vllm, "--target", str(target)], 2, "--fetch needs --vllm with a published release")
    assert not target.exists()


def test_fetch_of_the_unpublished_release_explains_it(home, tmp_path):
    target = tmp_path / "fetched"
    refused(tmp_path, ["--fetch", "--vllm", "0.19.2", "--target", str(target)], 2, "0.19.2 was never published")
    assert not target.exists()


def test_fetch_with_pypi_unreachable(home, tmp_path, monkeypatch):
    # The autouse _no_network fixture already refuses socket.connect; point the index at a
    # closed port as well (pypi.INDEX is read at import, hence the setattr).
    monkeypatch.setenv("VLLM_BACKPORTS_INDEX", "http://127.0.0.1:9/nothing")
    monkeypatch.setattr("vllm_backports.pypi.INDEX", "http://127.0.0.1:9/nothing")
    empty = tmp_path / "empty"
    empty.mkdir()
    absent = tmp_path / "absent"
    for target in (empty, absent):
        refused(tmp_path, ["--fetch", "--vllm", "0.20.0", "--target", str(target)], 1,
                "cannot read the vLLM index", "127.0.0.1:9")
    assert list(empty.iterdir()) == []
    assert not absent.exists()


def test_fetch_with_pypi_unreachable_in_a_subprocess(home, tmp_path):
    target = tmp_path / "empty"
    target.mkdir()
    env = {**os.environ, "VLLM_BACKPORTS_HOME": str(home.root), "VLLM_BACKPORTS_INDEX": "http://127.0.0.1:9/nothing",
           "VLLM_BACKPORTS_CACHE": str(tmp_path / "cache")}
    before = snapshot(tmp_path)
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "apply.py", "--fetch", "--vllm", "0.20.0", "--target", str(target), *extra],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert_one_line_error(Result(done.returncode, done.stdout, done.stderr), 1, "cannot read the vLLM index",
                              as_json=bool(extra))
        assert_unchanged(tmp_path, before)
    assert list(target.iterdir()) == []


def test_fetch_into_a_directory_holding_another_release(home, tmp_path):
    other = home.tree("0.21.0")
    refused(tmp_path, ["--fetch", "--vllm", "0.20.0", "--target", str(other)], 2, "holds vLLM 0.21.0, not 0.20.0")


def test_fetch_refuses_an_unknown_backport_before_laying_out_any_file(home, tmp_path, monkeypatch):
    # PyPI unreachable as well: the selection must be refused before anything is fetched.
    monkeypatch.setattr("vllm_backports.pypi.INDEX", "http://127.0.0.1:9/nothing")
    target = tmp_path / "fetched"
    refused(tmp_path, ["--fetch", "--vllm", "0.20.0", "--target", str(target), "--only", "bogus"], 2,
            "no backport 'bogus'")
    assert not target.exists()


# --------------------------------------------------------------------------------------------
# Click's own usage errors


@pytest.mark.parametrize("args", [["--bogus"], ["check", "--vllm", "0.20.0", "--target", "{file}"]],
                         ids=["unknown-option", "target-is-a-file"])
def test_click_usage_errors_are_one_json_object_with_json(tmp_path, args):
    a_file = tmp_path / "afile"
    a_file.write_text("")
    args = [a.replace("{file}", str(a_file)) for a in args]
    result = run(*args, "--json")
    assert_one_line_error(result, 2, as_json=True)
    human = run(*args)
    assert human.code == 2 and human.out == "" and "Usage:" not in human.err
    assert_one_line_error(human, 2)


# --------------------------------------------------------------------------------------------
# damaged installs


@pytest.mark.parametrize("name, data", [("RECORD", b"vllm/mod.py,sha256=\xff\xfe,1\n"),
                                        ("METADATA", b"Name: vllm\nVersion: 0.20.0\nSummary: \xff\n")])
def test_undecodable_dist_info_is_one_line(home, site, tmp_path, name, data):
    (site / "vllm-0.20.0.dist-info" / name).write_bytes(data)
    for command in (["status"], ["check"], ["revert"], []):
        refused(tmp_path, [*command, *apply_args(site)], 1, name, "reinstall vllm")


def test_manifest_entry_without_an_id_is_a_corrupted_manifest(home, site, tmp_path):
    assert run(*apply_args(site)).code == 0
    path = site / "vllm/.backports/manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["applied"][0]["id"]
    path.write_text(json.dumps(manifest))
    for command in (["status"], ["revert"], []):
        refused(tmp_path, [*command, *apply_args(site)], 1, "corrupted manifest")


def test_patched_files_without_a_manifest_are_read_as_the_series_not_as_clean(home, site, tmp_path):
    """The manifest deleted (by hand, a backup restore, a copy that drops dot-folders) while the
    files stay patched: revert must not say "nothing to revert", nor refuse what the series wrote
    as a local edit; status must not say the tree is pristine."""
    assert run(*apply_args(site)).code == 0
    (site / "vllm/.backports/manifest.json").unlink()
    status = run("status", *apply_args(site), "--json")
    assert status.code == 0 and status.json["rebuilt_manifest"] is True
    assert [a["id"] for a in status.json["applied"]] == ["fix-thing", "add-kernel"]
    assert {f["path"]: f["state"] for f in status.json["files"]} == {"vllm/mod.py": "patched",
                                                                     "vllm/kernels/new_kernel.py": "patched"}
    done = run("revert", *apply_args(site), "--json")
    assert done.code == 0 and [b["state"] for b in done.json["backports"]] == ["reverted", "reverted"]
    assert (site / "vllm/mod.py").read_bytes() == MOD and not (site / "vllm/kernels").exists()


def test_with_another_builds_record_no_manifest_is_rebuilt(home, site, tmp_path):
    """status read such a tree as the series applied, while apply and revert refuse it."""
    assert run(*apply_args(site)).code == 0
    (site / "vllm/.backports/manifest.json").unlink()
    record = site / "vllm-0.20.0.dist-info" / "RECORD"
    record.write_text(record.read_text().replace(record_line("vllm/mod.py", MOD), record_line("vllm/mod.py", b"x")))
    status = run("status", *apply_args(site), "--json")
    assert status.code == 1 and status.json["rebuilt_manifest"] is False and status.json["applied"] == []
    refused(tmp_path, ["revert", *apply_args(site)], 1, "RECORD does not match PyPI's vLLM 0.20.0")


def test_reverting_under_a_kept_patch_is_refused_with_the_manifest_gone_too(home, site, tmp_path):
    repin(home, "s1", "0002-add-kernel.patch", STACKED)
    assert run(*apply_args(site)).code == 0
    (site / "vllm/.backports/manifest.json").unlink()
    refused(tmp_path, ["revert", *apply_args(site), "--only", "fix-thing"], 2,
            "fix-thing cannot be reverted in series s1 while add-kernel stays applied on its lines")


def test_an_empty_selection_writes_nothing_where_a_manifest_would_be_rebuilt(home, site):
    assert run(*apply_args(site)).code == 0
    (site / "vllm/.backports/manifest.json").unlink()
    before = snapshot(site)
    done = run(*apply_args(site), "--skip", "fix-thing", "--skip", "add-kernel")
    assert done.code == 0 and "nothing selected" in done.out
    assert_unchanged(site, before)


def test_a_file_the_series_does_not_explain_without_a_manifest_is_refused_as_an_edit(home, site, tmp_path):
    assert run(*apply_args(site)).code == 0
    (site / "vllm/.backports/manifest.json").unlink()
    (site / "vllm/mod.py").write_bytes((site / "vllm/mod.py").read_bytes() + b"# mine\n")
    refused(tmp_path, ["revert", *apply_args(site)], 1, "vllm/mod.py", "edited locally", "no vllm-backports manifest")
    status = run("status", *apply_args(site), "--json")
    assert status.code == 1 and status.json["consistent"] is False and status.json["rebuilt_manifest"] is False


def test_status_of_a_pristine_tree_without_a_manifest_is_consistent(home, site):
    status = run("status", *apply_args(site), "--json")
    assert status.code == 0 and status.json["consistent"] is True and status.json["files"] == []


# --------------------------------------------------------------------------------------------
# local builds (vLLM's CUDA variants: 0.20.0+cu129)


@pytest.mark.parametrize("vllm", ["0.20.0", "0.20.0+cu129", "auto"])
def test_a_local_build_gets_its_release_series(home, tmp_path, vllm):
    local = home.tree("0.20.0+cu129", dest=tmp_path / "site-local", files=home.pristine["0.20.0"])
    plain = home.tree("0.20.0", dest=tmp_path / "site-plain")
    done = run("--vllm", vllm, "--target", str(local), "--json")
    reference = run("--vllm", "0.20.0", "--target", str(plain), "--json")
    assert done.code == 0 and reference.code == 0, done.out
    assert done.json["series"] == reference.json["series"] == "s1"
    assert done.json["summary"] == reference.json["summary"]
    assert "local build of 0.20.0" in " ".join(done.json["notes"])
    assert (local / "vllm/mod.py").read_bytes() == (plain / "vllm/mod.py").read_bytes()
    assert run("revert", "--target", str(local)).code == 0
    assert (local / "vllm/mod.py").read_bytes() == MOD


def test_a_local_build_of_another_release_is_refused(home, tmp_path):
    local = home.tree("0.20.0+cu129", dest=tmp_path / "site-local", files=home.pristine["0.20.0"])
    refused(tmp_path, ["--vllm", "0.21.0", "--target", str(local)], 2, "not 0.21.0", "--vllm 0.20.0")


@pytest.mark.parametrize("args", [["--target", "FILE"], ["--bogus"], ["status", "--target", "FILE"], ["nosuchcommand"]])
def test_clicks_own_usage_errors_are_one_line_for_humans_too(tmp_path, args):
    afile = tmp_path / "afile"
    afile.write_text("")
    argv = [str(afile) if a == "FILE" else a for a in args]
    refused(tmp_path, argv, 2)


def _fake_fetch(home, monkeypatch, crash_after: int | None = None):
    """--fetch served from the test home's 0.20.0 files; crash_after: die (as a kill would, with
    no clean-up) after writing that many of the release's files."""
    from pathlib import Path as _Path

    from vllm_backports import materialize
    from vllm_backports.pypi import Fetched

    site = home.root.parent / "pypi-0.20.0"
    if not site.exists():
        home.tree("0.20.0", dest=site)
    info = site / "vllm-0.20.0.dist-info"
    files = {rel: (site / rel).read_bytes() for rel in home.pristine["0.20.0"]}
    monkeypatch.setattr(materialize, "fetch_release", lambda cat, release, progress: Fetched(
        "0.20.0", (info / "RECORD").read_bytes(), (info / "METADATA").read_bytes(), files))
    if crash_after is not None:
        real, written = _Path.write_bytes, []

        def dying(self, data):
            if self.parent.name != "vllm-0.20.0.dist-info":
                written.append(self)
                if len(written) > crash_after:
                    raise SystemExit(137)
            return real(self, data)

        monkeypatch.setattr(_Path, "write_bytes", dying)


@pytest.mark.parametrize("made", [False, True], ids=["absent", "empty-dir"])
def test_a_fetch_killed_while_laying_out_files_leaves_a_target_the_next_fetch_takes(home, tmp_path, monkeypatch, made):
    target = tmp_path / "fetched"
    if made:
        target.mkdir()
    with monkeypatch.context() as patched:
        _fake_fetch(home, patched, crash_after=0)
        assert run("--fetch", "--vllm", "0.20.0", "--target", str(target)).code == 137
    assert (not target.exists()) if not made else list(target.iterdir()) == []
    _fake_fetch(home, monkeypatch)
    again = run("--fetch", "--vllm", "0.20.0", "--target", str(target), "--json")
    assert again.code == 0, again.err
    assert again.json["summary"]["failed"] == 0 and again.json["summary"]["applied"] == 2


@pytest.mark.parametrize("command", ["revert", "status"])
def test_revert_or_status_on_a_fresh_fetched_copy_is_refused(home, tmp_path, command):
    refused(tmp_path, [command, "--vllm", "0.20.0", "--fetch"], 2, f"{command} --fetch needs --target DIR")


@pytest.mark.parametrize("command", ["revert", "status"])
def test_revert_or_status_with_fetch_read_the_copy_at_target_and_lay_out_none(home, tmp_path, command):
    empty = tmp_path / "empty"
    for target in (tmp_path / "none", empty):
        if target == empty:
            empty.mkdir()
        refused(tmp_path, [command, "--vllm", "0.20.0", "--fetch", "--target", str(target)], 2,
                f"{command} --fetch reads the copy `apply --fetch --target {target}` laid out")
    assert not (tmp_path / "none").exists() and list(empty.iterdir()) == []
    site = home.tree("0.20.0")  # as apply --fetch --target laid it out
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    done = run(command, "--fetch", "--target", str(site), "--json")  # --vllm auto: the copy says which
    assert done.code == 0, done.err
    assert done.json["vllm"] == "0.20.0"


def test_revert_without_a_vllm_does_not_advise_fetch(home, tmp_path, monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    for command in ("revert", "status"):
        message = refused(tmp_path, [command], 2, "no vLLM is installed", "--target DIR holding a vLLM")
        assert "--fetch" not in message


# --------------------------------------------------------------------------------------------
# a Python without the dependencies


@pytest.mark.parametrize("entry", [["apply.py"], ["-m", "vllm_backports"]])
def test_missing_dependencies_say_what_to_install(tmp_path, entry):
    # -S: no site-packages, so click, rich, requests and packaging cannot be imported
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONSTARTUP")}
    env.update(PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    probe = subprocess.run([sys.executable, "-S", "-c", "import click"], env=env, capture_output=True)
    if probe.returncode == 0:
        pytest.skip("click is importable without site-packages here")
    done = subprocess.run(
        [sys.executable, "-S", *entry, "--vllm", "0.20.0"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "needs click, rich, requests and packaging" in lines[0]
    assert "pip install" in lines[0]


# --------------------------------------------------------------------------------------------
# the --vllm value, as typed


def test_unpublished_version_explained_before_a_missing_vllm(home, tmp_path):
    # no vLLM in this Python, no --target: why 0.19.2 cannot be asked for comes first
    message = refused(tmp_path, ["--vllm", "0.19.2"], 2, "0.19.2 was never published")
    assert message.startswith("vLLM 0.19.2 was never published"), message
    message = refused(tmp_path, ["--vllm", "0.19.2", "--target", str(tmp_path / "nowhere")], 2, "never published")
    assert message.startswith("vLLM 0.19.2 was never published"), message


@pytest.mark.parametrize("value", ["0.20.0\n", "0.20.0\nerror: fake", "0.2\r0", "9.9.9\x1b[31m"])
def test_control_characters_in_the_version_stay_on_one_line(home, site, tmp_path, value):
    message = refused(tmp_path, ["--vllm", value, "--target", str(site)], 2)
    assert not any(ord(c) < 32 or ord(c) == 127 for c in message), repr(message)


def test_control_characters_in_a_path_stay_on_one_line(home, tmp_path):
    message = refused(tmp_path, ["--vllm", "0.20.0", "--target", str(tmp_path / "a\nerror: b")], 2)
    assert "a\\nerror: b" in message, message


@pytest.mark.parametrize("value", ["0.16.0", "1.0", "0.2", "0.3.0"])
def test_no_far_fetched_suggestion(home, site, tmp_path, value):
    message = refused(tmp_path, ["--vllm", value, "--target", str(site)], 2, "supported: 0.19.1 .. 0.21.0")
    assert "did you mean" not in message, message
