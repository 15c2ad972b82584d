"""The prompts of `verify --model`: a JSONL file, or the built-in set (data/prompts.jsonl).

One JSON object a line (blank lines are skipped):

    {"messages": [{"role": "user", "content": "..."}], "tools": [...], "chat_template_kwargs": {...}}
    {"prompt": "raw text, tokenized as it is"}
    {"prompt_token_ids": [151644, 872, 198]}

with an optional "group" naming the kind of request, which the report counts errors by.
"messages" go through the checkpoint's own chat template (with the generation prompt added, and
"tools" and "chat_template_kwargs" passed to it); "prompt" is tokenized as vLLM tokenizes a text
prompt; "prompt_token_ids" go to the engine as they are (a prompt of an exact length, such as the
k+1 tokens that took a prefill for a speculative decode, vLLM #49918). The built-in set holds
what users report breaking: code edits that repeat their input (ngram's best case), tool calls,
and one long system prompt shared by several requests (prefix caching).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import UsageError

BUILTIN = "built-in"
FIELDS = ("messages", "prompt", "prompt_token_ids", "tools", "chat_template_kwargs", "group")
KINDS = ("messages", "prompt", "prompt_token_ids")
DEFAULT_GROUP = "prompts"


@dataclass(frozen=True)
class Record:
    line: int
    group: str
    messages: list[dict] | None = None
    text: str | None = None
    token_ids: list[int] | None = None
    tools: list | None = None
    template_kwargs: dict = field(default_factory=dict)


def builtin_text() -> str:
    return resources.files("vllm_backports.verify").joinpath("data", "prompts.jsonl").read_text(encoding="utf-8")


def _record(obj: Any, line: int, where: str) -> Record:
    at = f"{where} line {line}"
    if not isinstance(obj, dict):
        raise UsageError(f"{at}: not a JSON object")
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        raise UsageError(f"{at}: unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
    if sum(kind in obj for kind in KINDS) != 1:
        raise UsageError(
            f'{at}: needs exactly one of "messages" (chat), "prompt" (raw text) and "prompt_token_ids" (token ids)'
        )
    group = obj.get("group", DEFAULT_GROUP)
    if not isinstance(group, str) or not group:
        raise UsageError(f'{at}: "group" must be a non-empty string')
    kwargs = obj.get("chat_template_kwargs", {})
    if not isinstance(kwargs, dict):
        raise UsageError(f'{at}: "chat_template_kwargs" must be an object')
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise UsageError(f'{at}: "tools" must be a list')
    if "messages" not in obj and (tools is not None or kwargs):
        raise UsageError(f'{at}: "tools" and "chat_template_kwargs" go with "messages", not raw prompts')
    if "prompt_token_ids" in obj:
        ids = obj["prompt_token_ids"]
        # bool is an int to Python, never a token id
        if not isinstance(ids, list) or not ids or not all(type(i) is int and i >= 0 for i in ids):
            raise UsageError(f'{at}: "prompt_token_ids" must be a non-empty list of token ids (integers >= 0)')
        return Record(line, group, token_ids=ids)
    if "prompt" in obj:
        if not isinstance(obj["prompt"], str) or not obj["prompt"]:
            raise UsageError(f'{at}: "prompt" must be a non-empty string')
        return Record(line, group, text=obj["prompt"])
    messages = obj["messages"]
    if not isinstance(messages, list) or not messages:
        raise UsageError(f'{at}: "messages" must be a non-empty list')
    for i, m in enumerate(messages, 1):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise UsageError(f'{at}: message {i} needs a string "role"')
        content = m.get("content")
        if not (isinstance(content, str) or (content is None and m.get("tool_calls"))):
            raise UsageError(f'{at}: message {i} needs a string "content"')
    return Record(line, group, messages=messages, tools=tools, template_kwargs=kwargs)


def parse(text: str, where: str) -> list[Record]:
    records = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise UsageError(f"{where} line {n}: not JSON ({exc})") from None
        records.append(_record(obj, n, where))
    if not records:
        raise UsageError(f"{where}: no prompts")
    return records


def load(path: Path | None) -> tuple[str, list[Record]]:
    """(where the prompts came from, the records): `path`, or the built-in set for None."""
    if path is None:
        return BUILTIN, parse(builtin_text(), f"{BUILTIN} prompts")
    where = f"--prompts {path}"
    if not path.is_file():
        raise UsageError(f"{where}: no such file (with --model or --server, --prompts is a JSONL file of prompts)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: unreadable ({exc})") from None
    return str(path), parse(text, where)


def load_tokenizer(model: Path):
    """The checkpoint's tokenizer (local files only) and its chat template (None without one).
    A template kept beside the tokenizer (chat_template.jinja, or chat_template.json as
    multimodal checkpoints have it) counts when the tokenizer itself carries none."""
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise UsageError(f"verify --model needs transformers for the checkpoint's tokenizer: {exc}") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model), local_files_only=True)
    except Exception as exc:  # transformers raises many kinds here; all mean the same to the user
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise UsageError(f"--model {model}: its tokenizer does not load ({type(exc).__name__}: {first})") from None
    template = getattr(tokenizer, "chat_template", None) or None
    if template is None and (model / "chat_template.jinja").is_file():
        template = (model / "chat_template.jinja").read_text(encoding="utf-8")
    if template is None and (model / "chat_template.json").is_file():
        try:
            template = json.loads((model / "chat_template.json").read_text(encoding="utf-8")).get("chat_template")
        except (ValueError, AttributeError):
            template = None
    if isinstance(template, dict):  # several named templates: the default one
        template = template.get("default")
    return tokenizer, template if isinstance(template, str) and template else None


def render(records: list[Record], tokenizer, template: str | None, where: str, model: Path) -> list[list[int]]:
    """Token ids of every record: chat messages through `template`, raw text as it is, token ids
    checked against the tokenizer's vocabulary."""
    out = []
    for r in records:
        at = f"{where} line {r.line}"
        if r.token_ids is not None:
            if (top := max(r.token_ids)) >= len(tokenizer):
                raise UsageError(f"{at}: token id {top} is outside --model {model}'s vocabulary of {len(tokenizer)}")
            ids = r.token_ids
        elif r.messages is None:
            assert r.text is not None
            ids = list(tokenizer(r.text)["input_ids"])
        else:
            if template is None:
                raise UsageError(f'{at}: "messages" need a chat template, and --model {model} has none')
            try:
                text = tokenizer.apply_chat_template(
                    r.messages,
                    tools=r.tools,
                    chat_template=template,
                    add_generation_prompt=True,
                    tokenize=False,
                    **r.template_kwargs,
                )
            except Exception as exc:  # a Jinja error, or the template's own raise_exception()
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                raise UsageError(f"{at}: the chat template refused it ({type(exc).__name__}: {first})") from None
            # The template wrote the special tokens it wants; adding the tokenizer's would double them.
            ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        if not ids:
            raise UsageError(f"{at}: no tokens")
        out.append(ids)
    return out
