"""The reference of `verify --model`: the release's own plain engine, teacher-forced.

Every sequence to judge (a prompt and the output some engine produced for it) goes back to an
engine without speculation as one prompt, with prompt_logprobs=1 and max_tokens=1. vLLM then
returns, for each position t > 0, the log-probability of the token at t and that of the best
token there, both computed in one prefill from positions < t. An output token's regret is the
best log-probability minus its own: zero where the engine chose what the model it serves
predicts, several nats where a corrupted state made it follow another function.

This runs inside the engine process (engine.py); regrets() is plain Python, testable anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# A log-probability that is not a finite number says nothing good about a token: counted as a
# regret far above any threshold, so that a broken reference fails the calibration rather than
# passing every token (NaN compares false with any threshold).
NONFINITE_REGRET = 1e4


def sampling_kwargs() -> dict:
    """One token generated, the prompt's own log-probabilities returned: the best token and the
    prompt's token at every position (vLLM adds the prompt's token to the top 1)."""
    return {"temperature": 0.0, "max_tokens": 1, "prompt_logprobs": 1}


def _logprob(value: Any) -> float:
    # vLLM's Logprob objects; a plain float where a test or another release hands one
    return float(getattr(value, "logprob", value))


def regrets(prompt_logprobs: Sequence[Mapping[int, Any] | None] | None, sequence: list[int], start: int) -> list[float]:
    """The regret of sequence[start:] under `prompt_logprobs`, vLLM's prompt log-probabilities of
    the whole sequence (entry t: token id -> log-probability at position t; entry 0 is None)."""
    if start < 1:
        raise ValueError("the first judged token needs a token before it (start >= 1)")
    if prompt_logprobs is None or len(prompt_logprobs) != len(sequence):
        got = "none" if prompt_logprobs is None else str(len(prompt_logprobs))
        raise ValueError(f"prompt log-probabilities for {got} positions, the sequence has {len(sequence)}")
    out = []
    for t in range(start, len(sequence)):
        entry = prompt_logprobs[t]
        if not entry or sequence[t] not in entry:
            raise ValueError(f"position {t}: no log-probability for token {sequence[t]}")
        values = [_logprob(v) for v in entry.values()]
        regret = max(values) - _logprob(entry[sequence[t]])
        finite = math.isfinite(regret) and not any(math.isnan(v) for v in values)
        out.append(regret if finite else NONFINITE_REGRET)
    return out


def teacher_force(llm, sampling_params: Callable[..., Any], sequences: list[list[int]], starts: list[int]) -> list:
    """Regrets of sequences[i][starts[i]:] under `llm` (a vLLM LLM without speculation)."""
    params = sampling_params(**sampling_kwargs())
    outs = llm.generate([{"prompt_token_ids": s} for s in sequences], params, use_tqdm=False)
    return [regrets(o.prompt_logprobs, s, st) for o, s, st in zip(outs, sequences, starts, strict=True)]
