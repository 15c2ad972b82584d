"""What a verify run tells a person: the verdict line and exit code of any run, and the one-screen
report of `verify --model` (release, backports, configuration, per scenario sequences, tokens,
errors, worst regret and acceptance, then the verdict)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from .run import CALIBRATION_CAP, JUDGED_LOGPROBS, OUTPUT_LOGPROB_CAP, round_errors_key
from .served import VLLM_REFERENCE


def verdict(result: dict) -> tuple[str, int]:
    """The run's last line and exit code: 2 when the plain engine does not calibrate (nothing is
    concluded), 1 when a target token is an error, 0 otherwise. With --float32-reference, two
    references that disagree fail the run too."""
    tokens_calibrate = result["baseline_worst_regret"] <= CALIBRATION_CAP
    strays = {
        "prompt_logprobs": lambda j: (
            f"prompt logprobs stray from the reference (worst difference "
            f"{j['baseline_worst_difference']:.2f}, more than {CALIBRATION_CAP:.0f})"
        ),
        "output_logprobs": lambda j: (
            f"output logprobs stray from the reference (worst sequence mean "
            f"{j['baseline_worst_mean_difference']:.2f} nats, more than {OUTPUT_LOGPROB_CAP})"
        ),
    }
    for key, says in strays.items():
        judged = result.get(key)
        if not result["calibrated"] and judged and not judged["calibrated"] and tokens_calibrate:
            return f"calibration failed: the plain baseline's {says(judged)}; nothing can be concluded", 2
    later = sorted(
        {
            x["round"]
            for r in result["rows"]
            if r["scenario"] == "baseline"
            for x in r.get("rounds") or []
            if x["round"] > 1 and (x["errors"] or any(x.get(round_errors_key(k)) for k in JUDGED_LOGPROBS))
        }
    )
    if not result["calibrated"] and later and result["baseline_worst_regret"] <= CALIBRATION_CAP:
        return (
            f"calibration failed: the plain baseline's round {', '.join(map(str, later))} strays from the reference "
            "(its first round, which calibrates, does not): without speculation too; nothing can be concluded",
            2,
        )
    if not result["calibrated"]:
        own = result.get("reference") == VLLM_REFERENCE
        return (
            f"calibration failed: the plain baseline itself strays from "
            f"{'its own teacher-forced output' if own else 'the reference'} "
            f"(worst regret {result['baseline_worst_regret']:.2f}"
            + (f", more than {CALIBRATION_CAP:.0f}" if own else "")
            + "); nothing can be concluded",
            2,
        )
    cross = result.get("float32")
    if cross is not None and not cross["agree"]:
        return "verify: FAILED: the float32 reference and vLLM's own disagree (see float32 above)", 1
    if result["passed"] and result.get("control_failed") is False:
        return "verify: passed, but the control passed too: this scenario does not show the bug", 0
    if result["passed"]:
        return "verify: passed" + (" (the control fails)" if result.get("control_failed") else ""), 0
    target = [r for r in result["rows"] if r["site"] == "target"]
    if all(r["errors"] == 0 for r in target):  # what failed is a judged logprob
        if any((r.get("output_logprobs") or {}).get("errors") for r in target):
            return "verify: FAILED: speculative engines' output logprobs drift from the model's", 1
        return "verify: FAILED: speculative engines' prompt logprobs are not the model's", 1
    return "verify: FAILED: speculative output is not what the model predicts", 1


def output_logprob_cell(row: dict) -> str:
    """A row's sequences whose output logprobs drift, for the table, "-" where not judged."""
    judged = row.get("output_logprobs")
    return "-" if not judged else f"{judged['errors']} ({judged['worst_mean_difference']:.3f})"


def prompt_logprob_cell(row: dict) -> str:
    """A row's prompt-logprob errors for the table, "-" where they were not judged."""
    judged = row.get("prompt_logprobs")
    return "-" if not judged else str(judged["errors"])


def _where(row: dict) -> str:
    return f"{row['scenario']}/{row['site']} b{row['batch']} {row['mode']}"


def judged_lines(result: dict) -> list[str]:
    """The lines under verify's table for --rounds (errors and accepted tokens per round),
    --prompt-logprobs and --output-logprobs (the threshold and where errors sit) and
    --check-accepted-counts."""
    lines = []
    logprobs = result.get("prompt_logprobs")
    if logprobs:
        lines.append(
            f"prompt logprobs: error: |vLLM - reference| > {logprobs['threshold']:.2f} nats "
            f"(plain engine's worst {logprobs['baseline_worst_difference']:.2f})"
        )
    outputs = result.get("output_logprobs")
    if outputs:
        lines.append(
            f"output logprobs: error: a sequence's mean |vLLM - reference| > {outputs['threshold']:.4f} nats "
            f"(plain engine's worst mean {outputs['baseline_worst_mean_difference']:.4f})"
        )
    for r in result["rows"]:
        rounds = r.get("rounds")
        if rounds:
            errors = ", ".join(str(x["errors"]) for x in rounds)
            accepted = [x.get("accepted") for x in rounds]
            said = "" if all(a is None for a in accepted) else f"; accepted {', '.join(map(str, accepted))}"
            lines.append(f"{escape(_where(r))}: errors by round {errors}{said}")
        judged = r.get("prompt_logprobs")
        if judged and judged["errors"]:
            lines.append(
                f"{escape(_where(r))}: prompt logprobs off at {judged['errors']} of {judged['positions']} positions "
                f"({judged['bad_sequences']} of {judged['sequences']} prompts; worst {judged['worst_difference']:.2f}"
                + (f", {judged['missing']} missing" if judged["missing"] else "")
                + ")"
            )
        drift = r.get("output_logprobs")
        if drift and drift["errors"]:
            lines.append(
                f"{escape(_where(r))}: output logprobs drift in {drift['errors']} of {drift['sequences']} sequences "
                f"(worst mean {drift['worst_mean_difference']:.3f}, worst token {drift['worst_difference']:.2f}"
                + (f", {drift['missing']} missing" if drift["missing"] else "")
                + ")"
            )
        counts = r.get("accepted_counts")
        if counts:
            lines.append(f"{escape(_where(r))}: {escape(accepted_counts_line(counts))}")
        if r.get("align_shifts"):
            lines.append(f"{escape(_where(r))}: {escape(align_shifts_line(r['align_shifts']))}")
    return lines


def align_shifts_line(shifts: dict) -> str:
    """One line of the align-mode shift count (verify/shifts.py summarise)."""
    if shifts["status"] != "counted":
        return f"align shifts {shifts['status']}: {shifts['why']}"
    by_rows = ", ".join(f"{n} of {rows} row(s)" for rows, n in shifts["in_block_shifts"].items()) or "none"
    overlapping = shifts.get("overlapping")
    window = "" if overlapping is None else f"{overlapping} overlapping in a {shifts['conv_rows']}-row window; "
    return (
        f"align shifts within a block: {window}{by_rows}; {shifts['cross_block_copies']} copies to another block, "
        f"over {shifts['rows']} rows in {shifts['steps']} steps"
    )


def accepted_counts_line(counts: dict) -> str:
    """One line of the accepted-count range check (verify/counts.py summarise)."""
    if counts["status"] != "checked":
        return f"accepted counts {counts['status']}: {counts['why']}"
    low, high = counts["range"]
    seen = f"{counts['min']}..{counts['max']} over {counts['rows']} speculative rows in {counts['builds']} builds"
    startup = (counts.get("startup") or {}).get("outside")
    if startup:  # dummy inputs of the engine's own start: said, not judged
        seen += f" (and {startup} outside in the engine's start-up runs)"
    if counts["in_range"]:
        return f"accepted counts in {low}..{high}: {seen}"
    return f"accepted counts OUTSIDE {low}..{high}: {counts['outside']} rows; {seen}"


def _switch(engine_value, asked: str) -> str:
    if engine_value is None:
        return asked
    return "on" if engine_value else "off"


def _acceptance(a: dict | None) -> str:
    if not a:
        return "-"
    mean = f" ({a['mean_accepted_length']:.2f})" if a.get("mean_accepted_length") is not None else ""
    return f"{100 * a['rate']:.0f}%{mean}"


def model_report(result: dict) -> tuple[list[str], Table, list[str]]:
    """(lines above the table, the table, lines below it) of a `verify --model` result."""
    s, m = result["scenario"], result["model"]
    base: dict = next((r for r in result["rows"] if r["scenario"] == "baseline"), {})
    engine = base.get("engine") or {}
    backports = result.get("backports")
    carried = "unknown" if backports is None else ", ".join(backports) or "none (pristine)"
    mtp = f", {m['mtp_layers']} MTP layer{'s' if m['mtp_layers'] != 1 else ''}" if m["mtp_layers"] else ""
    groups = ", ".join(f"{g} {n}" for g, n in s["groups"].items())
    head = [
        f"vLLM {result['vllm']}, backports: {escape(carried)}",
        f"model {escape(m['path'])}: {escape(str(m['architecture']))} ({m['family']}{mtp}, {m['weight_gib']} GiB)",
        f"engines, one at a time: TP {result['tp']}, gpu-memory-utilization {s['gpu_memory_utilization']:.2f}"
        + (f", KV cache {s['kv_cache_gib']} GiB" if s.get("kv_cache_gib") else "")
        + f", KV {result['kv_cache']}, prefix caching {_switch(engine.get('prefix_caching'), s['prefix_caching'])}, "
        f"async scheduling {_switch(engine.get('async_scheduling'), s['async_scheduling'])}, batch {s['batch']}, "
        f"{'/'.join(s['modes'])}, max_model_len {s['max_model_len']}",
        f"prompts {escape(s['prompts'])}: {s['prompt_count']} ({escape(groups)}), up to {s['max_tokens']} tokens each",
        f"reference: the plain engine teacher-forced (eager, no prefix caching); error: regret > "
        f"{result['threshold']:.2f} nats (plain engine's worst {result['baseline_worst_regret']:.2f})",
    ]
    table = Table(show_edge=False, pad_edge=False)
    several = len(s["modes"]) > 1
    columns = ["scenario", "site", *(["mode"] if several else []), "seqs", "tokens", "errors", "worst", "first err"]
    # accepted: of the drafted tokens (and the tokens a speculative step emits on average)
    for col in [*columns, "accepted", "prefix hits", "tok/s"]:
        table.add_column(col, no_wrap=True)
    below = []
    for r in result["rows"]:
        style = "green" if r["errors"] == 0 and not r.get("crashed") else "bold red"
        errors = "crashed" if r.get("crashed") else str(r["errors"])
        cache = (r.get("engine") or {}).get("prefix_cache") or {}
        hits = cache.get("hits_total", cache.get("hits")) if isinstance(cache, dict) else None
        table.add_row(
            r["scenario"],
            r["site"],
            *([r["mode"]] if several else []),
            str(r["sequences"]),
            str(r["tokens"]),
            f"[{style}]{errors}[/]",
            "-" if r["worst_regret"] is None else f"{r['worst_regret']:.2f}",
            "-" if r["first_error_at"] is None else str(r["first_error_at"]),
            _acceptance(r.get("acceptance")),
            "-" if hits is None else str(hits),
            f"{r['tokens_per_s']:.0f}",
        )
        bad = {g: v for g, v in (r.get("groups") or {}).items() if v["errors"]}
        if bad:
            where = ", ".join(
                f"{escape(g)} ({v['bad_sequences']} of {v['sequences']} sequences)" for g, v in bad.items()
            )
            below.append(f"{r['scenario']}/{r['site']} {r['mode']}: errors in {where}")
        if r.get("crashed"):
            below.append(f"{r['scenario']}/{r['site']} {r['mode']}: {escape(r['crashed'])}")
    cross = result.get("float32")
    if cross is not None:
        if cross["agree"]:
            below.append(
                f"float32: transformers' float32 reference agrees on every verdict (error: regret > "
                f"{cross['threshold']:.2f}; its plain-engine worst {cross['baseline_worst_regret']:.2f})"
            )
        else:
            off = [f"{p['scenario']}/{p['site']} {p['errors']} vs {p['float32_errors']}" for p in cross["rows"]]
            off = [o for o, p in zip(off, cross["rows"], strict=True) if not p["agrees"]]
            below.append(
                "float32: [bold red]disagrees[/] ("
                + ("; ".join(off) + " errors, vLLM's vs float32's" if off else "it does not calibrate")
                + ")"
            )
    line, _ = verdict(result)
    return head, table, [*below, line]
