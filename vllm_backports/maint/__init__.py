"""Maintainer commands, one job a module: a new release described and its series ported
(new_release), PyPI watched for newer releases (watch), the backport pins (pins) and DEP-3
headers (headers) kept consistent with versions.toml, the generated files (generated), the CI
matrices (ci), the table of GPU runs still owed (owed), the index of docs/VERIFICATION.md by
release (verification), base image digests (digests), image retention (prune) and a release's own
tests (upstream). Each generator prints what it would write and writes only with --write.

Run as `python -m vllm_backports.maint ...` or `vllm-backports maint ...`, both under the
command line's error guard. `main` itself raises, so that tests see the error itself.
"""

from __future__ import annotations

import click

from ..catalogue import CHECKOUT
from ..errors import UsageError
from . import ci, digests, generated, headers, new_release, owed, pins, prune, upstream, verification, watch

# Maintainers edit and regenerate the checkout's files, never an installed wheel's copy of them.
HOME = CHECKOUT


@click.group()
@click.pass_context
def main(ctx: click.Context) -> None:
    """Maintainer tools for the backport catalogue."""
    # An installed wheel carries its data inside the package, not the checkout's files that
    # these commands read and regenerate (README.md, docs/, versions.toml at the top).
    if not (HOME / "versions.toml").is_file() and not (HOME / "docs").is_dir():
        raise UsageError(f"maint needs a checkout of vllm-backports: run it from the repository (not found in {HOME})")
    ctx.obj = HOME  # read when a command runs, so a test can point it at a copy of the checkout


for _module in (new_release, watch, pins, headers, generated, ci, owed, verification, digests, prune, upstream):
    for _command in _module.COMMANDS:
        main.add_command(_command)
