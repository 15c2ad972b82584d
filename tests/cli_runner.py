"""Run the CLI in-process and capture exit code, stdout and stderr."""

from __future__ import annotations

import json
from dataclasses import dataclass

from click.testing import CliRunner

from vllm_backports.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> dict:
        return json.loads(self.out)


def run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return Result(result.exit_code, result.stdout, result.stderr)
