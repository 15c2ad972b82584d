"""One error hierarchy; each kind carries the exit code the CLI documents.

Exit codes: 0 done, 1 drift or failure, 2 usage (bad input that changed nothing).
"""

from __future__ import annotations


class BackportError(Exception):
    exit_code = 1


class UsageError(BackportError):
    """The request cannot be carried out as asked; nothing was touched."""

    exit_code = 2


class CatalogueError(BackportError):
    """versions.toml or a backport file is malformed or tampered with."""


class FetchError(BackportError):
    """PyPI could not serve what --fetch needs."""


class TargetError(BackportError):
    """The vLLM tree cannot be patched as it stands (missing, edited, unwritable)."""


class PatchError(BackportError):
    """A patch file cannot be parsed or is unsafe."""


class StateError(BackportError):
    """The manifest or journal beside vLLM is unreadable or inconsistent."""


class EvidenceError(BackportError):
    """A GPU evidence file under docs/evidence/ is unreadable, incomplete or filed under the wrong release."""


class DraftsNotServed(UsageError):
    """verify's scripted drafts never reached the engine's proposer: the run would judge nothing of
    what it is for."""


class LockTimeout(BackportError):
    """Another run held the tree's lock past the wait allowed; nothing was touched."""
