"""What a run is asked to do, parsed once from the command line into frozen data and checked in
full before any tree is read, fetched or written."""

from __future__ import annotations

import enum
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from .catalogue import Catalogue
from .engine import select
from .errors import UsageError
from .resolve import Requested, parse_vllm
from .state import LOCK_TIMEOUT


class Command(enum.Enum):
    APPLY = "apply"
    CHECK = "check"  # a dry run of apply
    REVERT = "revert"
    STATUS = "status"


class Output(enum.Enum):
    """How the result is rendered: tables and lines for people, or one JSON object on stdout."""

    TEXT = "text"
    JSON = "json"


@dataclass(frozen=True, kw_only=True)
class Request:
    command: Command
    vllm: Requested
    target: Path | None  # None: this Python's vLLM, or with fetch a fresh copy in the cache
    fetch: bool  # work on the release's pristine files from PyPI
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    output: Output = Output.TEXT
    lock_timeout: float = LOCK_TIMEOUT

    @property
    def fresh_copy(self) -> bool:
        """--fetch without --target: a new pristine copy each run, which no earlier run touched."""
        return self.fetch and self.target is None


def _has_vllm(target: Path | None) -> bool:
    """Whether there is a vLLM to read: in --target, or installed in this Python."""
    if target is not None:
        return (target / "vllm").is_dir()
    try:
        importlib.metadata.distribution("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def together(cat: Catalogue) -> dict[str, tuple[str, ...]]:
    """Each backport's partners, which every selection must take or leave with it."""
    return {b.id: b.together_with for b in cat.backports.values()}


def parse_request(
    cat: Catalogue,
    command: Command,
    *,
    vllm: str | None,
    target: Path | None,
    fetch: bool,
    only: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    as_json: bool = False,
    lock_timeout: float | None = None,
) -> Request:
    """The command line's words as a Request, or the one usage error that refuses them."""
    if command is Command.STATUS and (only or skip):
        # status reports the whole tree; a selection it would ignore is refused instead
        flag = "--only" if only else "--skip"
        raise UsageError(f"{flag} goes with apply, revert and check, not status")
    if both := [b for b in only if b in skip]:
        raise UsageError(f"--only and --skip both name {', '.join(both)}: give each backport to one of them")
    if fetch and command in (Command.REVERT, Command.STATUS):
        if target is None:
            raise UsageError(
                f"{command.value} --fetch needs --target DIR: without it every run lays out a fresh pristine copy "
                "(apply --fetch --target DIR keeps one to come back to)"
            )
        if not _has_vllm(target):
            # they read a tree that is there: laying one out would be a write they were not asked for
            raise UsageError(
                f"{command.value} --fetch reads the copy `apply --fetch --target {target}` laid out, "
                f"and {target} holds none"
            )
        fetch = False  # the copy is there: read it as any --target, its release from its own files
    if lock_timeout is not None and not 0 <= lock_timeout <= 86400:
        raise UsageError("--lock-timeout takes seconds from 0 to 86400")
    if vllm is not None and not vllm.strip():
        raise UsageError("--vllm needs a version (e.g. 0.20.0) or 'auto'")
    requested = parse_vllm(cat, vllm or "auto")
    if fetch and requested.unpublished is not None:
        raise UsageError(requested.unpublished.message)
    if requested.unpublished is not None and not _has_vllm(target):
        # only its nightlies carry it: with no vLLM to look at, that is the whole answer
        raise UsageError(requested.unpublished.message)
    if fetch and requested.published is None:
        raise UsageError("--fetch needs --vllm with a published release (e.g. --vllm 0.20.0)")
    if command is not Command.STATUS and requested.release is not None and requested.release.series:
        # Against the series the named release gets: a bad --only/--skip is refused before --fetch
        # lays the release's files out in --target. With auto the series is known once the tree
        # is read, and the core checks the selection then.
        select(cat.series(requested.release.series), only, skip, together(cat))
    return Request(
        command=command,
        vllm=requested,
        target=target,
        fetch=fetch,
        only=only,
        skip=skip,
        output=Output.JSON if as_json else Output.TEXT,
        **({} if lock_timeout is None else {"lock_timeout": lock_timeout}),
    )
