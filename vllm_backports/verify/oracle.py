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

    def regrets(self, prompt: list[int], output: list[int]) -> list[float]:
        torch = self.torch
        ids = torch.tensor([prompt + output], device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids).logits[0].float()
        # position t predicts token t+1: the outputs are predicted from len(prompt)-1 on
        logp = torch.log_softmax(logits[len(prompt) - 1 : len(prompt) - 1 + len(output)], dim=-1)
        chosen = logp.gather(1, torch.tensor(output, device=self.device)[:, None])[:, 0]
        return (logp.max(dim=1).values - chosen).tolist()

    def prompt_logprobs(self, prompt: list[int]) -> list[float]:
        """The log-probability of each prompt token from the second on, given the tokens before it
        (what vLLM's prompt_logprobs=0 returns for positions 1..)."""
        torch = self.torch
        ids = torch.tensor([prompt], device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids).logits[0].float()
        logp = torch.log_softmax(logits[:-1], dim=-1)
        return logp.gather(1, torch.tensor(prompt[1:], device=self.device)[:, None])[:, 0].tolist()
