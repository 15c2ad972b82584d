"""A release's own tests that exercise the files its series patches, run pristine and patched
(the work itself is in vllm_backports/upstream_tests.py)."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console

from .. import upstream_tests as ut
from ..errors import UsageError


@click.command("upstream-tests")
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON report here.")
@click.option("--timeout", default=1800, show_default=True, help="Seconds each side's pytest may run.")
@click.option("--keep", is_flag=True, help="Keep the work directory (tests, patched copy, raw results).")
@click.option(
    "--device",
    type=click.Choice(ut.DEVICES),
    default="cpu",
    show_default=True,
    help="cpu: with the CPU shims, no GPU seen; cuda: on the GPU, as upstream runs them.",
)
@click.option(
    "--sdist",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The release's source archive as a local file (offline machines); needs --sha256.",
)
@click.option("--sha256", help="The sha256 of --sdist, as a fetch from PyPI checked it.")
@click.pass_obj
def upstream_tests(
    home: Path,
    version: str,
    as_json: bool,
    out: Path | None,
    timeout: int,
    keep: bool,
    device: str,
    sdist: Path | None,
    sha256: str | None,
) -> None:
    """Run VERSION's own tests that exercise the files its series patches (from its PyPI source
    archive) against the installed release, pristine and patched, on the CPU or a GPU. Exit 1 when
    a test passes pristine and not patched without an explanation in
    docs/upstream-tests/explained.toml."""
    if (sdist is None) != (sha256 is None):
        raise UsageError("--sdist and --sha256 go together: the archive and the hash PyPI gave for it")
    local = (sdist, sha256) if sdist is not None and sha256 is not None else None
    work = Path(tempfile.mkdtemp(prefix=f"vllm-upstream-tests-{version}-"))
    try:
        data = ut.run(version, home, work, timeout=timeout, device=device, sdist=local)
    finally:
        if keep:
            click.echo(f"work directory kept: {work}", err=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    data["command"] = f"python -m vllm_backports.maint upstream-tests {version}" + (
        " --device cuda" if device == "cuda" else ""
    )
    data["host"] = f"{platform.system()} {platform.machine()}"
    if device == "cuda":
        data["machine"]["gpu"] = _gpu_name()
    data["date"] = datetime.now(UTC).date().isoformat()
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        console = Console(highlight=False, soft_wrap=True)
        console.print(ut.table(data))
        for line in ut.summary_lines(data):
            console.print(line, markup=False)
    if data["verdict"] != "ok":
        sys.exit(1)


def _gpu_name() -> str:
    """The first GPU's name, as nvidia-smi reports it ("" where it cannot be asked)."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""


COMMANDS = (upstream_tests,)
