"""Read members of a zip archive over HTTP range requests.

A vLLM wheel is 230 to 440 MB; the files we patch are a few hundred KB. ``zipfile`` only needs a
seekable file, so we give it one whose reads become range requests, cached in blocks so that its
many small header reads cost one round trip.
"""

from __future__ import annotations

import io

import requests

from .errors import FetchError

BLOCK = 256 * 1024


class RangeFile(io.RawIOBase):
    def __init__(self, url: str, session: requests.Session, timeout: float = 30.0):
        self.url = url
        self._session = session
        self._timeout = timeout
        self._pos = 0
        self._blocks: dict[int, bytes] = {}
        self.bytes_fetched = 0
        self.requests = 0
        response = self._get({"Range": "bytes=-1"})
        total = response.headers.get("Content-Range", "").rpartition("/")[2]
        if response.status_code != 206 or not total.isdigit():
            raise FetchError(f"{url} does not serve byte ranges (HTTP {response.status_code})")
        self.size = int(total)

    def _get(self, headers: dict[str, str]) -> requests.Response:
        self.requests += 1
        try:
            response = self._session.get(self.url, headers=headers, timeout=self._timeout)
        except requests.RequestException as exc:
            raise FetchError(f"cannot reach {self.url}: {exc.__class__.__name__}") from exc
        if response.status_code not in (200, 206):
            raise FetchError(f"{self.url}: HTTP {response.status_code}")
        self.bytes_fetched += len(response.content)
        return response

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def prefetch(self, start: int, end: int) -> None:
        """Fetch [start, end) in one request and keep it as blocks."""
        first, last = start // BLOCK, (min(end, self.size) - 1) // BLOCK
        missing = [b for b in range(first, last + 1) if b not in self._blocks]
        if not missing:
            return
        lo, hi = missing[0] * BLOCK, min((missing[-1] + 1) * BLOCK, self.size)
        data = self._get({"Range": f"bytes={lo}-{hi - 1}"}).content
        if len(data) != hi - lo:
            raise FetchError(f"{self.url}: short range read ({len(data)} of {hi - lo} bytes)")
        for b in range(missing[0], missing[-1] + 1):
            self._blocks[b] = data[(b - missing[0]) * BLOCK : (b - missing[0] + 1) * BLOCK]

    def readinto(self, buffer) -> int:  # type: ignore[override]
        n = min(len(buffer), self.size - self._pos)
        if n <= 0:
            return 0
        self.prefetch(self._pos, self._pos + n)
        out = bytearray()
        pos = self._pos
        while len(out) < n:
            block = self._blocks[pos // BLOCK]
            piece = block[pos % BLOCK : pos % BLOCK + n - len(out)]
            out += piece
            pos += len(piece)
        buffer[:n] = out
        self._pos += n
        return n
