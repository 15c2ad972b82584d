"""Server proofs on the GPU machine: `verify --server` against a real `vllm serve` of the tiny
checkpoint, one leg a site, paired as control and target.

A proof of SERVER_PROOFS runs three legs, each in a slot of its own (lab.machine), each with its
own server on a free port:

    raw    the pristine release, serving with the proof's speculation: the control
    fix    the series, the same speculation: the target
    plain  the series without speculation: the calibration (its worst regret sets the threshold,
           as verify's plain baseline does for a local engine)

The machine writes the tiny checkpoint once a release (python -m vllm_backports.verify.tokenizer
on the fix site: the Qwen3-Next class verify runs by default, no MTP layer, which ngram does not
use). A leg (`python3 -m lab.serve leg ...`, on the site's Python path) starts `vllm serve` of it
in a process group of its own (its id in server.pgid, for the machine to stop what a killed leg
leaves), waits for /health (a server that exits first is reported with its log's tail; one that
never answers is stopped at --health-timeout), runs `apply.py verify --server` on the proof's
prompts, stops the server, and writes leg.json: the server's command line, its release (its
/version), the site's applied patches (its vLLM manifest, as verify records engine.patches), and
verify's result. `pair` then writes the proof's verify JSON in the shape docs/evidence/ reads.
Standard library only, beside the project's own package.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .machine import detach

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
# name -> speculative config and prompt sets (verify/scenarios.py). vLLM's own ngram proposer
# drafts only where the context repeats: tool-calls repeats a token skeleton, and the random
# prompts, 64 of them, churn (requests finish every few steps beside drafting ones).
SERVER_PROOFS: dict[str, dict] = {
    "server-ngram": {"speculative": NGRAM, "prompts": {"tool-calls": 24, "random": 64}},
}
LEGS = {"raw": "raw", "fix": "fix", "plain": "fix"}  # leg -> the site it serves from
MAX_TOKENS = 128
MAX_MODEL_LEN = 1024
HEALTH_TIMEOUT_S = 900.0
KV_CACHE_BYTES = 2 << 30  # a fixed KV size each: engines share the GPU
LOG_TAIL = 4000
# exit codes of a leg beside verify's own (0 passed, 1 failed, 2 not judged)
DIED, UNHEALTHY = 3, 4
CLI = "import sys; sys.argv[0] = 'vllm'; from vllm.entrypoints.cli.main import main; main()"


def is_server_proof(name: str) -> bool:
    return name in SERVER_PROOFS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_prompts(path: Path, sets: dict[str, int]) -> Path:
    """The proof's prompts as token ids (verify --prompts JSONL), one group a prompt set."""
    from vllm_backports.verify import model, scenarios

    lines = []
    for kind, count in sets.items():
        for ids in scenarios.prompts(count, model.vocab_size(), kind=kind):
            lines.append(json.dumps({"prompt_token_ids": ids, "group": kind}))
    path.write_text("\n".join(lines) + "\n")
    return path


def serve_command(checkpoint: Path, port: int, speculative: dict | None) -> list[str]:
    cmd = [sys.executable, "-c", CLI, "serve", str(checkpoint), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--max-model-len", str(MAX_MODEL_LEN), "--max-num-seqs", "16", "--max-logprobs", "1"]
    cmd += ["--kv-cache-memory-bytes", str(KV_CACHE_BYTES), "--gpu-memory-utilization", "0.08"]
    cmd += ["--additional-config", json.dumps({"gdn_prefill_backend": "triton"})]
    if speculative is not None:
        cmd += ["--speculative-config", json.dumps(speculative)]
    return cmd


def tail(path: Path, size: int = LOG_TAIL) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-size:].decode(errors="replace")


def healthy(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url + "/health", timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


def wait_healthy(proc: subprocess.Popen, url: str, timeout: float, poll: float = 1.0) -> str | None:
    """None once /health answers 200; else why not: the server exited, or the timeout passed."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            return f"the server exited {proc.returncode} before /health answered"
        if healthy(url):
            return None
        if time.monotonic() > deadline:
            return f"/health did not answer within {timeout:g} s"
        time.sleep(poll)


def stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """The server's whole process group (its engine core and workers too): TERM, then KILL."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def site_patches(site: Path) -> dict[str, str | None] | None:
    """The site's applied patches as verify records a local engine's engine.patches ({}: pristine)."""
    from vllm_backports.verify.engine import manifest_patches

    return manifest_patches(site / "vllm")


def leg(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    speculative = json.loads(args.speculative) if args.speculative else None
    record: dict = {"leg": args.leg, "site": str(args.site), "patches": site_patches(args.site)}

    def finish(code: int, status: str, **more) -> int:
        (out / "leg.json").write_text(json.dumps({**record, "rc": code, "status": status, **more}, indent=2))
        print(f"{args.leg}: {status}", file=sys.stderr)
        return code

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = serve_command(args.checkpoint, port, speculative)
    record["serve"] = ["vllm", *cmd[3:]]
    log = out / "server.log"
    # /server_info names the speculative config; the sampler as verify's engines take it (the
    # start-up's dummy sampling imports FlashInfer otherwise, which the stage does not carry)
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_USE_FLASHINFER_SAMPLER": "0"}
    from vllm_backports.verify.engine import triton_cache_dir

    # one Triton cache for every leg, FLA's autotuning kept in it (vllm_backports/verify/engine.py)
    env["TRITON_CACHE_AUTOTUNING"] = "1"
    env.setdefault("TRITON_CACHE_DIR", triton_cache_dir())
    proc = detach(cmd, log=log, env=env)
    (out / "server.pgid").write_text(f"{proc.pid}\n")
    try:
        why = wait_healthy(proc, url, args.health_timeout)
        if why is not None:
            code = DIED if proc.poll() is not None else UNHEALTHY
            return finish(code, why, log_tail=tail(log))
        verify = [sys.executable, "apply.py", "verify", "--server", url, "--prompts", str(args.prompts)]
        verify += ["--max-tokens", str(args.max_tokens), "--work-dir", str(out / "work"), "--json"]
        with open(out / "verify.out", "w") as stdout:
            rc = subprocess.run(verify, stdout=stdout, env={**os.environ, "PYTHONUNBUFFERED": "1"}).returncode
        died = proc.poll() is not None
    finally:
        stop(proc)
    result = out / "work" / "verify.json"
    if rc in (0, 1) and result.is_file():
        return finish(rc, "judged", server_died=died)
    said = tail(out / "verify.out", 600).strip()
    status = f"verify exited {rc}" + (", the server having died" if died else "") + f": {said}"
    return finish(2, status, server_died=died, log_tail=tail(log))


# -- pairing -------------------------------------------------------------------------------------


def _errors(result: dict, threshold: float) -> tuple[int, float]:
    from vllm_backports.verify.oracle import judge

    verdict = judge([r["regrets"] for r in result["rows"]], threshold)
    return verdict.errors, verdict.worst


def pair(legs_dir: Path, release: str, name: str, machine: dict) -> tuple[dict | None, list[str]]:
    """(the proof's verify JSON, or None where a leg left nothing to judge; a line a leg).

    The control is the raw leg, the target the fix leg, the calibration the plain leg: the
    threshold is the plain server's worst regret calibrated as a local verify calibrates on its
    plain engine (run.calibrated_threshold), and every leg's tokens are judged by it again."""
    from vllm_backports.verify.run import CALIBRATION_CAP, calibrated_threshold

    legs, results, lines = {}, {}, []
    for label in LEGS:
        path = legs_dir / label / "leg.json"
        if not path.is_file():
            lines.append(f"{label}: no leg.json (the leg did not run to its end)")
            continue
        legs[label] = json.loads(path.read_text())
        line = f"{label}: exit {legs[label]['rc']}, {legs[label]['status']}"
        if legs[label].get("log_tail"):
            line += "\n  server log tail:\n  " + legs[label]["log_tail"].strip().replace("\n", "\n  ")
        lines.append(line)
        result = legs_dir / label / "work" / "verify.json"
        if legs[label]["status"] == "judged" and result.is_file():
            results[label] = json.loads(result.read_text())
    crashed = "raw" in legs and legs["raw"].get("server_died") and "raw" not in results
    if not {"fix", "plain"} <= results.keys() or not ("raw" in results or crashed):
        return None, lines
    noise = _errors(results["plain"], 0.0)[1]
    threshold = calibrated_threshold(noise)
    rows = []
    for label in ("plain", "fix", "raw"):
        row = {
            "scenario": "baseline" if label == "plain" else f"{name}",
            "site": "control" if label == "raw" else "target",
            "leg": label,
            "batch": 16,
            "mode": "graphs",
            "tokens": 0,
            "errors": 0,
            "engine": None,
        }
        if label in results:
            r = results[label]
            errors, worst = _errors(r, threshold)
            spec = r.get("spec_decode")
            row.update(
                tokens=r["tokens"],
                errors=errors,
                worst_regret=round(worst, 3),
                engine={
                    "vllm": r["vllm"],
                    "backports": None if legs[label]["patches"] is None else list(legs[label]["patches"]),
                    "patches": legs[label]["patches"],
                    # what the server does not say of itself: unknown, not assumed
                    **dict.fromkeys(("prefix_caching", "mamba_cache_mode", "async_scheduling"), None),
                    **dict.fromkeys(("cudagraph_mode", "model_runner", "prefix_cache"), None),
                },
                speculative_config=r.get("speculative_config"),
                spec_decode=spec,
                groups=r.get("groups"),
            )
            if spec is not None:
                row["exercised"] = {"accepted_drafts": spec["accepted_tokens"], "draft_tokens": spec["draft_tokens"]}
        else:  # the control's server died under verify's requests: a crash, as verify records one
            row["crashed"] = True
            row["backports"] = list(legs[label]["patches"] or [])
        row["serve"] = legs[label]["serve"]
        rows.append(row)
    target = [r for r in rows if r["site"] == "target"]
    control = [r for r in rows if r["site"] == "control"]
    passed = all(r["errors"] == 0 for r in target)
    control_failed = all(r["errors"] > 0 or r.get("crashed") for r in control)
    proof = (
        "control fails, target passes"
        if control_failed and passed
        else "target fails"
        if not passed
        else "weak: the control passes too"
    )
    fix = results["fix"]
    data = {
        "command": "verify",
        "vllm": fix["vllm"],
        "kv_cache": "auto",
        "threshold": threshold,
        "threshold_source": "the plain server's worst regret (run.calibrated_threshold)",
        "baseline_worst_regret": round(noise, 3),
        "tp": 1,
        "calibrated": rows[0]["errors"] == 0 and noise <= CALIBRATION_CAP,
        "passed": passed,
        "control": f"raw: pristine vLLM {release}, served by vllm serve",
        "control_failed": control_failed,
        "proof": proof,
        "reference": fix["reference"],
        "scenario": {**fix["scenario"], "prompts": f"server: {'+'.join(SERVER_PROOFS[name]['prompts'])}"},
        "server": {label: {"serve": legs[label]["serve"], "status": legs[label]["status"]} for label in legs},
        "machine": machine,
        "rows": rows,
    }
    return data, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.serve")
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("leg", help="serve from a site, verify --server, stop, write leg.json")
    p.add_argument("--leg", required=True, choices=list(LEGS))
    p.add_argument("--site", required=True, type=Path)
    p.add_argument("--checkpoint", required=True, type=Path)
    p.add_argument("--prompts", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--speculative", default="", help="the --speculative-config JSON; empty: none")
    p.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    p.add_argument("--health-timeout", type=float, default=HEALTH_TIMEOUT_S)
    args = parser.parse_args(argv)
    return leg(args)


if __name__ == "__main__":
    sys.exit(main())
