"""The one error guard of every command, the maintainers' included: an error is one line (a JSON
object under --json) and the exit code errors.py documents, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

import click

from .errors import BackportError
from .report import Reporter


def run_guarded(reporter: Reporter, body: Callable[[], int | None]) -> NoReturn:
    """Run `body` and exit with the code it returns, or report what it raised in one line."""
    try:
        code = body()
    except BackportError as exc:
        reporter.error(str(exc), exc.exit_code)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # a bad option or argument: usage, nothing was read
        reporter.error(exc.format_message(), exc.exit_code)
        sys.exit(exc.exit_code)
    except click.Abort:
        reporter.error("aborted", 1)
        sys.exit(1)
    except OSError as exc:  # outside a commit (which reports its own failures): nothing was written
        where = f"{exc.filename}: " if exc.filename else ""
        reporter.error(f"{where}{exc.strerror or exc}", 1)
        sys.exit(1)
    except KeyboardInterrupt:
        reporter.error("interrupted; nothing was left half-written", 1)
        sys.exit(1)
    sys.exit(code or 0)


def main_guarded(
    command: click.Command, args: list[str] | None = None, prog_name: str | None = None, **extra
) -> NoReturn:
    """A Click command line run as a program under the guard: Click's own usage errors become
    one line too; --help and --version still print and exit 0."""
    argv = list(sys.argv[1:] if args is None else args)
    run_guarded(
        Reporter("--json" in argv),
        lambda: command.main(argv, prog_name, standalone_mode=False, **extra),
    )
