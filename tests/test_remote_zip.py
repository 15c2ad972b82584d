"""Reading zip members over HTTP range requests, against an in-memory host (no network)."""

from __future__ import annotations

import io
import os
import zipfile

import pytest
import requests

from vllm_backports.errors import FetchError
from vllm_backports.remote_zip import BLOCK, RangeFile
from wheel_server import FakePyPI

URL = "https://files.example/files/blob.zip"


def _host(data: bytes, **kw) -> FakePyPI:
    host = FakePyPI(**kw)
    host.wheels["blob.zip"] = data
    return host


def test_reads_are_byte_exact_across_block_boundaries():
    data = os.urandom(3 * BLOCK + 123)
    f = RangeFile(URL, _host(data))
    assert f.size == len(data)
    for start, n in [(0, 10), (BLOCK - 5, 10), (2 * BLOCK + 7, BLOCK + 116), (len(data) - 3, 100)]:
        f.seek(start)
        assert f.read(n) == data[start : start + n] and f.tell() == min(start + n, len(data))
    f.seek(len(data))
    assert f.read(5) == b""


def test_seek_from_the_end_and_from_here_and_never_before_the_start():
    f = RangeFile(URL, _host(b"0123456789"))
    assert f.seek(-3, io.SEEK_END) == 7 and f.read(3) == b"789"
    f.seek(2)
    assert f.seek(3, io.SEEK_CUR) == 5 and f.read(1) == b"5"
    assert f.seek(-100, io.SEEK_CUR) == 0
    assert f.readable() and f.seekable()


def test_blocks_are_fetched_once_and_a_span_in_one_request():
    data = os.urandom(4 * BLOCK)
    host = _host(data)
    f = RangeFile(URL, host)
    assert f.requests == 1 and host.gets == [(URL, "bytes=-1")]  # the size, first
    f.prefetch(BLOCK, 3 * BLOCK)
    assert host.gets[-1] == (URL, f"bytes={BLOCK}-{3 * BLOCK - 1}")
    f.seek(BLOCK + 10)
    f.read(BLOCK)
    assert f.requests == 2  # both blocks were there already
    f.seek(0)
    f.read(2 * BLOCK)  # one missing block, one cached: only the span of missing ones is asked for
    assert f.requests == 3 and host.gets[-1] == (URL, f"bytes=0-{BLOCK - 1}")
    assert f.bytes_fetched == 1 + 3 * BLOCK


def test_a_zip_member_is_read_without_fetching_the_archive():
    big = os.urandom(8 * BLOCK)  # stored, so it stays large
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("big.bin", big)
        z.writestr("small.txt", b"hello")
    f = RangeFile(URL, _host(buf.getvalue()))
    assert zipfile.ZipFile(f).read("small.txt") == b"hello"
    assert f.bytes_fetched < 2 * BLOCK


def test_a_host_without_ranges_is_refused():
    with pytest.raises(FetchError, match=r"does not serve byte ranges \(HTTP 200\)"):
        RangeFile(URL, _host(b"data", ranges=False))


def test_http_errors_and_short_reads_are_fetch_errors():
    host = _host(os.urandom(2 * BLOCK))
    f = RangeFile(URL, host)
    host.status = 503
    with pytest.raises(FetchError, match=f"{URL}: HTTP 503"):
        f.read(10)
    with pytest.raises(FetchError, match="short range read"):
        RangeFile(URL, _host(os.urandom(2 * BLOCK), short=True)).read(10)


def test_an_unreachable_host_is_one_fetch_error():
    class Down:
        def get(self, *a, **k):
            raise requests.ConnectionError("refused")

    with pytest.raises(FetchError, match=f"cannot reach {URL}: ConnectionError"):
        RangeFile(URL, Down())
