"""`apply.py verify --server URL`: a running `vllm serve`, judged through its own OpenAI API.

No GPU, no vLLM and no tokenizer here: every request carries token ids.

1. GET /v1/models (the served model, its max_model_len) and /version (vLLM's release; a server
   without it is not vLLM's). /server_info names the speculative config where the server serves it
   (vLLM only does with VLLM_SERVER_DEV_MODE=1); /metrics' spec-decode counters, read before and
   after the decoding, say whether it drafted and how much was accepted.
2. Each prompt to token ids (POST /tokenize: a chat through the server's own template), then
   decoded greedily by POST /v1/completions, with whatever speculation the server runs.
3. Each prompt + output teacher-forced by the same server: one more completion of max_tokens=1
   with prompt_logprobs=1. That is a prefill, which never speculates, and vLLM computes it whole:
   a request that asks for prompt logprobs skips the prefix cache (v1/core/kv_cache_manager.py,
   get_computed_blocks: "When the request requires prompt logprobs, we skip prefix caching").
4. An output token's regret is the best log-probability at its position minus its own
   (teacher.regrets, as `verify --model` judges). prompt_logprobs=1 returns at every position
   the top-1 token and the prompt's own token (one entry where they are the same), so the best is
   exact, not a bound.

There is no plain engine to calibrate on: the threshold is --threshold, or the floor of the
calibrated one (run.calibrated_threshold(0) = 1 nat), which every recorded `verify --model` run
used (their plain engines' worst regrets: 0.03 to 0.21 nats).

vLLM's request fields relied on (CompletionRequest, in vllm/entrypoints/openai/protocol.py, and
in vllm/entrypoints/openai/completion/protocol.py once that was split out): `prompt` as a list of
token ids,
`prompt_logprobs` (a vLLM extra, capped by the server's --max-logprobs, default 20),
`return_token_ids` (vLLM 0.10.2+: the choice's `token_ids`), `echo`, `max_tokens`. max_tokens=0
is taken only with echo=True and then runs as 1 (to_sampling_params: echo_without_generation),
so the teacher-forcing request asks for 1 and no echo.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from . import prompts, run, teacher
from .oracle import judge
from .served import MAX_TOKENS, by_group

SERVER_REFERENCE = "server-teacher-forced"
PROMPT_LOGPROBS = "a prompt_logprobs request"
TIMEOUT_S = 120.0
BATCH = 16
RETRY_STATUS = (429, 502, 503, 504)  # busy or restarting: asked again, with backoff, until the timeout
BACKOFF_S = (0.25, 8.0)  # first wait, longest wait
# Greedy decoding as the prefill's logprobs see it: a server's generation_config.json can set
# penalties that vLLM applies when a request leaves them out (CompletionRequest's
# default_sampling_params), and a penalised choice is not the model's best token.
NEUTRAL = {"temperature": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
SPEC_COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
}


class ServerError(UsageError):
    """The server cannot be judged: unreachable, not vLLM, busy past the timeout, or refusing what
    verify asks. Nothing is concluded (exit 2)."""


@dataclass(frozen=True)
class ServerPlan:
    url: str
    model: str | None  # None: the one model the server lists
    prompts: Path | None  # None: the built-in set
    max_tokens: int = MAX_TOKENS
    threshold: float | None = None
    timeout: float = TIMEOUT_S
    batch: int = BATCH


def base_url(url: str) -> str:
    """The server's root: http(s)://host:port, with a trailing / or /v1 taken off."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--server {url}: not an http(s) URL (e.g. http://localhost:8000)")
    path = parts.path.rstrip("/").removesuffix("/v1")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _loopback(host: str | None) -> bool:
    if host is None or host == "localhost":
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Redirected(Exception):
    def __init__(self, code: int, newurl: str):
        super().__init__(code, newurl)
        self.code, self.newurl = code, newurl


class _NoPostRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects followed for GET; a POST's refused, as urllib would resend it as a GET without
    its body (301, 302, 303) or not at all (307, 308)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if req.data is not None:
            fp.close()
            raise _Redirected(code, newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Client:
    """JSON over HTTP to one server: the environment's proxies honoured (no_proxy included), and
    none for a loopback server. A busy answer (429, 5xx of RETRY_STATUS) or a dropped connection
    is asked again with backoff until `timeout` seconds from the first try."""

    def __init__(self, url: str, timeout: float, sleep: Callable[[float], None] = time.sleep):
        self.url = base_url(url)
        self.timeout = timeout
        self.sleep = sleep
        handlers: list[urllib.request.BaseHandler] = [_NoPostRedirect()]
        if _loopback(urllib.parse.urlsplit(self.url).hostname):
            handlers.append(urllib.request.ProxyHandler({}))
        self.opener = urllib.request.build_opener(*handlers)
        self.headers = {"Content-Type": "application/json"}
        if os.environ.get("VLLM_API_KEY"):  # vllm serve --api-key's, which its /v1 paths ask for
            self.headers["Authorization"] = f"Bearer {os.environ['VLLM_API_KEY']}"

    def call(self, path: str, body: dict | None = None, *, first: bool = False) -> tuple[int, Any]:
        """(status, parsed JSON or the text when not JSON) of GET `path`, or POST `body`. A status
        of 400 and up comes back too, except the busy ones, retried. `first`: the first contact,
        where a connection that fails is an unreachable server, not a busy one."""
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + self.timeout
        wait, why = BACKOFF_S[0], ""
        while True:
            req = urllib.request.Request(self.url + path, data=data, headers=self.headers)
            try:
                with self.opener.open(req, timeout=self.timeout) as resp:
                    return resp.status, _parse(_read(resp, deadline))
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRY_STATUS:
                    return exc.code, _parse(exc.read())
                why = f"HTTP {exc.code}"
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                    raise ServerError(
                        f"--server {self.url}: {path} took longer than --timeout {self.timeout:g} s"
                    ) from None
                if first:
                    said = getattr(reason, "strerror", None) or reason
                    raise ServerError(f"--server {self.url}: cannot connect ({said})") from None
                why = str(reason)
            except _Redirected as exc:
                raise ServerError(
                    f"--server {self.url}: {path} is redirected to {exc.newurl} (HTTP {exc.code}): "
                    "give --server the address it redirects to"
                ) from None
            except http.client.IncompleteRead as exc:  # cut off mid-answer: dropped, asked again
                why = repr(exc)
            except http.client.HTTPException as exc:  # the port speaks something else (SSH, TLS)
                raise ServerError(
                    f"--server {self.url}: {path}: not an HTTP answer ({type(exc).__name__}: {str(exc)[:80]})"
                ) from None
            if time.monotonic() + wait > deadline:
                raise ServerError(
                    f"--server {self.url}: {path} still refused after --timeout {self.timeout:g} s ({why})"
                )
            self.sleep(wait)
            wait = min(wait * 2, BACKOFF_S[1])


def _read(resp, deadline: float) -> bytes:
    """The body, read in pieces: the socket's timeout bounds each read alone, so a server that
    trickles its answer would hold a request past --timeout without this deadline."""
    pieces = []
    while piece := resp.read1(1 << 16):
        pieces.append(piece)
        if time.monotonic() > deadline:
            raise TimeoutError
    if getattr(resp, "length", None):  # closed short of its Content-Length: read1 says b"", not why
        raise http.client.IncompleteRead(b"".join(pieces), resp.length)
    return b"".join(pieces)


def _parse(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def error_message(body: Any) -> str:
    """vLLM's error text: {"error": {"message": ...}} (newer) or {"message": ...} (older)."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
        if isinstance(body.get("detail"), str):
            return body["detail"]
    return str(body)[:200]


@dataclass(frozen=True)
class Served:
    url: str
    vllm: str
    model: str
    max_model_len: int | None
    models: list[str]


def identify(client: Client, model: str | None) -> Served:
    """The served model (`model`, or the only one listed) and the server's vLLM release."""
    url = client.url
    status, body = client.call("/v1/models", first=True)
    if status == 401:
        raise ServerError(
            f"--server {url}: /v1/models asks for an API key (vllm serve --api-key): set VLLM_API_KEY to it"
        )
    cards = body.get("data") if isinstance(body, dict) else None
    if status != 200 or not isinstance(cards, list) or not all(isinstance(c, dict) and "id" in c for c in cards):
        raise ServerError(f"--server {url}: /v1/models answers HTTP {status}, not a model list (not an OpenAI server)")
    ids = [str(c["id"]) for c in cards]
    status, version = client.call("/version")
    if status != 200 or not isinstance(version, dict) or not isinstance(version.get("version"), str):
        raise ServerError(
            f"--server {url}: no vLLM /version (HTTP {status}); verify --server judges vLLM's own OpenAI server"
        )
    if model is None:
        if len(ids) != 1:
            listed = ", ".join(ids) or "none"
            raise ServerError(f"--server {url} serves {len(ids)} models ({listed}): name one with --model")
        model = ids[0]
    elif model not in ids:
        raise ServerError(f"--model {model}: not served by {url} (it serves {', '.join(ids) or 'none'})")
    card = cards[ids.index(model)]
    mml = card.get("max_model_len")
    return Served(url, version["version"], model, mml if isinstance(mml, int) else None, ids)


def speculative_config(client: Client) -> tuple[Any, str]:
    """(the server's speculative config, where it was read or why not). vLLM serves /server_info
    only with VLLM_SERVER_DEV_MODE=1 (vllm/entrypoints/openai/api_server.py); its vllm_config is
    JSON with ?config_format=json (newer releases) or the config's text."""
    status, body = client.call("/server_info?config_format=json")
    if status != 200 or not isinstance(body, dict) or "vllm_config" not in body:
        return None, "not exposed (vLLM serves /server_info only with VLLM_SERVER_DEV_MODE=1)"
    cfg = body["vllm_config"]
    if isinstance(cfg, dict):
        return cfg.get("speculative_config"), "/server_info"
    found = re.search(r"speculative_config=(None|\w+\((?:[^()]|\([^()]*\))*\))", str(cfg))
    return (found.group(1) if found else None), "/server_info" if found else "not in /server_info's text"


def spec_counters(client: Client) -> dict[str, float] | None:
    """vLLM's speculative-decoding counters at /metrics (vllm/v1/metrics/loggers.py,
    SpecDecodingProm), summed over engines; None where the server has none (no speculation, or no
    metrics)."""
    status, text = client.call("/metrics")
    if status != 200 or not isinstance(text, str):
        return None
    out: dict[str, float] = {}
    for line in text.splitlines():
        name = re.split(r"[{ ]", line, maxsplit=1)[0]
        for key, metric in SPEC_COUNTERS.items():
            if name == metric:
                try:
                    out[key] = out.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
                except (IndexError, ValueError):
                    continue
    return out or None


def acceptance(before: dict | None, after: dict | None) -> dict | None:
    """What the server drafted and accepted while verify decoded (other clients' requests count
    too)."""
    if before is None or after is None:
        return None
    d = {k: int(after.get(k, 0) - before.get(k, 0)) for k in SPEC_COUNTERS}
    return {**d, "rate": round(d["accepted_tokens"] / d["draft_tokens"], 3) if d["draft_tokens"] else None}


def refused(url: str, what: str, status: int, body: Any) -> ServerError:
    msg = error_message(body)
    if what == PROMPT_LOGPROBS and "logprob" in msg.lower():
        return ServerError(
            f"--server {url} refuses prompt logprobs (HTTP {status}: {msg}); verify asks prompt_logprobs=1: "
            "start vllm serve with --max-logprobs 1 or more"
        )
    return ServerError(f"--server {url}: {what} refused (HTTP {status}: {msg})")


def token_ids(client: Client, model: str, record: prompts.Record, where: str) -> list[int]:
    """A prompt's token ids as the server tokenizes it: its chat template for messages (vLLM's
    POST /tokenize takes messages, tools and chat_template_kwargs, adding the generation prompt)."""
    if record.token_ids is not None:
        return list(record.token_ids)
    if record.messages is not None:
        body: dict[str, Any] = {"model": model, "messages": record.messages, "add_generation_prompt": True}
        if record.tools is not None:
            body["tools"] = record.tools
        if record.template_kwargs:
            body["chat_template_kwargs"] = record.template_kwargs
    else:
        body = {"model": model, "prompt": record.text}
    status, got = client.call("/tokenize", body)
    ids = got.get("tokens") if isinstance(got, dict) else None
    if status != 200 or not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise ServerError(f"{where} line {record.line}: /tokenize refused it (HTTP {status}: {error_message(got)})")
    if not ids:
        raise UsageError(f"{where} line {record.line}: no tokens")
    return ids


def complete(client: Client, body: dict, what: str) -> dict:
    status, got = client.call("/v1/completions", body)
    if status != 200:
        raise refused(client.url, what, status, got)
    choices = got.get("choices") if isinstance(got, dict) else None
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        raise ServerError(f"--server {client.url}: {what}: no completion choice in the answer")
    return choices[0]


def decode(client: Client, model: str, prompt: list[int], max_tokens: int) -> tuple[list[int], str | None]:
    """Greedy output token ids of `prompt`, as the server decodes it, speculation and all."""
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "return_token_ids": True, **NEUTRAL}
    choice = complete(client, body, "a greedy completion")
    ids = choice.get("token_ids")
    if not isinstance(ids, list):
        raise ServerError(
            f"--server {client.url} returns no token_ids (return_token_ids: vLLM 0.10.2 and later); "
            "verify --server needs them"
        )
    return ids, choice.get("finish_reason")


def prompt_logprobs(client: Client, model: str, sequence: list[int]) -> list[dict[int, float] | None]:
    """The server's prompt logprobs of `sequence` (prompt_logprobs=1: the top-1 and the token's
    own at every position; entry 0 None), as token id -> logprob."""
    body = {"model": model, "prompt": sequence, "max_tokens": 1, "prompt_logprobs": 1, **NEUTRAL}
    choice = complete(client, body, PROMPT_LOGPROBS)
    raw = choice.get("prompt_logprobs")
    if not isinstance(raw, list):
        raise ServerError(f"--server {client.url}: {PROMPT_LOGPROBS} answered without prompt_logprobs")
    out: list[dict[int, float] | None] = []
    for entry in raw:
        if not isinstance(entry, dict):
            out.append(None)
            continue
        # Logprob objects, JSON {"logprob": x, "rank": r, "decoded_token": s}, keyed by token id text
        try:
            out.append({int(k): float(v["logprob"] if isinstance(v, dict) else v) for k, v in entry.items()})
        except (KeyError, TypeError, ValueError):  # not vLLM's shape: nothing can be judged from it
            raise ServerError(
                f"--server {client.url}: {PROMPT_LOGPROBS} answered an entry that is not token id -> logprob: "
                f"{json.dumps(entry)[:80]}"
            ) from None
    return out


def first_error(row: dict, entries: list[dict[int, float] | None], threshold: float) -> dict | None:
    """Where a row's first error sits: its position in the output, the token chosen and the one
    the prefill ranks best there."""
    at = row["first_error_at"]
    if at is None:
        return None
    entry = entries[row["prompt_tokens"] + at] or {}
    best = max(entry, key=lambda t: entry[t]) if entry else None
    return {
        "line": row["line"],
        "position": at,
        "token": row["output"][at],
        "best_token": best,
        "regret": round(row["regrets"][at], 3),
        "threshold": threshold,
    }


def _progress(progress: Callable[[str], None], what: str, total: int) -> Callable[[int], None]:
    step = max(1, math.ceil(total / 10))

    def said(done: int) -> None:
        if done == total or done % step == 0:
            progress(f"{what} {done}/{total}")

    return said


def _map(fn: Callable[[int], Any], n: int, batch: int, said: Callable[[int], None]) -> list:
    """fn(0..n-1) with up to `batch` requests in flight: the server batches them as it batches users."""
    out: list = [None] * n
    with ThreadPoolExecutor(max_workers=batch) as pool:
        futures = [pool.submit(fn, i) for i in range(n)]
        try:
            for i, fut in enumerate(futures):
                out[i] = fut.result()
                said(i + 1)
        except BaseException:
            for fut in futures:  # the first failure is the answer: nothing more is sent
                fut.cancel()
            raise
    return out


def execute(plan: ServerPlan, progress: Callable[[str], None], client: Client | None = None) -> dict:
    source, records = prompts.load(plan.prompts)
    where = f"--prompts {plan.prompts}" if plan.prompts else f"{prompts.BUILTIN} prompts"
    client = client or Client(plan.url, plan.timeout)
    served = identify(client, plan.model)
    progress(f"{served.url}: vLLM {served.vllm}, model {served.model}")
    spec, spec_source = speculative_config(client)
    ids = [token_ids(client, served.model, r, where) for r in records]
    longest = max(range(len(ids)), key=lambda i: len(ids[i]))
    if served.max_model_len is not None and len(ids[longest]) + plan.max_tokens + 1 > served.max_model_len:
        raise UsageError(
            f"{where} line {records[longest].line}: {len(ids[longest])} tokens and --max-tokens {plan.max_tokens} "
            f"do not fit the server's max_model_len {served.max_model_len}"
        )
    before = spec_counters(client)
    outs = _map(
        lambda i: decode(client, served.model, ids[i], plan.max_tokens),
        len(ids),
        plan.batch,
        _progress(progress, "decoded", len(ids)),
    )
    after = spec_counters(client)
    forced = _map(
        lambda i: prompt_logprobs(client, served.model, ids[i] + outs[i][0]),
        len(ids),
        plan.batch,
        _progress(progress, "teacher-forced", len(ids)),
    )
    threshold = run.calibrated_threshold(0.0) if plan.threshold is None else plan.threshold
    rows, regrets = [], []
    for r, p, (out, finish), entries in zip(records, ids, outs, forced, strict=True):
        try:
            seq = teacher.regrets(entries, p + out, len(p)) if out else []
        except ValueError as exc:
            raise ServerError(
                f"--server {served.url}: {where} line {r.line}: prompt logprobs unusable ({exc})"
            ) from None
        v = judge([seq], threshold)
        row = {
            "line": r.line,
            "group": r.group,
            "prompt_tokens": len(p),
            "output_tokens": len(out),
            "finish_reason": finish,
            "errors": v.errors,
            "worst_regret": round(v.worst, 3),
            "first_error_at": v.first_error,
            "output": out,
            "regrets": [round(x, 3) for x in seq],
        }
        row["first_error"] = first_error(row, entries, threshold)
        rows.append(row)
        regrets.append(seq)
    verdict = judge(regrets, threshold)
    firsts = [row["first_error"] for row in rows if row["first_error"]]
    return {
        "server": served.url,
        "vllm": served.vllm,
        "model": served.model,
        "max_model_len": served.max_model_len,
        "speculative_config": spec,
        "speculative_config_source": spec_source,
        "spec_decode": acceptance(before, after),
        "reference": SERVER_REFERENCE,
        "threshold": threshold,
        "threshold_source": "--threshold" if plan.threshold is not None else "default (no plain engine to calibrate)",
        "scenario": {
            "prompts": source,
            "prompt_count": len(ids),
            "groups": {g: sum(r.group == g for r in records) for g in dict.fromkeys(r.group for r in records)},
            "max_tokens": plan.max_tokens,
            "max_prompt_tokens": len(ids[longest]),
            "batch": plan.batch,
        },
        **verdict.as_dict(),
        "first_error": min(firsts, key=lambda f: (f["position"], f["line"])) if firsts else None,
        "groups": by_group(records, regrets, threshold),
        "rows": rows,
        "passed": verdict.errors == 0,
    }


def verdict(result: dict) -> tuple[str, int]:
    """The run's last line and exit code: 1 when an output token is an error, else 0."""
    spec = result["spec_decode"]
    if result["passed"]:
        if spec is not None and spec["draft_tokens"] == 0:
            return "verify: passed, but the server drafted no token while verify decoded (nothing speculative ran)", 0
        return "verify: passed", 0
    f = result["first_error"]
    return (
        f"verify: FAILED: {result['bad_sequences']} of {result['sequences']} outputs are not what the model predicts "
        f"(first: prompt line {f['line']}, output token {f['position']}: {f['token']} where the server's own "
        f"prefill puts {f['best_token']} {f['regret']:.2f} nats above it)",
        1,
    )


def lines(result: dict) -> list[str]:
    """The report: the server, its speculation, the judged prompts, the verdict."""
    s, spec = result["scenario"], result["spec_decode"]
    cfg = result["speculative_config"]
    drafted = (
        "no speculative-decoding counters at /metrics (it may not speculate)"
        if spec is None
        else f"drafted {spec['draft_tokens']} tokens, accepted {spec['accepted_tokens']}"
        + ("" if spec["rate"] is None else f" ({100 * spec['rate']:.0f}%)")
    )
    out = [
        f"{result['server']}: vLLM {result['vllm']}, model {result['model']}",
        "speculative config: " + (json.dumps(cfg) if cfg is not None else result["speculative_config_source"]),
        f"while verify decoded: {drafted}",
        f"prompts {s['prompts']}: {s['prompt_count']} (longest {s['max_prompt_tokens']} tokens), up to "
        f"{s['max_tokens']} tokens each, {s['batch']} in flight",
        f"reference: the server's own prefill (prompt_logprobs); error: regret > {result['threshold']:.2f} nats",
        f"{result['tokens']} tokens judged, {result['errors']} errors, worst regret {result['worst_regret']:.2f}",
    ]
    bad = [f"{g} ({v['bad_sequences']} of {v['sequences']})" for g, v in result["groups"].items() if v["errors"]]
    if bad:
        out.append("errors in " + ", ".join(bad))
    return [*out, verdict(result)[0]]
