"""`verify --server URL` against a fake vLLM OpenAI server on 127.0.0.1 (http.server in a thread):
a tiny deterministic "model" decodes and teacher-forces; the server can be told to decode a wrong
token, refuse prompt logprobs, be busy, not be vLLM, or not be there at all."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cli_runner import run
from vllm_backports.errors import UsageError
from vllm_backports.verify import server

REAL_CONNECT = socket.socket.connect  # before conftest's _no_network replaces it, test by test
VOCAB = 50
BEST, OTHER = -0.1, -5.0  # the fake model's logprob of its best token, and of every other
MODEL = "fake/model"
MAX_LOGPROBS_MESSAGE = "Requested prompt logprobs of 1, which is greater than max allowed: 0"


def best_next(prefix: list[int]) -> int:
    return (sum(prefix) * 7 + len(prefix)) % VOCAB


class Fake:
    """What the fake server does: `wrong_at` (an output position decoded wrong), `refuse_logprobs`,
    `busy` (503s before answering; -1: always), `vllm` (False: no /version), `models`."""

    def __init__(self, **kw):
        self.wrong_at: int | None = kw.get("wrong_at")
        self.refuse_logprobs = kw.get("refuse_logprobs", False)
        self.odd_logprobs = kw.get("odd_logprobs")  # an entry of another shape than vLLM's
        self.busy = kw.get("busy", 0)
        self.vllm = kw.get("vllm", True)
        self.models = kw.get("models", [MODEL])
        self.version = kw.get("version", "0.20.0")
        self.api_key = kw.get("api_key")  # vllm serve --api-key: /v1 paths need it
        self.busy_answers = 0
        self.drafts = 0
        self.requests: list[dict] = []

    def completion(self, body: dict) -> tuple[int, dict]:
        self.requests.append(body)
        prompt = body["prompt"]
        if body["model"] not in self.models:
            return 404, {"error": {"message": f"The model `{body['model']}` does not exist.", "code": 404}}
        if body.get("prompt_logprobs") is not None:
            if self.refuse_logprobs:
                return 400, {"error": {"message": MAX_LOGPROBS_MESSAGE, "type": "BadRequestError", "code": 400}}
            entries: list = [None]
            for t in range(1, len(prompt)):
                best = best_next(prompt[:t])
                entry = {str(best): {"logprob": BEST, "rank": 1, "decoded_token": "x"}}
                entry.setdefault(str(prompt[t]), {"logprob": OTHER, "rank": 7, "decoded_token": "y"})
                entries.append(self.odd_logprobs or entry)
            return 200, {"choices": [{"index": 0, "text": "", "prompt_logprobs": entries, "finish_reason": "length"}]}
        out: list[int] = []
        for i in range(body["max_tokens"]):
            tok = best_next(prompt + out)
            out.append((tok + 1) % VOCAB if i == self.wrong_at else tok)
        self.drafts += len(out)
        choice = {"index": 0, "text": "", "finish_reason": "length"}
        if body.get("return_token_ids"):
            choice["token_ids"] = out
        return 200, {"choices": [choice]}

    def metrics(self) -> str:
        return (
            "# TYPE vllm:spec_decode_num_drafts_total counter\n"
            f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="{MODEL}"}} {self.drafts / 2}\n'
            f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="{MODEL}"}} {float(self.drafts)}\n'
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="{MODEL}"}} {self.drafts / 2}\n'
        )


def serve(fake: Fake, port: int = 0):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status: int, body) -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def busy(self) -> bool:
            if fake.busy == -1 or fake.busy_answers < fake.busy:
                fake.busy_answers += 1
                self.answer(503, {"error": {"message": "Service Unavailable"}})
                return True
            return False

        def locked(self) -> bool:
            if fake.api_key and self.path.startswith("/v1") and self.headers["Authorization"] != f"Bearer {fake.api_key}":
                self.answer(401, {"error": "Unauthorized"})
                return True
            return False

        def do_GET(self):
            if self.busy() or self.locked():
                return
            if self.path == "/v1/models":
                self.answer(200, {"object": "list", "data": [{"id": m, "max_model_len": 4096} for m in fake.models]})
            elif self.path == "/version" and fake.vllm:
                self.answer(200, {"version": fake.version})
            elif self.path == "/health":
                self.answer(200, "")
            elif self.path.startswith("/server_info") and fake.vllm:
                self.answer(
                    200, {"vllm_config": {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}}
                )
            elif self.path == "/metrics":
                self.answer(200, fake.metrics())
            else:
                self.answer(404, {"detail": "Not Found"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.busy() or self.locked():
                return
            if self.path == "/tokenize":
                text = json.dumps(body.get("messages") or body.get("prompt"))
                self.answer(200, {"tokens": [1] + [ord(c) % VOCAB for c in text[-30:]], "count": 31})
            elif self.path == "/v1/completions":
                self.answer(*fake.completion(body))
            else:
                self.answer(404, {"detail": "Not Found"})

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.fixture
def loopback(monkeypatch):
    """Connections to 127.0.0.1 only (the autouse _no_network refuses every one)."""

    def connect(sock, address):
        if address[0] not in ("127.0.0.1", "::1"):
            raise OSError("network access in a unit test")
        return REAL_CONNECT(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    # as CI runs unit tests: a dead proxy, loopback exempted
    monkeypatch.setenv("HTTP_PROXY", "http://192.0.2.1:9")
    monkeypatch.setenv("http_proxy", "http://192.0.2.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def fake_server(loopback):
    started = []

    def start(**kw) -> tuple[Fake, str]:
        fake = Fake(**kw)
        httpd = serve(fake)
        started.append(httpd)
        return fake, f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def prompts_file(tmp_path):
    p = tmp_path / "prompts.jsonl"
    p.write_text(
        "\n".join(
            [
                json.dumps({"prompt_token_ids": [3, 4, 5, 6]}),
                json.dumps({"messages": [{"role": "user", "content": "hello"}], "group": "chat"}),
                json.dumps({"prompt": "raw text", "group": "raw"}),
            ]
        )
        + "\n"
    )
    return p


def no_wait(url: str, timeout: float = 5.0) -> server.Client:
    return server.Client(url, timeout, sleep=lambda s: None)


def execute(url: str, prompts_file, client=None, **kw) -> dict:
    plan = server.ServerPlan(url=url, model=kw.pop("model", None), prompts=prompts_file, max_tokens=8, **kw)
    return server.execute(plan, lambda m: None, client or no_wait(url))


def test_a_server_that_decodes_what_the_model_predicts_passes(fake_server, prompts_file):
    fake, url = fake_server()
    result = execute(url + "/v1/", prompts_file)
    assert (result["server"], result["vllm"], result["model"]) == (url, "0.20.0", MODEL)
    assert result["passed"] and result["errors"] == 0 and result["first_error"] is None
    assert result["tokens"] == 3 * 8 and result["sequences"] == 3
    assert result["worst_regret"] == 0.0 and result["threshold"] == 1.0
    assert result["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3}
    assert result["spec_decode"]["draft_tokens"] == 24
    assert result["scenario"]["max_prompt_tokens"] == 31
    # decoding: greedy, neutral penalties, token ids back; teacher forcing: prompt + output, a prefill
    decodes = [r for r in fake.requests if "prompt_logprobs" not in r]
    forced = [r for r in fake.requests if "prompt_logprobs" in r]
    assert all(r["temperature"] == 0.0 and r["repetition_penalty"] == 1.0 and r["return_token_ids"] for r in decodes)
    assert all(r["max_tokens"] == 1 and r["prompt_logprobs"] == 1 for r in forced)
    assert sorted(len(r["prompt"]) for r in forced) == sorted(len(r["prompt"]) + 8 for r in decodes)
    assert server.verdict(result) == ("verify: passed", 0)


def test_a_wrong_token_fails_and_the_first_error_is_named(fake_server, prompts_file):
    fake, url = fake_server(wrong_at=5)
    result = execute(url, prompts_file)
    assert not result["passed"]
    assert result["errors"] == 3 and result["first_error_at"] == 5
    assert [r["first_error_at"] for r in result["rows"]] == [5, 5, 5]
    first = result["first_error"]
    assert first["line"] == 1 and first["position"] == 5 and first["regret"] == pytest.approx(BEST - OTHER)
    assert first["token"] == (first["best_token"] + 1) % VOCAB
    line, code = server.verdict(result)
    assert code == 1 and "3 of 3 outputs" in line and "prompt line 1, output token 5" in line


def test_a_threshold_above_the_regret_passes_the_same_outputs(fake_server, prompts_file):
    _, url = fake_server(wrong_at=2)
    assert execute(url, prompts_file, threshold=6.0)["passed"]


def test_a_server_that_refuses_prompt_logprobs_names_the_flag(fake_server, prompts_file):
    _, url = fake_server(refuse_logprobs=True)
    with pytest.raises(server.ServerError) as exc:
        execute(url, prompts_file)
    assert MAX_LOGPROBS_MESSAGE in str(exc.value) and "--max-logprobs 1 or more" in str(exc.value)


def test_a_busy_server_is_asked_again(fake_server, prompts_file):
    fake, url = fake_server(busy=2)
    waits: list[float] = []
    result = execute(url, prompts_file, client=server.Client(url, 5.0, sleep=waits.append))
    assert result["passed"] and fake.busy_answers == 2 and waits == [0.25, 0.5]


def test_a_server_busy_past_the_timeout_is_one_error(fake_server, prompts_file):
    fake, url = fake_server(busy=-1)
    with pytest.raises(server.ServerError, match=r"/v1/models still refused after --timeout 0.5 s \(HTTP 503\)"):
        execute(url, prompts_file, client=server.Client(url, 0.5))
    assert 2 <= fake.busy_answers <= 4  # backoff: 0.25 s, then no time left for another 0.5


def test_a_server_that_is_not_vllm_is_refused(fake_server, prompts_file):
    _, url = fake_server(vllm=False)
    with pytest.raises(server.ServerError, match="no vLLM /version \\(HTTP 404\\)"):
        execute(url, prompts_file)


def test_an_unreachable_server_is_one_error(loopback, prompts_file):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(server.ServerError, match=f"--server {url}: cannot connect"):
        execute(url, prompts_file, client=server.Client(url, 30.0))


def test_the_model_is_the_one_served_or_the_one_named(fake_server, prompts_file):
    _, url = fake_server(models=["a", "b"])
    with pytest.raises(server.ServerError, match=r"serves 2 models \(a, b\): name one with --model"):
        execute(url, prompts_file)
    with pytest.raises(server.ServerError, match=r"--model c: not served by .* \(it serves a, b\)"):
        execute(url, prompts_file, model="c")
    assert execute(url, prompts_file, model="b")["model"] == "b"


def test_loopback_bypasses_a_dead_proxy_without_no_proxy(fake_server, prompts_file, monkeypatch):
    _, url = fake_server()
    monkeypatch.delenv("NO_PROXY")
    monkeypatch.delenv("no_proxy")
    assert execute(url, prompts_file)["passed"]

    # a remote server goes through the environment's proxy; a loopback one through none
    def proxies(client: server.Client) -> dict:
        # urllib keeps a ProxyHandler only where it has proxies to use
        return next((h.proxies for h in client.opener.handlers if isinstance(h, urllib.request.ProxyHandler)), {})

    assert proxies(server.Client("http://gpu-box:8000", 1.0))["http"] == "http://192.0.2.1:9"
    assert proxies(server.Client(url, 1.0)) == {}


def test_urls_that_are_not_http_are_usage_errors():
    with pytest.raises(UsageError, match="not an http\\(s\\) URL"):
        server.base_url("localhost:8000")
    assert server.base_url("https://h:1/v1/") == "https://h:1"


def cli(*args: str):
    return run("verify", *args)


def test_cli_exit_codes(fake_server, prompts_file, tmp_path):
    _, good = fake_server()
    r = cli(
        "--server",
        good,
        "--prompts",
        str(prompts_file),
        "--max-tokens",
        "8",
        "--work-dir",
        str(tmp_path / "w"),
        "--json",
    )
    assert r.code == 0, r.err
    assert r.json["verdict"] == "verify: passed" and r.json["server"] == good
    assert "regrets" not in r.json["rows"][0] and (tmp_path / "w" / "verify.json").is_file()
    _, bad = fake_server(wrong_at=0)
    r = cli("--server", bad, "--prompts", str(prompts_file), "--max-tokens", "4", "--work-dir", str(tmp_path / "w"))
    assert r.code == 1 and "verify: FAILED" in r.out and "output token 0" in r.out
    _, no_vllm = fake_server(vllm=False)
    r = cli("--server", no_vllm, "--work-dir", str(tmp_path / "w"), "--json")
    assert r.code == 2 and "no vLLM /version" in r.json["error"]


@pytest.mark.parametrize("odd", [{"x": 1}, {"5": {"rank": 1}}, {"5": "high"}, {"5": [1]}])
def test_prompt_logprobs_of_another_shape_are_one_line_not_a_traceback(fake_server, prompts_file, tmp_path, odd):
    _, url = fake_server(odd_logprobs=odd)
    r = cli("--server", url, "--prompts", str(prompts_file), "--max-tokens", "4", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2, r.err
    *progress, line = r.err.strip().splitlines()
    assert all(p.startswith(("decoded ", url)) for p in progress), progress  # before it, only progress
    assert line.startswith(f"error: --server {url}: a prompt_logprobs request answered an entry that is not token id")
    assert not (tmp_path / "w").exists()  # refused: the folder made for the run is gone again


def test_a_work_dir_it_cannot_have_is_refused_before_anything_is_asked(fake_server, prompts_file, tmp_path):
    fake, url = fake_server()
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = cli("--server", url, "--prompts", str(prompts_file), "--work-dir", str(blocker / "w"), "--json")
    assert r.code == 2 and r.json["error"].startswith(f"--work-dir {blocker / 'w'}: "), r.json
    assert fake.requests == []  # no decoding thrown away
    # a run that fails after decoding keeps the folder it wrote in
    _, bad = fake_server(wrong_at=0)
    r = cli("--server", bad, "--prompts", str(prompts_file), "--max-tokens", "4", "--work-dir", str(tmp_path / "a" / "b"))
    assert r.code == 1 and (tmp_path / "a" / "b" / "verify.json").is_file()
    # a refusal leaves an existing --work-dir as it was
    _, no_vllm = fake_server(vllm=False)
    r = cli("--server", no_vllm, "--work-dir", str(tmp_path / "a"))
    assert r.code == 2 and (tmp_path / "a" / "b" / "verify.json").is_file()


def test_cli_the_built_in_prompts_by_default(fake_server, tmp_path):
    fake, url = fake_server()
    r = cli("--server", url, "--max-tokens", "2", "--work-dir", str(tmp_path / "w"), "--json")
    assert r.code == 0, r.err
    assert r.json["scenario"]["prompts"] == "built-in" and r.json["sequences"] > 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--server", "http://127.0.0.1:1", "--tp", "2"], "--tp goes with a local engine, not with --server"),
        (["--server", "http://127.0.0.1:1", "--preset", "mtp"], "--preset goes with a local engine"),
        (["--server", "http://127.0.0.1:1", "--batch", "1", "--batch", "16"], "--server runs one batch size"),
        (["--timeout", "5"], "--timeout goes with --server"),
    ],
)
def test_cli_options_that_do_not_go_with_server(tmp_path, args, message):
    r = cli(*args, "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and message in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert not (tmp_path / "w").exists()


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket, int], None]):
    """A loopback port answered byte for byte: answer(conn, n) for its n-th connection (from 0);
    yields its URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        for n in itertools.count():
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            with conn, contextlib.suppress(OSError):  # the client hung up
                answer(conn, n)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def test_a_port_that_does_not_speak_http_is_one_error(loopback, prompts_file):
    def banner(conn: socket.socket, _n: int) -> None:  # an SSH server, or TLS spoken to plain http
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    message = "--server {}: /v1/models: not an HTTP answer"
    with raw_server(banner) as url, pytest.raises(server.ServerError, match=message.format(url)):
        execute(url, prompts_file)


def test_a_server_that_trickles_its_answer_is_stopped_at_the_timeout(loopback, prompts_file):
    def trickle(conn: socket.socket, _n: int) -> None:  # each byte inside the socket's timeout, the whole past it
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n")
        for _ in range(4000):
            conn.sendall(b" ")
            time.sleep(0.01)

    started = time.monotonic()
    message = r"/v1/models took longer than --timeout 1 s"
    with raw_server(trickle) as url, pytest.raises(server.ServerError, match=message):
        execute(url, prompts_file, client=server.Client(url, 1.0))
    assert time.monotonic() - started < 10  # not the 40 s the answer takes


def test_an_answer_cut_short_of_its_content_length_is_asked_again(loopback):
    full = b'{"data": [{"id": "m"}], "object": "list"}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"

    def answer(conn: socket.socket, n: int) -> None:  # the first answer closes after 10 of its bytes
        conn.recv(65536)
        conn.sendall(head % len(full) + (full[:10] if n == 0 else full))

    waits: list[float] = []
    with raw_server(answer) as url:
        assert server.Client(url, 5.0, sleep=waits.append).call("/v1/models") == (200, json.loads(full))
    assert waits == [0.25]


def test_a_redirected_post_is_one_error_naming_where_it_goes(fake_server, prompts_file):
    _, target = fake_server()

    class Redirect(BaseHTTPRequestHandler):  # a proxy sending http to https, or to another path
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(301)
            self.send_header("Location", target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with pytest.raises(server.ServerError, match=f"--server {url}: /tokenize is redirected to {target}/tokenize"):
            execute(url, prompts_file)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_server_with_an_api_key_takes_vllm_api_key(fake_server, prompts_file, monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    fake, url = fake_server(api_key="sk-1")
    with pytest.raises(server.ServerError, match="/v1/models asks for an API key .*: set VLLM_API_KEY"):
        execute(url, prompts_file)
    monkeypatch.setenv("VLLM_API_KEY", "sk-1")
    assert execute(url, prompts_file)["passed"]
