"""The float32 reference and the judgement of vLLM's tokens against it.

regret(token) = best reference log-probability at that position minus the chosen token's. bf16
noise moves near-ties (regret well under one nat on this model); a corrupted recurrent state
makes the engine follow a different function, and its choices land many nats down.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import MODEL_CLASS, load_text_model


@dataclass(frozen=True)
class Verdict:
    sequences: int
    tokens: int
    errors: int
    worst: float
    first_error: int | None  # position of the earliest error over all sequences
    bad_sequences: int

    def as_dict(self) -> dict:
        return {
            "sequences": self.sequences,
            "tokens": self.tokens,
            "errors": self.errors,
            "worst_regret": round(self.worst, 3),
            "first_error_at": self.first_error,
            "bad_sequences": self.bad_sequences,
        }


def judge(regrets: list[list[float]], threshold: float) -> Verdict:
    errors = bad = 0
    first: int | None = None
    worst = 0.0
    for seq in regrets:
        hits = [i for i, r in enumerate(seq) if r > threshold]
        errors += len(hits)
        bad += bool(hits)
        if hits and (first is None or hits[0] < first):
            first = hits[0]
        worst = max([worst, *seq])
    return Verdict(len(regrets), sum(map(len, regrets)), errors, worst, first, bad)


# A prompt position vLLM returned no logprob for counts as a difference this large (an error under
# any threshold verify calibrates, and finite, so that the JSON stays JSON).
MISSING_LOGPROB = 1e3


def prompt_logprob_differences(engine: list[float | None] | None, reference: list[float]) -> list[float]:
    """|vLLM's logprob - the reference's| of each prompt token from the second on. `engine` is
    vLLM's prompt_logprobs for the whole prompt (position 0 has none; None: vLLM returned none at
    all), `reference` the reference's for positions 1.. (Reference.prompt_logprobs)."""
    if engine is None:
        return [MISSING_LOGPROB] * len(reference)
    if len(engine) != len(reference) + 1:
        raise ValueError(f"{len(engine)} prompt logprobs from vLLM for a {len(reference) + 1}-token prompt")
    return [MISSING_LOGPROB if e is None else abs(e - r) for e, r in zip(engine[1:], reference, strict=True)]


def judge_prompt_logprobs(differences: list[list[float]], threshold: float) -> dict:
    """The prompt-logprob verdict of one engine: positions judged, differences above `threshold`
    (errors), sequences with any, the earliest position of one (a prompt token's index) and the
    largest difference; missing: positions vLLM returned no logprob for (each also an error)."""
    v = judge(differences, threshold)
    return {
        "sequences": v.sequences,
        "positions": v.tokens,
        "errors": v.errors,
        "bad_sequences": v.bad_sequences,
        # judge counts from 0; the first judged position is prompt token 1
        "first_error_at": None if v.first_error is None else v.first_error + 1,
        "worst_difference": round(v.worst, 3),
        "missing": sum(d == MISSING_LOGPROB for seq in differences for d in seq),
        "threshold": threshold,
    }


def output_logprob_differences(engine: list[float | None] | None, reference: list[float]) -> list[float]:
    """|vLLM's logprob - the reference's| of each output token, both of the token vLLM chose
    (`engine`: vLLM's sample logprobs, None where it gave none, or None for none at all;
    `reference`: Reference.output_logprobs of the same tokens)."""
    if engine is None:
        return [MISSING_LOGPROB] * len(reference)
    if len(engine) != len(reference):
        raise ValueError(f"{len(engine)} output logprobs from vLLM for {len(reference)} tokens")
    return [MISSING_LOGPROB if e is None else abs(e - r) for e, r in zip(engine, reference, strict=True)]


def judge_output_logprobs(differences: list[list[float]], threshold: float) -> dict:
    """The output-logprob verdict of one engine, by sequence: a sequence is an error when the mean
    of its tokens' |differences| is above `threshold`. bf16 noise gives small differences, large
    at a few tokens only; an engine that reads wrong context (K/V never written, a stale state)
    moves every logprob of the sequence after that point, which raises the mean where each
    token's regret is still within the token threshold."""
    means = [sum(s) / len(s) if s else 0.0 for s in differences]
    bad = [i for i, m in enumerate(means) if m > threshold]
    return {
        "sequences": len(differences),
        "tokens": sum(map(len, differences)),
        "errors": len(bad),  # sequences, each counted once
        "bad_sequences": len(bad),
        "worst_mean_difference": round(max(means, default=0.0), 4),
        "worst_difference": round(max((x for s in differences for x in s), default=0.0), 3),
        "missing": sum(d == MISSING_LOGPROB for seq in differences for d in seq),
        "threshold": threshold,
    }


class Reference:
    """The checkpoint vLLM loaded, in float32, on transformers' PyTorch kernels, through the
    transformers class of its model class (model.MODEL_CLASSES): the text model alone, in either
    layout (model.load_text_model)."""

    def __init__(self, model_dir: str, device: str = "cuda", model_class: str = MODEL_CLASS):
        import torch

        self.torch = torch
        self.device = device
        model = load_text_model(model_dir, model_class, torch_dtype=torch.float32)
        self.model = model.to(device).eval()
        self._known: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[list[float], list[float]]] = {}

    def regrets(self, prompt: list[int], output: list[int]) -> list[float]:
        return self._scored(prompt, output)[0]

    def output_logprobs(self, prompt: list[int], output: list[int]) -> list[float]:
        """The log-probability of each output token given the prompt and the outputs before it
        (what vLLM's sample logprobs, logprobs=0, return for the tokens it chose)."""
        return self._scored(prompt, output)[1]

    def _scored(self, prompt: list[int], output: list[int]) -> tuple[list[float], list[float]]:
        """Regrets and chosen-token logprobs of one sequence, from one forward pass: verify asks for
        both when it judges output logprobs, and engines that agree ask for the same sequence."""
        key = (tuple(prompt), tuple(output))
        if key not in self._known:
            logp, chosen = self._output_logp(prompt, output)
            self._known[key] = ((logp.max(dim=1).values - chosen).tolist(), chosen.tolist())
        return self._known[key]

    def _output_logp(self, prompt: list[int], output: list[int]):
        torch = self.torch
        ids = torch.tensor([prompt + output], device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids).logits[0].float()
        # position t predicts token t+1: the outputs are predicted from len(prompt)-1 on
        logp = torch.log_softmax(logits[len(prompt) - 1 : len(prompt) - 1 + len(output)], dim=-1)
        chosen = logp.gather(1, torch.tensor(output, device=self.device)[:, None])[:, 0]
        return logp, chosen

    def prompt_logprobs(self, prompt: list[int]) -> list[float]:
        """The log-probability of each prompt token from the second on, given the tokens before it
        (what vLLM's prompt_logprobs=0 returns for positions 1..)."""
        torch = self.torch
        ids = torch.tensor([prompt], device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids).logits[0].float()
        logp = torch.log_softmax(logits[:-1], dim=-1)
        return logp.gather(1, torch.tensor(prompt[1:], device=self.device)[:, None])[:, 0].tolist()
