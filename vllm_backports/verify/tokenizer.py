"""A tokenizer for the tiny model, so that `verify --model` can run on a checkpoint written here.

Nothing can be downloaded, so the tokenizer is made by code: byte-level BPE (every text encodes)
trained with `tokenizers` on the built-in prompts to the model's vocabulary size, with ChatML's
special tokens at the ids the model's config names (0 <|endoftext|>, bos and pad; 1 <|im_end|>,
eos) and a chat template of Qwen's shape that renders tools, tool calls and tool responses, and
honours enable_thinking=False. It is saved as tokenizer.json plus a tokenizer_config.json of
PreTrainedTokenizerFast that holds the template, which transformers 4 and 5 both read.

    python -m vllm_backports.verify.tokenizer DIR [--mtp] [--model-class qwen3_5]

writes the tiny checkpoint (model.write_model: the same weights as `apply.py verify` runs) and
this tokenizer into DIR.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import model, prompts

SPECIAL = ("<|endoftext|>", "<|im_end|>", "<|im_start|>")  # ids 0, 1, 2

CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n' }}
{{- 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments ' }}
{{- 'within <tool_call></tool_call> XML tags:\\n<tool_call>\\n' }}
{{- '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- if not loop.first %}{{- raise_exception('a system message must come first') }}{%- endif %}
{%- elif message.role == 'user' %}
{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' + (message.content or '') }}
{%- for call in message.tool_calls or [] %}
{%- set f = call.function if call.function is defined else call %}
{{- '\\n<tool_call>\\n{"name": "' + f.name + '", "arguments": ' }}
{%- if f.arguments is string %}{{- f.arguments }}{%- else %}{{- f.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- raise_exception('unknown role: ' + message.role) }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}
{%- endif %}
"""


def corpus() -> list[str]:
    """What the BPE merges are learnt from: every string of the built-in prompts."""
    out: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for line in prompts.builtin_text().splitlines():
        if line.strip():
            walk(json.loads(line))
    return out


def build(vocab_size: int):
    """The trained `tokenizers` Tokenizer (its vocabulary never exceeds `vocab_size`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    return tok


def write_tokenizer(directory: Path, vocab_size: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    build(vocab_size).save(str(directory / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": SPECIAL[1],
        "pad_token": SPECIAL[0],
        "add_bos_token": False,
        "model_max_length": 4096,
        "chat_template": CHAT_TEMPLATE,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return directory


def write_checkpoint(directory: Path, mtp: bool = False, model_class: str = model.MODEL_CLASS) -> Path:
    """The tiny checkpoint verify runs (same weights, reused when unchanged) with this tokenizer."""
    model.write_model(directory, mtp=mtp, model_class=model_class)
    return write_tokenizer(directory, model.vocab_size(model_class))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_backports.verify.tokenizer", description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--mtp", action="store_true", help="with an MTP layer (for --preset mtp)")
    parser.add_argument("--model-class", choices=list(model.MODEL_CLASSES), default=model.MODEL_CLASS)
    args = parser.parse_args(argv)
    print(write_checkpoint(args.directory, mtp=args.mtp, model_class=args.model_class))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
