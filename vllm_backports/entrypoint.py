"""The images' entrypoint: `vllm serve` as the official image runs it, with a guard before it and a
loud exit after it.

Before vLLM starts it prints the release, the backports the manifest records (checked against the
files, as `apply.py status` does) and each known bug of versions.toml whose `when` the given flags
match. VLLM_BACKPORTS_STRICT=1 refuses to start on any of these; VLLM_BACKPORTS_GUARD=0 skips it.
vLLM runs as a child: SIGTERM and SIGINT reach it, its output passes through, and when it fails,
or exits 0 after its engine died (vLLM #53726), this exits non-zero with a short report on stderr
and in $VLLM_BACKPORTS_REPORT_DIR (default /tmp).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from packaging.version import Version

from . import core
from .catalogue import Catalogue, Known, data_home
from .errors import BackportError
from .request import Command, parse_request

# The vllm-openai stage's ENTRYPOINT in docker/Dockerfile of every release 0.17.0 .. 0.33.0
# (tests/release/test_entrypoint_flags.py reads each release's).
OFFICIAL_ENTRYPOINT = ("vllm", "serve")
# Flag spellings a release's parser gained: (flag, first release).
SINCE = {"-sc": "0.19.0", "--spec-method": "0.22.0"}
# Releases whose prefix caching is opt-in for hybrid models (the series' GDN models are hybrids):
# arg_utils.py's `default_prefix_caching = ... and not model_config.is_hybrid`. Elsewhere it is on.
HYBRID_PREFIX_CACHING_OFF = ("0.26.0", "0.28.0")
# Async scheduling is on unless turned off, but before 0.33.0 vLLM turns it off by default for a
# speculative method outside its EAGLE types (MTP's among them): config/vllm.py's
# `speculative_config.method not in get_args(EagleModelTypes)`, ngram included.
ASYNC_METHODS = ("mtp", "eagle", "eagle3")
ASYNC_FOR_EVERY_METHOD = "0.33.0"
# What vLLM prints when its engine core dies: the first two in every release 0.17.0 .. 0.33.0.
ENGINE_DIED = (
    "EngineCore encountered a fatal error",  # vllm/v1/engine/core.py, logger.exception
    "EngineCore encountered an issue",  # vllm/v1/engine/exceptions.py, EngineDeadError's message
    "died unexpectedly, shutting down client",  # vllm/v1/engine/core_client.py, 0.17.0 .. 0.19.1
)
MARKER_MAX = max(map(len, ENGINE_DIED))  # what of a piece that ended no line is kept for the next
TAIL = 40  # output lines the report keeps
# vLLM's output is read in pieces of at most this many bytes: a line without end (a progress bar
# that only returns the carriage, a dumped tensor) costs this much memory, not its length. The
# report keeps each line's first REPORT_LINE characters.
CHUNK = 1 << 16
REPORT_LINE = 2000
PREFIX = "vllm-backports: "


@dataclass(frozen=True)
class Flags:
    """What the known bugs' conditions read off `vllm serve`'s arguments, defaults resolved."""

    speculative: str | None  # the method, as vLLM normalises it
    prompt_lookup_min: int | None  # ngram's
    prefix_caching: bool
    async_scheduling: bool
    kv_cache_dtype: str
    tensor_parallel_size: int
    tool_calls: bool
    config_file: bool  # --config: flags in a file, not read here


def _normalise(argv: list[str]) -> list[str]:
    """The arguments as vLLM's FlexibleArgumentParser hands them to argparse: `_` as `-` in a
    `--` flag's name, and `-a.b=v` / `-a.b v` (any flag with a dot) merged into one `-a JSON`."""
    out: list[str] = []
    dotted: dict[str, dict] = {}
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        name, eq, value = arg.partition("=")
        if arg.startswith("--"):
            head, dot, rest = name.partition(".")
            name = head.replace("_", "-") + dot + rest
        if not arg.startswith("-") or "." not in name:
            out.append(name + eq + value)
            continue
        if not eq:
            value, skip = (argv[i + 1] if i + 1 < len(argv) else ""), True
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        head, _, rest = name.partition(".")
        node: dict = dotted.setdefault(head, {})
        *path, last = rest.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = parsed
    for key, merged in dotted.items():
        out += [key, json.dumps(merged)]
    return out


def _method(config: dict) -> str | None:
    """SpeculativeConfig's method: model-specific MTP names are mtp, "[ngram]" ngram, and no
    method means ngram for model "ngram", else a draft model."""
    method = config.get("method")
    if method is None:
        return "ngram" if config.get("model") in ("ngram", "[ngram]") else "draft_model"
    method = str(method)
    if method == "mtp" or method.endswith("_mtp"):
        return "mtp"
    return "ngram" if method == "[ngram]" else method


def parse_flags(argv: list[str], version: str) -> Flags:
    """The flags the known bugs' conditions name, read as `vllm serve` of `version` reads them."""
    v = Version(Version(version).base_version)
    known_since = {flag for flag, first in SINCE.items() if v >= Version(first)}
    spec_aliases = {"--speculative-config"} | ({"-sc"} & known_since)
    spec: dict | None = None
    shortcuts: dict[str, str] = {}
    values: dict[str, str] = {}
    switches: dict[str, bool] = {}
    args = _normalise(argv)
    takes_value = {"--kv-cache-dtype", "--tensor-parallel-size", "-tp", "--tool-call-parser", "--config"}
    takes_value |= spec_aliases
    if "--spec-method" in known_since:
        takes_value |= {"--spec-method", "--spec-model", "--spec-tokens"}
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in takes_value:
            if not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            if name in spec_aliases:
                try:
                    spec = json.loads(value) if value.strip() else None
                except ValueError:
                    spec = None  # vLLM refuses it and starts nothing
            elif name.startswith("--spec-"):
                shortcuts[name] = value
            else:
                values["--tensor-parallel-size" if name == "-tp" else name] = value
        elif name.startswith("--no-"):
            switches["--" + name[5:]] = False
        elif name.startswith("--"):
            switches[name] = True
        i += 1
    if shortcuts:
        spec = dict(spec or {})
        spec.setdefault("method", shortcuts.get("--spec-method"))
        spec.setdefault("model", shortcuts.get("--spec-model"))
    method = _method(spec) if isinstance(spec, dict) else None
    lookup = None
    if method == "ngram" and isinstance(spec, dict):
        lookup = spec.get("prompt_lookup_min") or spec.get("prompt_lookup_max") or 5
    hybrid_off = Version(HYBRID_PREFIX_CACHING_OFF[0]) <= v < Version(HYBRID_PREFIX_CACHING_OFF[1])
    try:
        tp = int(values.get("--tensor-parallel-size", "1"))
    except ValueError:
        tp = 1
    return Flags(
        speculative=method,
        prompt_lookup_min=lookup if isinstance(lookup, int) else None,
        prefix_caching=switches.get("--enable-prefix-caching", not hybrid_off),
        async_scheduling=switches.get(
            "--async-scheduling", method in (None, *ASYNC_METHODS) or v >= Version(ASYNC_FOR_EVERY_METHOD)
        ),
        kv_cache_dtype=values.get("--kv-cache-dtype", "auto"),
        tensor_parallel_size=tp,
        tool_calls=switches.get("--enable-auto-tool-choice", False) or "--tool-call-parser" in values,
        config_file="--config" in values,
    )


def matches(when: dict, flags: Flags) -> bool:
    """Whether every condition of a known bug's `when` holds for these flags ({}: never)."""
    if not when:
        return False
    for key, want in when.items():
        if key == "speculative":
            ok = flags.speculative is not None and any(fnmatch(flags.speculative, p) for p in want)
        elif key == "kv_cache_dtype":
            ok = any(fnmatch(flags.kv_cache_dtype, p) for p in want)
        elif key == "prompt_lookup_min_below":
            ok = flags.prompt_lookup_min is not None and flags.prompt_lookup_min < want
        else:
            ok = getattr(flags, key) == want
        if not ok:
            return False
    return True


def applying(cat: Catalogue, version: str, shipped: tuple[str, ...], flags: Flags) -> list[Known]:
    """The known bugs present in `version`, unfixed by the shipped backports, that the flags meet."""
    return [k for k in cat.known.values() if k.unfixed(version, shipped) and matches(k.when, flags)]


def describe(cat: Catalogue, target: Path | None) -> tuple[str, tuple[str, ...], list[str], list[str]]:
    """The installed vLLM's version, the backports its files carry, the lines saying so, and its
    problems (backports of its series not applied, files not as the manifest records them, an
    interrupted run), read as `apply.py status` reads them: a manifest left beside files that a
    reinstall made pristine again counts for nothing."""
    request = parse_request(cat, Command.STATUS, vllm=None, target=target, fetch=False)
    seen = core.status(cat, request, lambda _msg: None, lambda _msg: None)
    applied = tuple(a.id for a in seen.manifest.applied) if seen.manifest else ()
    lines = [f"vLLM {seen.resolution.version}; backports applied: {', '.join(applied) or 'none'}"]
    damaged = [f"{f.path} is {f.state}, not as the manifest records it" for f in seen.files if f.state != "patched"]
    if seen.journal:
        damaged.append(f"an interrupted run left {seen.journal}")
    problems = damaged
    # an image applies its whole series: a part missing is vLLM as released there (a patch the
    # release has upstream is found in place, and never recorded as applied)
    upstream = seen.resolution.release.upstream if seen.resolution.release else ()
    missing = [b for b in seen.not_applied if b not in upstream]
    if missing:
        problems = [f"backports of this release's series not applied: {', '.join(missing)}", *damaged]
    # with files not as recorded (a reinstall that left the series' new files behind, an edit),
    # which fixes still hold is unknown: none is counted
    return seen.resolution.version, () if damaged else applied, lines, problems


def guard(cat: Catalogue, argv: list[str], target: Path | None = None) -> tuple[list[str], list[str]]:
    """What to print before vLLM starts, and the problems VLLM_BACKPORTS_STRICT refuses."""
    try:
        version, shipped, lines, problems = describe(cat, target)
    except BackportError as exc:
        return [], [f"cannot read what this vLLM carries: {exc}"]
    # the bugs the files' own backports fix, whatever versions.toml ships for the version's name
    # (a local build such as 0.20.0+cu129 has no entry of its own)
    flags = parse_flags(argv, version)
    bugs = applying(cat, version, shipped, flags)
    for bug in bugs:
        fix = f"; workaround: {bug.workaround}" if bug.workaround else ""
        problems.append(f"known bug {bug.number} ({bug.id}, {bug.status}) applies to these flags: {bug.title}{fix}")
    unread = [k for k in cat.known.values() if k.unfixed(version, shipped) and not k.when]
    if unread:
        lines.append(f"{len(unread)} more known bugs of this release depend on no flag read here (apply.py list)")
    if flags.config_file:
        lines.append("flags in --config are not read here")
    return lines, problems


def report(reason: str, tail: list[str], header: list[str], directory: Path) -> Path | None:
    """The crash report on stderr and in a file; the file's path (None where it cannot be written)."""
    text = "\n".join([f"vllm-backports: {reason}", *header, f"last {len(tail)} lines of vLLM's output:", *tail])
    print(text, file=sys.stderr, flush=True)
    path = directory / f"vllm-backports-report-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.txt"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    except OSError as exc:
        print(f"{PREFIX}could not write {path}: {exc.strerror}", file=sys.stderr, flush=True)
        return None
    print(f"{PREFIX}report written to {path}", file=sys.stderr, flush=True)
    return path


@dataclass(frozen=True)
class Outcome:
    code: int  # the child's exit code, 128 + the signal that ended it
    died: bool  # its output said the engine core died
    stopped: bool  # a SIGTERM or SIGINT was passed on to it
    tail: list[str]  # its last lines of output


def supervise(cmd: list[str]) -> Outcome:
    """Run vLLM as a child, its output passed through, SIGTERM and SIGINT passed on."""
    tail: deque[str] = deque(maxlen=TAIL)
    died, stopped = threading.Event(), threading.Event()
    lock = threading.Lock()
    pending: list[int] = []  # signals that came before the child was there to take them
    children: list[subprocess.Popen] = []

    def forward(signum, _frame) -> None:
        stopped.set()
        if children:
            children[0].send_signal(signum)  # a no-op once the child is gone
        else:
            pending.append(signum)

    # set before the child starts: in its own session, it would outlive this process's default death
    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except BaseException:
        for s, handler in previous.items():
            signal.signal(s, handler)
        raise
    children.append(child)
    for signum in pending:
        child.send_signal(signum)

    def pump(src, dst) -> None:
        held = ""  # the end of a piece that ended no line: a marker may straddle two pieces
        for raw in iter(lambda: src.readline(CHUNK), b""):
            if dst is not None:
                try:
                    dst.write(raw)
                    dst.flush()
                except (OSError, ValueError):  # the reader gone: keep draining, or vLLM blocks on a full pipe
                    dst = None
            line = raw.decode(errors="replace").rstrip("\n")
            with lock:
                tail.append(line if len(line) <= REPORT_LINE else line[:REPORT_LINE] + " [...]")
            seen = held + line
            if any(marker in seen for marker in ENGINE_DIED):
                died.set()
            held = "" if raw.endswith(b"\n") else seen[-MARKER_MAX:]

    pumps = [
        threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer), daemon=True),
        threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer), daemon=True),
    ]
    for t in pumps:
        t.start()

    try:
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    for t in pumps:
        t.join(timeout=5)
    return Outcome(128 - code if code < 0 else code, died.is_set(), stopped.is_set(), list(tail))


def main(argv: list[str] | None = None, target: Path | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    header: list[str] = []
    if os.environ.get("VLLM_BACKPORTS_GUARD", "1") != "0":
        try:
            header, problems = guard(Catalogue(data_home()), argv, target)
        except Exception as exc:  # the guard's own fault: vLLM starts all the same, unless STRICT
            header, problems = [], [f"the guard failed ({type(exc).__name__}: {exc}); vLLM's flags were not checked"]
        header += problems  # printed, and a crash report's header: what is missing matters there too
        for line in header:
            print(PREFIX + line, file=sys.stderr, flush=True)
        if problems and os.environ.get("VLLM_BACKPORTS_STRICT", "0") not in ("", "0"):
            print(f"{PREFIX}VLLM_BACKPORTS_STRICT is set: not starting vLLM", file=sys.stderr, flush=True)
            return 2
    try:
        run = supervise([*OFFICIAL_ENTRYPOINT, *argv])
    except OSError as exc:  # no `vllm` on PATH, or not executable: nothing ran
        why = "no such command on PATH" if isinstance(exc, FileNotFoundError) else exc.strerror
        print(f"{PREFIX}cannot run {OFFICIAL_ENTRYPOINT[0]}: {why}", file=sys.stderr, flush=True)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    if not run.died and (run.code == 0 or run.stopped):  # a clean exit, or the stop asked for
        return run.code
    if not header:  # the guard skipped or unable: say what is installed all the same
        try:
            _, _, lines, problems = describe(Catalogue(data_home()), target)
            header = lines + problems
        except BackportError as exc:
            header = [f"cannot read what this vLLM carries: {exc}"]
        except Exception as exc:  # the report matters more than what it says of the install
            header = [f"cannot read what this vLLM carries: {type(exc).__name__}: {exc}"]
    reason = f"vLLM exited {run.code}" + (" after its engine died" if run.died else "")
    report(reason, run.tail, header, Path(os.environ.get("VLLM_BACKPORTS_REPORT_DIR") or "/tmp"))
    return run.code or 1


if __name__ == "__main__":
    sys.exit(main())
