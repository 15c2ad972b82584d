"""GPU evidence: the `apply.py verify --json` files kept as docs/evidence/<release>/<name>.json,
read, checked and summarised for docs/evidence/README.md and the support matrix. Pure: no GPU,
no vLLM.

What a file says about the engines comes from the engines themselves (each row's `engine`, read
back from vLLM's resolved config), not from what verify asked for: a release may turn prefix
caching or async scheduling on by itself, and a control is recognisable by the backports its
vLLM carries ([] for a pristine install).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import EvidenceError
from .verify.proofs import BLOCK_TUNED, GDN
from .verify.proofs import PROOFS as NAMED_PROOFS
from .verify.run import JUDGED_LOGPROBS

EVIDENCE_DIR = Path("docs") / "evidence"
PAGE = EVIDENCE_DIR / "README.md"
WRITE_COMMAND = "python -m vllm_backports.maint evidence --write"

# verify's own words (verify/run.py conclude) -> the page's, before the control's rows are read
PROOFS = {"control fails, target passes": "proof", "weak: the control passes too": "weak", "target fails": "fails"}
# A proof is named by how its control failed: wrong tokens, or an engine that died (which shows
# the bug's path is reached, not that it corrupts output).
CONTROL_WRONG, CONTROL_CRASHED = "control wrong", "control crashed"
PROVEN = (CONTROL_WRONG, CONTROL_CRASHED)
NOT_EXERCISED = "not exercised"  # a passing control whose run never reached the bug's path
UPSTREAM_FIXED = "upstream-fixed"  # a weak run that shows upstream's own fix holding (with_upstream_fixes)
VERDICTS = (*PROVEN, UPSTREAM_FIXED, "weak", NOT_EXERCISED, "fails", "no control", "uncalibrated")
# Whether the target ran the patches shipped today (with_digests): a proof counts only then.
CURRENT, EARLIER, UNKNOWN = "current", "earlier revision", "unknown"

_TOP = {
    "command": str,
    "vllm": str,
    "kv_cache": str,
    "threshold": (int, float),
    "tp": int,
    "calibrated": bool,
    "passed": bool,
    "scenario": dict,
    "rows": list,
    "machine": dict,
}
_CONTROL = {"control": str, "control_failed": bool, "proof": str}
_SCENARIO = {"prompts": str}
_MACHINE = {"gpu": str, "gpus": int, "date": str}
_ROW = {"scenario": str, "site": str, "batch": int, "mode": str, "tokens": int, "errors": int}
_ENGINE = (
    "vllm",
    "backports",
    "prefix_caching",
    "mamba_cache_mode",
    "async_scheduling",
    "cudagraph_mode",
    "model_runner",
    "prefix_cache",
)


@dataclass(frozen=True)
class Summary:
    """One evidence file. Engine facts are the distinct values the target's speculative engines
    reported, in the order met (None: the engine could not say)."""

    release: str
    name: str
    presets: tuple[str, ...]
    kv_cache: str
    prompts: str
    tp: int
    batches: tuple[int, ...]
    modes: tuple[str, ...]
    prefix_caching: tuple
    mamba_cache_mode: tuple
    async_scheduling: tuple
    model_runner: tuple
    cudagraph_mode: tuple
    gpu: str
    gpus: int
    date: str  # the day the run was made (UTC), YYYY-MM-DD
    target_errors: int
    target_tokens: int
    control_errors: int | None  # None: no control
    control_tokens: int | None
    target_backports: tuple[str, ...] | None  # () pristine, None unknown
    control_backports: tuple[str, ...] | None
    prefix_hits: int | None  # the target's speculative engines, summed; None when not reported
    prefix_queries: int | None
    verdict: str  # one of VERDICTS
    control_crashed: int = 0  # control engines that died before returning tokens (a failure too)
    # Files from before verify had --model-class ran its only model, Qwen3-Next.
    model_class: str = "qwen3_next"
    # upstream-fixed only: the release whose pristine control failed the same proof
    failed_pristine_on: str | None = None
    # not exercised only: which path the run never reached
    unexercised: str | None = None
    # The target engines' engine.patches as the file has them, (backport id, sha256 of its patch);
    # None where they did not record it or disagree.
    target_patches: tuple[tuple[str, str | None], ...] | None = None
    # CURRENT, EARLIER or UNKNOWN. Files from before verify recorded the patches are EARLIER: what
    # they ran cannot be shown to be today's series. Recorded patches stay UNKNOWN until
    # with_digests compares them with the release's shipped series.
    digest: str = UNKNOWN

    @property
    def link(self) -> str:
        """The file, relative to the page."""
        return f"{self.release}/{self.name}.json"


def _check(obj: dict, fields: dict, where: str, what: str) -> None:
    for key, kind in fields.items():
        if key not in obj:
            raise EvidenceError(f"{where}: {what} lacks {key!r}")
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise EvidenceError(f"{where}: {what}: {key} is {value!r}, not what verify writes")


def _public(version: str) -> str:
    return version.split("+", 1)[0]  # a local build (0.20.0+cu129) is its release's


def _distinct(values) -> tuple:
    return tuple(dict.fromkeys(values))


def _backports(rows: list[dict]) -> tuple[str, ...] | None:
    """The backport ids the site's engines reported, in order met; None when none could say."""
    # A dead engine said nothing; verify then read the site's manifest into the row itself.
    said = [r["engine"]["backports"] if r["engine"] else r.get("backports") for r in rows]
    known = [b for b in said if b is not None]
    return _distinct(b for ids in known for b in ids) if known else None


def _counter(rows: list[dict], name: str) -> int | None:
    """A prefix-cache counter summed over the rows; vLLM's metrics name it without or with _total."""
    found = []
    for r in rows:
        counters = (r["engine"] or {}).get("prefix_cache") or {}
        value = counters.get(name, counters.get(f"{name}_total"))
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.append(int(value))
    return sum(found) if found else None


def _patches(rows: list[dict]) -> tuple[str, tuple | None]:
    """(digest state, the patches) the rows' engines recorded: EARLIER where an engine did not
    record them (verify before it did), UNKNOWN where none could say, where one could not read
    its manifest (None) or where they disagree."""
    said = [r["engine"] for r in rows if r["engine"]]
    if any("patches" not in e for e in said):
        return EARLIER, None
    found = _distinct(None if e["patches"] is None else tuple(e["patches"].items()) for e in said)
    return UNKNOWN, found[0] if len(found) == 1 else None


def proof_of(name: str) -> str | None:
    """The named proof (verify/proofs.py) a file runs: its own name, or the longest proof name it
    extends by a variant ("gdn-ngram-b1-v2" runs gdn-ngram-b1 on V2); None for neither."""
    if name in NAMED_PROOFS:
        return name
    return max((p for p in NAMED_PROOFS if name.startswith(p + "-")), key=len, default=None)


def _total(rows: list[dict], *keys: str) -> int | None:
    """A counter of the rows' `exercised` summed (the first of `keys` a row has); None when a row
    does not report it, so that what was not counted is never read as zero."""
    total = 0
    for r in rows:
        counters = r.get("exercised") or {}
        value = next((counters[k] for k in keys if k in counters), None)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        total += value
    return total


def _unexercised(data: dict, hits: int | None, gdn: bool) -> str | None:
    """Why a run whose control passed says nothing of the bug: the path it is about never ran.
    None where it ran, or where the rows cannot tell (then the run stays weak)."""
    rows = [r for r in data["rows"] if r["scenario"] != "baseline"]  # both sites' speculative rows
    # the GDN state bug needs an accepted draft followed by a step without drafts (verify/drafts.py)
    if gdn and _total(rows, "accepted_then_no_drafts") == 0:
        return "no accepted draft followed by a step without drafts"
    if _total(rows, "accepted_drafts", "num_accepted_tokens") == 0:
        return "no draft accepted"
    # The prompt sets built to hit the prefix cache. Not every run with prefix caching on: churn
    # turns it on for Mamba's align mode, and its bug needs no hit.
    if data["scenario"]["prompts"] in BLOCK_TUNED and hits == 0:
        return "no prefix-cache hit"
    return None


def _errors(row: dict) -> int:
    """A row's errors as verify counts them (verify/run.py row_errors): its tokens' and, in files
    that judged prompt or output logprobs (--prompt-logprobs, --output-logprobs), theirs."""
    total = row["errors"]
    for key in JUDGED_LOGPROBS:
        judged = row.get(key)
        extra = judged.get("errors", 0) if isinstance(judged, dict) else 0
        total += extra if isinstance(extra, int) and not isinstance(extra, bool) else 0
    return total


def summarise(data: object, release: str, name: str, where: str) -> Summary:
    """Check one parsed verify --json object and summarise it; `where` names the file in errors."""
    if not isinstance(data, dict):
        raise EvidenceError(f"{where}: not a JSON object")
    if "error" in data and "rows" not in data:
        raise EvidenceError(f"{where}: verify's error output, not evidence: {data['error']}")
    _check(data, _TOP, where, "the file")
    if data["command"] != "verify":
        raise EvidenceError(f"{where}: command is {data['command']!r}, not 'verify'")
    if _public(data["vllm"]) != release:
        raise EvidenceError(f"{where}: ran vLLM {data['vllm']}, but is filed under {release}")
    _check(data["scenario"], _SCENARIO, where, "scenario")
    _check(data["machine"], _MACHINE, where, "machine")
    date = data["machine"]["date"][:10]
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise EvidenceError(f"{where}: machine.date {data['machine']['date']!r} is not a date")
    has_control = "control" in data
    if has_control:
        _check(data, _CONTROL, where, "the file")
        if data["proof"] not in PROOFS:
            raise EvidenceError(f"{where}: proof {data['proof']!r} is not one of verify's verdicts")
    rows = []
    for i, r in enumerate(data["rows"]):
        if not isinstance(r, dict):
            raise EvidenceError(f"{where}: rows[{i}] is not an object")
        _check(r, _ROW, where, f"rows[{i}]")
        if "engine" not in r:
            raise EvidenceError(f"{where}: rows[{i}] lacks 'engine'")
        engine = r["engine"]
        if engine is not None and not isinstance(engine, dict):
            raise EvidenceError(f"{where}: rows[{i}]: engine is {engine!r}, not what verify writes")
        if engine and "error" in engine:  # vLLM's config could not be read back: facts unknown
            engine = None
        rows.append({**r, "engine": engine})
        if engine is not None:
            for key in _ENGINE:
                if key not in engine:
                    raise EvidenceError(f"{where}: rows[{i}].engine lacks {key!r}")
            if _public(str(engine["vllm"])) != release:
                raise EvidenceError(
                    f"{where}: rows[{i}] ({r['site']}, {r['scenario']}) ran vLLM {engine['vllm']}, "
                    f"but the file is filed under {release}"
                )
    target = [r for r in rows if r["site"] == "target"]
    control = [r for r in rows if r["site"] == "control"]
    speculative = [r for r in target if r["scenario"] != "baseline"]
    if not speculative:
        raise EvidenceError(f"{where}: no speculative row on the target: nothing was tested")
    if data["passed"] != all(_errors(r) == 0 for r in target):
        raise EvidenceError(f"{where}: passed is {data['passed']}, but its target rows say otherwise")
    if has_control and data["control_failed"] != (
        bool(control) and all(_errors(r) > 0 or r.get("crashed") for r in control)
    ):
        raise EvidenceError(f"{where}: control_failed is {data['control_failed']}, but its control rows say otherwise")

    if not data["calibrated"]:
        verdict = "uncalibrated"
    elif not data["passed"]:
        verdict = "fails"
    elif not has_control:
        verdict = "no control"
    else:
        verdict = PROOFS[data["proof"]]
    if verdict == "proof":
        verdict = CONTROL_CRASHED if any(r.get("crashed") for r in control) else CONTROL_WRONG
    hits = _counter(speculative, "hits")
    unexercised = None
    if verdict == "weak":
        # A GDN proof, or a run against the pristine release that names no other fix: the
        # pristine release lacks (or has upstream's) GDN state fix, which is what such a run shows.
        fix = NAMED_PROOFS[p].fix if (p := proof_of(name)) else None
        gdn = fix == GDN or (fix is None and _backports(control) == ())
        unexercised = _unexercised(data, hits, gdn)
        verdict = NOT_EXERCISED if unexercised else verdict
    digest, patches = _patches(target)

    def facts(key: str) -> tuple:
        return _distinct((r["engine"] or {}).get(key) for r in speculative)

    return Summary(
        release=release,
        name=name,
        presets=_distinct(r["scenario"] for r in speculative),
        kv_cache=data["kv_cache"],
        prompts=data["scenario"]["prompts"],
        tp=data["tp"],
        batches=_distinct(r["batch"] for r in speculative),
        modes=_distinct(r["mode"] for r in speculative),
        prefix_caching=facts("prefix_caching"),
        mamba_cache_mode=facts("mamba_cache_mode"),
        async_scheduling=facts("async_scheduling"),
        model_runner=facts("model_runner"),
        cudagraph_mode=facts("cudagraph_mode"),
        gpu=data["machine"]["gpu"],
        gpus=data["machine"]["gpus"],
        date=date,
        target_errors=sum(_errors(r) for r in speculative),
        target_tokens=sum(r["tokens"] for r in speculative),
        control_errors=sum(_errors(r) for r in control) if has_control else None,
        control_tokens=sum(r["tokens"] for r in control) if has_control else None,
        target_backports=_backports(target),
        control_backports=_backports(control) if has_control else None,
        prefix_hits=hits,
        prefix_queries=_counter(speculative, "queries"),
        verdict=verdict,
        model_class=data["scenario"].get("model_class", "qwen3_next"),
        control_crashed=sum(1 for r in control if r.get("crashed")),
        unexercised=unexercised,
        target_patches=patches,
        digest=digest,
    )


def _release_key(name: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(name), name)
    except InvalidVersion:
        return (1, None, name)


def load(home: Path) -> dict[str, tuple[Summary, ...]]:
    """Every docs/evidence/<release>/*.json under `home`, checked and summarised, by release
    (releases in version order, files by name). No directory, or no file: {}."""
    root = home / EVIDENCE_DIR
    if not root.is_dir():
        return {}
    out: dict[str, tuple[Summary, ...]] = {}
    dirs = sorted(
        (d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")), key=lambda d: _release_key(d.name)
    )
    for folder in dirs:
        summaries = []
        for path in sorted(folder.glob("*.json"), key=lambda p: p.stem):
            where = str(path.relative_to(home))
            try:
                data = json.loads(path.read_text())
            except UnicodeDecodeError:
                raise EvidenceError(f"{where}: not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise EvidenceError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
            summaries.append(summarise(data, folder.name, path.stem, where))
        if summaries:
            out[folder.name] = tuple(summaries)
    return out


def with_upstream_fixes(
    evidence: dict[str, tuple[Summary, ...]], upstream: dict[str, tuple[str, ...]], fixes: dict[str, str | None]
) -> dict[str, tuple[Summary, ...]]:
    """`evidence` with each weak run that shows upstream's own fix holding called upstream-fixed:
    its control is the pristine release, the backport its proof is for (`fixes`: proof name ->
    backport id) is upstream in that release (`upstream`: release -> backport ids), and the same
    proof made a pristine control err on an earlier release without that fix, so the scenario is
    one that shows the bug. Every other weak run stays weak: a clean pristine run alone cannot
    tell a fixed release from a scenario too weak to show the bug."""
    failed: dict[str, str] = {}  # proof -> the newest earlier release whose pristine control erred
    out = {}
    for release in sorted(evidence, key=_release_key):
        summaries = evidence[release]
        out[release] = tuple(
            replace(s, verdict=UPSTREAM_FIXED, failed_pristine_on=failed[s.name])
            if s.verdict == "weak"
            and s.control_backports == ()
            and s.name in failed
            and fixes.get(s.name) in upstream.get(release, ())
            else s
            for s in summaries
        )
        for s in summaries:  # errors, not a control that only died, on a release the bug is in
            if (
                s.verdict in PROVEN
                and s.control_backports == ()
                and (s.control_errors or 0) > 0
                and fixes.get(s.name) not in upstream.get(release, ())
            ):
                failed[s.name] = release
    return out


def with_digests(
    evidence: dict[str, tuple[Summary, ...]], shipped: dict[str, dict[str, str]]
) -> dict[str, tuple[Summary, ...]]:
    """`evidence` with each file whose target recorded its patches judged against what the
    release ships today (`shipped`: release -> {backport id: pinned sha256}): CURRENT when they
    are the same backports with the same patch sha256, EARLIER when not (a patch changed since,
    one joined or left, or the target was a candidate rather than the series). Compared as a
    mapping: verify's --json sorts keys, so a file does not keep the order applied (which the
    pinned series file fixes). Any other file keeps its state."""
    return {
        release: tuple(
            s
            if s.target_patches is None or release not in shipped
            else replace(s, digest=CURRENT if dict(s.target_patches) == shipped[release] else EARLIER)
            for s in summaries
        )
        for release, summaries in evidence.items()
    }


# -- rendering ---------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def heading(release: str) -> str:
    return f"vLLM {release}"


def short_gpu(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100', 'NVIDIA A100-SXM4-80GB' -> 'A100'."""
    words = re.split(r"[ \-]+", name.removeprefix("NVIDIA ").strip())
    kept = [w for w in words if not re.fullmatch(r"\d+GB|HBM\w*|SXM\w*|PCIe|NVL|GeForce", w)]
    return " ".join(kept) or name


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _joined(values, show=str) -> str:
    return "/".join("?" if v is None else show(v) for v in values) or "?"


def _switch(value) -> str:
    return "on" if value is True else "off" if value is False else str(value)


def _site(errors: int | None, tokens: int | None, backports: tuple[str, ...] | None, crashed: int = 0) -> str:
    if errors is None:
        return "-"
    carried = "backports unknown" if backports is None else ", ".join(backports) or "pristine"
    died = f"; {_plural(crashed, 'engine')} died" if crashed else ""
    return f"{_plural(errors, 'error')} in {tokens} tokens{died}; {carried}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def row(s: Summary) -> str:
    run = (
        f"{s.model_class}, {'+'.join(s.presets)}, KV {s.kv_cache}, {s.prompts} prompts, {_joined(s.batches)} a batch, "
        f"{_joined(s.modes)}" + (f", TP={s.tp}" if s.tp > 1 else "")
    )
    engine = f"prefix caching {_joined(s.prefix_caching, _switch)}"
    if any(m is not None for m in s.mamba_cache_mode):
        engine += f" (Mamba {_joined(s.mamba_cache_mode)})"
    engine += (
        f", async scheduling {_joined(s.async_scheduling, _switch)}, {_joined(s.model_runner)} runner, "
        f"CUDA graphs {_joined(s.cudagraph_mode)}"
    )
    hits = (
        "-"
        if s.prefix_hits is None
        else str(s.prefix_hits) + ("" if s.prefix_queries is None else f" of {s.prefix_queries}")
    )
    why = (
        f" (pristine {s.failed_pristine_on} fails)"
        if s.failed_pristine_on
        else f" ({s.unexercised})"
        if s.unexercised
        else ""
    )
    cells = [
        f"[{s.name}]({s.link})",
        s.verdict + why,
        s.digest,
        run,
        engine,
        _site(s.target_errors, s.target_tokens, s.target_backports),
        _site(s.control_errors, s.control_tokens, s.control_backports, s.control_crashed),
        hits,
        f"{short_gpu(s.gpu)}, {s.date}",
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


HEADER = (
    "| evidence | verdict | patches | run | engine as run (target) | target: errors, backports | "
    "control: errors, backports | prefix-cache hits | GPU, date |"
)


def render_page(evidence: dict[str, tuple[Summary, ...]]) -> str:
    lines = [
        "# GPU evidence",
        "",
        f"Generated by `{WRITE_COMMAND}` from the `apply.py verify --json` files in "
        "`docs/evidence/<release>/`; CI fails on drift.",
        "",
        "Each file is one verify run. Verdicts: **control wrong** the control (an install of the same release "
        "without the fix) has errors in every speculative run and the target none; **control crashed** every "
        "control run failed, at least one because its engine died, and the target has no errors; **upstream-fixed** "
        "the release carries upstream's own fix for what the proof is for (`upstream_in` in versions.toml), and "
        "its pristine install passes a proof whose pristine control erred on the earlier release named; **weak** "
        "the control passes too, though the run reached the bug's path, so the scenario does not show the bug; "
        "**not exercised** the control passes and the run never reached the bug's path (named in brackets: for "
        "a GDN proof, or any run against the pristine release that names no other fix, no accepted draft "
        "followed by a step without drafts; no draft accepted; for the prompt sets built to hit the prefix "
        "cache, no hit on the target); **fails** the target has errors; **no control** the target passes, "
        "nothing to compare it with; **uncalibrated** the plain baseline itself strays from the reference, "
        "nothing concluded. Errors and tokens count the speculative runs; engine facts are what vLLM's "
        "resolved config said, not what verify asked for.",
        "",
        "Patches: **current** the target's engines recorded the patches the release's series ships today "
        "(each backport's patch sha256 as pinned in versions.toml); **earlier revision** "
        "they recorded other patches (an earlier revision of the series, or a candidate fix), or the file "
        "was written before verify recorded them; **unknown** the engines could not say. Only a control "
        "wrong or control crashed file with current patches counts as a proof in the support matrix.",
        "",
    ]
    if not evidence:
        lines.append("No GPU evidence is recorded yet: no `docs/evidence/<release>/*.json` file.")
        return "\n".join(lines) + "\n"
    for release, summaries in evidence.items():
        lines += [f"## {heading(release)}", "", HEADER, "|---|---|---|---|---|---|---|---|---|"]
        lines += [row(s) for s in summaries]
        lines.append("")
    return "\n".join(lines)


def matrix_status(summaries: tuple[Summary, ...], page: str = PAGE.as_posix()) -> str:
    """The generated start of a release's verification cell: the proofs of the patches shipped
    today, those of an earlier revision, the other verdicts, GPUs and days, a link. A release
    without a current proof does not read as proven on a GPU."""
    gpus = "/".join(_distinct(short_gpu(s.gpu) for s in summaries))
    days = sorted({s.date for s in summaries})
    when = days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"
    count = {v: sum(s.verdict == v for s in summaries) for v in VERDICTS}
    proofs = [s for s in summaries if s.verdict in PROVEN and s.digest == CURRENT]
    crashed = sum(s.verdict == CONTROL_CRASHED for s in proofs)
    earlier = sum(s.verdict in PROVEN and s.digest == EARLIER for s in summaries)
    unknown = sum(s.verdict in PROVEN and s.digest == UNKNOWN for s in summaries)
    others = [f"{unknown} of unknown patches"] if unknown else []
    if count[UPSTREAM_FIXED]:
        others.append(f"{count[UPSTREAM_FIXED]} {UPSTREAM_FIXED}")
    others.append(f"{count['weak']} weak")
    if count[NOT_EXERCISED]:
        others.append(f"{count[NOT_EXERCISED]} {NOT_EXERCISED}")
    # a target that failed before a fix joined its series is not a failure of today's series
    failed_before = sum(s.verdict == "fails" and s.digest == EARLIER for s in summaries)
    others.append(f"{count['fails'] - failed_before} failing")
    if failed_before:
        others.append(f"{failed_before} failing on an earlier revision")
    if count["no control"]:
        others.append(f"{count['no control']} without a control")
    if count["uncalibrated"]:
        others.append(f"{count['uncalibrated']} uncalibrated")
    link = f"[evidence]({page}#{slug(heading(summaries[0].release))})"
    if not proofs:
        return f"no proof of today's series: {earlier} earlier revision, {', '.join(others)} ({gpus}, {when}; {link})"
    lead = _plural(len(proofs), "proof") + (f" ({crashed} {CONTROL_CRASHED})" if crashed else "")
    parts = [lead] + ([f"{earlier} earlier revision"] if earlier else []) + others
    return f"GPU ({gpus}, {when}): {', '.join(parts)} ({link})"
