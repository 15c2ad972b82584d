"""A/B measurement of vLLM variants installed side by side: each LABEL=DIR is a site-packages
holding one variant, and each engine subprocess imports vLLM from the one being measured."""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import click


def parse(sites: tuple[str, ...]) -> list[tuple[str, str]]:
    parsed = [tuple(x.split("=", 1)) for x in sites]
    if len(parsed) < 2 or any(len(x) != 2 or not Path(x[1]).is_dir() for x in parsed):
        raise click.BadParameter("give two or more LABEL=DIR, each an existing directory", param_hint="--site")
    return parsed


def interleave(sites: list[tuple[str, str]], passes: int, measure_one, keys: tuple[str, ...]) -> dict:
    """Measure each site in turn, pass after pass (A B A B ...), so that slow drift of the machine
    lands on every site alike; ratios of `keys` are taken within a pass, against the first site."""
    runs: dict[str, list[dict]] = {label: [] for label, _ in sites}
    saved = os.environ.get("PYTHONPATH")
    try:
        for n in range(passes):
            for label, path in sites:
                # The engine subprocess imports vLLM from here (engine_env keeps this and adds ours),
                # and this process reads the variant's version from here too.
                os.environ["PYTHONPATH"] = path
                sys.path.insert(0, path)
                try:
                    runs[label].append(measure_one(f"{label}-pass{n}"))
                finally:
                    sys.path.remove(path)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    first = sites[0][0]
    out: dict = {"passes": passes, "sites": dict(sites), "runs": runs, "ratios": {}}
    for label, _ in sites[1:]:
        out["ratios"][f"{label}/{first}"] = {
            key: {"by_pass": (r := [round(b[key] / a[key], 3) for a, b in zip(runs[first], runs[label])]),
                  "median": statistics.median(r)}
            for key in keys}
    return out


def emit(result: dict, out: Path | None) -> None:
    """Print the result as JSON, and keep a copy at `out` when given."""
    text = json.dumps(result, indent=2)
    if out:
        out.write_text(text + "\n")
    click.echo(text)
