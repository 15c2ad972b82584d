"""`check --fetch` of one release with an empty cache, against downloading its whole wheel.

    python benchmarks/bench_fetch.py --vllm 0.20.0 [--repeat 5] [--download]

Prints one JSON object: wall seconds per run (median, min, max), bytes and requests that the range
reads cost, the wheel's size, and with --download the time to fetch the whole wheel once.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import requests

REPO = Path(__file__).resolve().parent.parent


@click.command()
@click.option("--vllm", "version", default="0.20.0")
@click.option("--repeat", type=click.IntRange(min=1), default=5)
@click.option("--download", is_flag=True, help="Also time downloading the whole wheel once.")
def main(version: str, repeat: int, download: bool) -> None:
    sys.path.insert(0, str(REPO))
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.pypi import release_files

    releases = Catalogue(REPO).releases
    if version not in releases:
        raise click.BadParameter(f"{version}: not a release versions.toml lists", param_hint="--vllm")
    release = releases[version]
    wheel = next(w for w in release_files(requests.Session(), version) if w.filename == release.wheel)
    times, fetched = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "VLLM_BACKPORTS_CACHE": cache}
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, str(REPO / "apply.py"), "check", "--vllm", version, "--fetch", "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            times.append(time.perf_counter() - start)
            fetched.append(json.loads(out))
    result = {
        "release": version, "wheel": wheel.filename, "wheel_bytes": wheel.size,
        "check_fetch_s": {"median": statistics.median(times), "min": min(times), "max": max(times), "runs": repeat},
        "bytes_fetched": fetched[0]["bytes_fetched"], "requests": fetched[0]["requests"],
    }
    if download:
        start = time.perf_counter()
        size = 0
        with requests.get(wheel.url, stream=True, timeout=600) as r:
            for chunk in r.iter_content(1 << 20):
                size += len(chunk)
        result["wheel_download_s"] = time.perf_counter() - start
        assert size == wheel.size
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
