"""A release's own tests that exercise the files its series patches, run pristine and patched
(the work itself is in vllm_backports/upstream_tests.py)."""

from __future__ import annotations

import json
import platform
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console

from .. import upstream_tests as ut


@click.command("upstream-tests")
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON report here.")
@click.option("--timeout", default=1800, show_default=True, help="Seconds each side's pytest may run.")
@click.option("--keep", is_flag=True, help="Keep the work directory (tests, patched copy, raw results).")
@click.pass_obj
def upstream_tests(home: Path, version: str, as_json: bool, out: Path | None, timeout: int, keep: bool) -> None:
    """Run VERSION's own tests that exercise the files its series patches (from its PyPI source
    archive) against the installed release, pristine and patched, on the CPU. Exit 1 when a test
    passes pristine and not patched without an explanation in docs/upstream-tests/explained.toml."""
    work = Path(tempfile.mkdtemp(prefix=f"vllm-upstream-tests-{version}-"))
    try:
        data = ut.run(version, home, work, timeout=timeout)
    finally:
        if keep:
            click.echo(f"work directory kept: {work}", err=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    data["command"] = f"python -m vllm_backports.maint upstream-tests {version}"
    data["host"] = f"{platform.system()} {platform.machine()}"
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


COMMANDS = (upstream_tests,)
