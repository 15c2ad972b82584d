"""DEP-3 headers checked for content, and against versions.toml: Applied-Upstream names the
backport's upstream_in (or says no), Bug is its bug, Origin names the link of its origin; and
every series' patch of one backport credits the same Origin."""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path

import click

from ..catalogue import Backport, Catalogue, series_order
from ..errors import BackportError
from ..patchfile import applied_upstream_in, backport_id_of, check_header, header_of

URL = re.compile(r"https?://\S+")


def lint_headers(cat: Catalogue, today: datetime.date) -> tuple[int, list[str]]:
    """(patches read, problems): every series' patch header checked for content and against its
    backport in versions.toml, each problem naming its file. Files are read as they are, not
    through their pins (`maint rehash` checks those), so one run reports everything."""
    problems: list[str] = []
    count = 0
    origins: dict[str, dict[str, str]] = {}  # backport -> Origin -> the first file giving it
    for name in cat.series_names():
        try:
            order = series_order(cat.series_file_unpinned(name, "series"))
        except FileNotFoundError:
            problems.append(f"backports/{name}: no series file")
            continue
        for fname in order:
            where = f"backports/{name}/{fname}"
            count += 1
            try:
                bid = backport_id_of(fname)
                header = header_of(cat.series_file_unpinned(name, fname), fname)
            except FileNotFoundError:
                problems.append(f"{where}: missing")
                continue
            except BackportError as exc:
                problems.append(f"{where}: {str(exc).removeprefix(fname + ': ')}")
                continue
            found = check_header(header, today)
            if "Origin" in header:
                origins.setdefault(bid, {}).setdefault(header["Origin"], where)
            backport = cat.backports.get(bid)
            if backport is None:
                found.append(f"backport {bid!r} is not in versions.toml")
            else:
                found += _against_catalogue(header, backport)
            problems += [f"{where}: {p}" for p in found]
    for bid, seen in origins.items():
        if len(seen) > 1:
            problems.append(
                f"{bid}: its patches credit different origins: "
                + "; ".join(f"{origin!r} in {where}" for origin, where in seen.items())
            )
    return count, problems


def _against_catalogue(header: dict[str, str], backport: Backport) -> list[str]:
    """Where a header and versions.toml disagree: upstream_in is the release that first carries
    the fix, Applied-Upstream must name that release (or say no when there is none), Bug the
    same bug, and Origin the link versions.toml's origin gives (when it gives one)."""
    found = []
    applied = header.get("Applied-Upstream")
    if applied is not None:
        named = applied_upstream_in(header)
        if backport.upstream_in and named != backport.upstream_in:
            found.append(
                f"Applied-Upstream {applied!r} disagrees with versions.toml: {backport.id} "
                f"is upstream in {backport.upstream_in}"
            )
        elif not backport.upstream_in and applied != "no":
            found.append(
                f"Applied-Upstream {applied!r} disagrees with versions.toml: {backport.id} has no upstream_in "
                "(say no, or give the backport upstream_in)"
            )
    if "Bug" in header and header["Bug"] != backport.bug:
        found.append(f"Bug {header['Bug']!r} is not versions.toml's {backport.bug!r}")
    link = URL.search(backport.origin)
    if link and "Origin" in header and link.group(0) not in header["Origin"]:
        found.append(f"Origin {header['Origin']!r} does not name versions.toml's origin {link.group(0)!r}")
    return found


@click.command("lint-headers")
@click.pass_obj
def lint_headers_command(home: Path) -> None:
    """Check every series' DEP-3 headers: Description, Origin, Forwarded, Last-Update, and
    Applied-Upstream, Bug and Origin against versions.toml. Lists every problem; exit 1 on any."""
    count, problems = lint_headers(Catalogue(home), datetime.datetime.now(datetime.UTC).date())
    for problem in problems:
        click.echo(problem, err=True)
    if problems:
        click.echo(f"{len(problems)} problems in DEP-3 headers", err=True)
        sys.exit(1)
    click.echo(f"{count} patches: DEP-3 headers are consistent with versions.toml")


COMMANDS = (lint_headers_command,)
