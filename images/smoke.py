"""Smoke test of an image: every backport versions.toml promises for this release is recorded as
applied, every patched file is as written, and (in the image) vllm and every module the series
patches import and the entrypoint's guard reads the install as consistent. On a GPU, --verify runs the proofs marked for the smoke test
(vllm_backports/verify/proofs.py) on the image's patched vLLM, each judged token by token.
Without one, --model-check runs `apply.py verify --model` as a user would in the image, on a
checkpoint written there with its tokenizer and chat template, and expects it to stop at the
missing GPU only, every check before it passed.

    python3 images/smoke.py --vllm 0.20.0 --status status.json [--import-vllm] [--model-check WORK]
    python3 images/smoke.py --vllm 0.28.0 --verify /tmp/verify --prefill-backend flashinfer
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vllm_backports.catalogue import Catalogue  # noqa: E402
from vllm_backports.entrypoint import guard  # noqa: E402
from vllm_backports.resolve import local_build_of  # noqa: E402
from vllm_backports.verify.proofs import option, smoke_runs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
APPLY = ROOT / "apply.py"
# verify --model refuses a machine without a GPU only once prompts, checkpoint and tokenizer read.
NO_GPU = "verify needs a CUDA GPU; none is visible"
# ... and a prompt rendered too long for the checkpoint's positions, before that
TOO_LONG = "and --max-tokens 32768 do not fit the"
# One chat turn through the checkpoint's own template, as a user's --prompts file gives it.
CHAT_PROMPT = {"messages": [{"role": "user", "content": "Rename x to y:\nx = 1\nprint(x)"}], "group": "smoke"}


def verify_all(version: str, prefill_backend: str, out: Path, run: Callable = subprocess.run) -> list[str]:
    """Each smoke proof as one `apply.py verify --json` into OUT/NAME.json (engine logs under
    OUT/NAME/); the problems found, one line each. All run, so one failure shows every other."""
    problems = []
    for name, options in smoke_runs(version, prefill_backend).items():
        print(f"smoke: verify {name}: {' '.join(options)}", file=sys.stderr, flush=True)
        with open(out / f"{name}.json", "w") as stdout:
            code = run(
                [sys.executable, str(APPLY), "verify", *options, "--work-dir", str(out / name), "--json"], stdout=stdout
            ).returncode
        try:
            result = json.loads((out / f"{name}.json").read_text())
        except ValueError:
            result = {}
        if code != 0 or result.get("passed") is not True:
            problems.append(f"verify {name} did not pass (exit {code}; {out / name}.json)")
        elif option(options, "--prefix-caching") == "on" and not hit(result):
            # prompts that fill no cache block pass without exercising what the run is for
            problems.append(f"verify {name} passed without a prefix-cache hit: it tested nothing ({out / name}.json)")
    return problems


def model_check(work: Path, run: Callable = subprocess.run) -> list[str]:
    """`verify --model` with no GPU visible (on any machine): the checkpoint, its tokenizer and
    chat template and a --prompts file all read, then the refusal of a machine without a GPU.
    Any other stop is a problem (one line), as is a run that goes on. So that the refusal cannot
    pass for the checks before it, the same run asked for more tokens than the checkpoint's
    positions must be refused for its rendered prompt's length."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    checkpoint = work / "checkpoint"
    made = run(
        [sys.executable, "-m", "vllm_backports.verify.tokenizer", str(checkpoint), "--mtp"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    if made.returncode != 0:
        return [
            f"verify --model: the tiny checkpoint was not written (exit {made.returncode}): {last_line(made.stderr)}"
        ]
    prompts = work / "prompts.jsonl"
    prompts.write_text(json.dumps(CHAT_PROMPT) + "\n")
    verify = [sys.executable, str(APPLY), "verify", "--model", str(checkpoint), "--prompts", str(prompts)]
    problems = []
    for extra, wanted in (([], NO_GPU), (["--max-tokens", "32768"], TOO_LONG)):
        got = run([*verify, *extra, "--work-dir", str(work / "verify")], capture_output=True, text=True, env=env)
        line = last_line(got.stderr)
        if got.returncode != 2 or wanted not in line:
            problems.append(
                f"verify --model {' '.join(extra) or '(as given)'} did not stop at {wanted!r} "
                f"(exit {got.returncode}): {line}"
            )
    return problems


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(nothing on stderr)"


def hit(result: dict) -> bool:
    """Whether a speculative row of verify's JSON took prompt tokens from the prefix cache."""
    for row in result.get("rows", []):
        if row.get("scenario") == "baseline":
            continue
        if ((row.get("engine") or {}).get("prefix_cache") or {}).get("hits"):
            return True
        if any(n != "0" for n in row.get("prefix_hit_lengths") or {}):
            return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vllm", required=True)
    parser.add_argument("--status", type=Path)
    parser.add_argument("--import-vllm", action="store_true")
    parser.add_argument("--verify", type=Path, metavar="OUT", help="run the smoke proofs, results under OUT")
    parser.add_argument("--prefill-backend", default="triton", help="the arch's GDN prefill backend (with --verify)")
    parser.add_argument("--model-check", type=Path, metavar="WORK", help="verify --model up to the GPU (no GPU)")
    args = parser.parse_args()
    if args.verify:
        args.verify.mkdir(parents=True, exist_ok=True)
        problems = verify_all(args.vllm, args.prefill_backend, args.verify)
        for p in problems:
            print(f"smoke: {p}", file=sys.stderr)
        return 1 if problems else 0
    if args.status is None:
        parser.error("--status is required without --verify")
    cat = Catalogue(Path(__file__).resolve().parent.parent)
    release = cat.releases[args.vllm]

    def is_release(version: str | None) -> bool:
        # A -cu129 base image installs a local build, 0.20.0+cu129: the same release.
        return version == args.vllm or (version is not None and local_build_of(cat, version) == args.vllm)

    status = json.loads(args.status.read_text())
    problems = []
    if not is_release(status.get("vllm")):
        problems.append(f"status is for vLLM {status.get('vllm')}, not {args.vllm}")
    applied = {a["id"] for a in status.get("applied", [])}
    problems += [f"backport {b} is not applied" for b in release.backports if b not in applied]
    if not status.get("consistent"):
        problems.append("status is not consistent: " + json.dumps(status.get("files")))
    if args.import_vllm:
        import importlib.metadata

        import vllm  # noqa: F401  (importing is the test)

        if not is_release(importlib.metadata.version("vllm")):
            problems.append(f"vllm {importlib.metadata.version('vllm')} imported, not {args.vllm}")
        # `import vllm` loads none of the patched modules: a patch that breaks one must fail here.
        patched = cat.series(release.series).paths if release.series else ()
        for path in sorted(p for p in patched if p.endswith(".py")):
            name = path.removesuffix(".py").replace("/", ".")
            try:
                importlib.import_module(name)
            except Exception as exc:  # any failure to import is the finding
                problems.append(f"{name} does not import: {exc.__class__.__name__}: {exc}")
        # The entrypoint's guard reads the same install; with no flags no known bug applies.
        lines, unwell = guard(cat, [])
        problems += [f"the entrypoint's guard: {p}" for p in unwell]
    if args.model_check:
        args.model_check.mkdir(parents=True, exist_ok=True)
        problems += model_check(args.model_check)
    for p in problems:
        print(f"smoke: {p}", file=sys.stderr)
    if not problems:
        print(f"smoke: vLLM {args.vllm} carries {', '.join(sorted(applied)) or 'no backports'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
