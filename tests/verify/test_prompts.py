"""Prompts of `verify --model`: the JSONL format, the built-in set, and rendering through a
checkpoint's tokenizer and chat template (the tiny tokenizer, written here)."""

from __future__ import annotations

import json

import pytest

from vllm_backports.errors import UsageError
from vllm_backports.verify import prompts


def refused(text: str) -> str:
    with pytest.raises(UsageError) as err:
        prompts.parse(text, "p.jsonl")
    return str(err.value)


USER = {"role": "user", "content": "hi"}


def test_messages_and_raw_text_are_read_with_their_groups_and_line_numbers():
    text = "\n".join([json.dumps({"messages": [USER], "group": "chat", "tools": [], "chat_template_kwargs": {"a": 1}}),
                      "", json.dumps({"prompt": "once upon"})])
    a, b = prompts.parse(text, "p.jsonl")
    assert (a.line, a.group, a.messages, a.tools, a.template_kwargs) == (1, "chat", [USER], [], {"a": 1})
    assert (b.line, b.group, b.text, b.messages) == (3, prompts.DEFAULT_GROUP, "once upon", None)


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "p.jsonl line 1: not JSON ("),
    ("[1]", "p.jsonl line 1: not a JSON object"),
    ("{}", 'p.jsonl line 1: needs exactly one of "messages" (chat), "prompt" (raw text) and "prompt_token_ids"'),
    (json.dumps({"prompt": "a", "prompt_token_ids": [1]}), 'p.jsonl line 1: needs exactly one of'),
    (json.dumps({"prompt_token_ids": []}), 'p.jsonl line 1: "prompt_token_ids" must be a non-empty list of token ids'),
    (json.dumps({"prompt_token_ids": [1, -2]}), 'p.jsonl line 1: "prompt_token_ids" must be a non-empty list'),
    (json.dumps({"prompt_token_ids": [1, True]}), 'p.jsonl line 1: "prompt_token_ids" must be a non-empty list'),
    (json.dumps({"prompt_token_ids": "1 2"}), 'p.jsonl line 1: "prompt_token_ids" must be a non-empty list'),
    (json.dumps({"prompt_token_ids": [1], "tools": []}),
     'p.jsonl line 1: "tools" and "chat_template_kwargs" go with "messages"'),
    (json.dumps({"prompt": "a", "messages": [USER]}), 'p.jsonl line 1: needs exactly one of'),
    (json.dumps({"promt": "a"}), "p.jsonl line 1: unknown field 'promt' (fields: messages, prompt, "
                                 "prompt_token_ids, tools, chat_template_kwargs, group)"),
    (json.dumps({"prompt": ""}), 'p.jsonl line 1: "prompt" must be a non-empty string'),
    (json.dumps({"prompt": "a", "tools": []}),
     'p.jsonl line 1: "tools" and "chat_template_kwargs" go with "messages"'),
    (json.dumps({"messages": []}), 'p.jsonl line 1: "messages" must be a non-empty list'),
    (json.dumps({"messages": [{"content": "x"}]}), 'p.jsonl line 1: message 1 needs a string "role"'),
    (json.dumps({"messages": [USER, {"role": "user", "content": 3}]}),
     'p.jsonl line 1: message 2 needs a string "content"'),
    (json.dumps({"messages": [USER], "tools": {}}), 'p.jsonl line 1: "tools" must be a list'),
    (json.dumps({"messages": [USER], "chat_template_kwargs": []}),
     'p.jsonl line 1: "chat_template_kwargs" must be an object'),
    (json.dumps({"messages": [USER], "group": 3}), 'p.jsonl line 1: "group" must be a non-empty string'),
])
def test_a_bad_line_is_refused_with_its_number(line, message):
    assert refused(line).startswith(message)
    assert refused(json.dumps({"prompt": "fine"}) + "\n\n" + line).startswith(message.replace("line 1", "line 3"))


def test_an_assistant_message_of_tool_calls_alone_needs_no_content():
    call = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}
    assert prompts.parse(json.dumps({"messages": [USER, call]}), "p")[0].messages[1] == call


def test_a_file_of_no_prompts_or_no_file_is_refused(tmp_path):
    assert refused("\n \n") == "p.jsonl: no prompts"
    with pytest.raises(UsageError, match=r"--prompts .*missing.jsonl: no such file \(with --model or --server, --prompts is"):
        prompts.load(tmp_path / "missing.jsonl")


def test_the_built_in_set_holds_code_edits_tool_calls_and_a_shared_system_prompt():
    source, records = prompts.load(None)
    assert source == prompts.BUILTIN
    groups = [r.group for r in records]
    assert {g: groups.count(g) for g in groups} == {"code-edit": 4, "tool-call": 4, "shared-system-prompt": 4}
    edits = [r for r in records if r.group == "code-edit"]
    # the answer repeats a file given in the request: what ngram drafts from
    assert all("```" in r.messages[-1]["content"] for r in edits)
    assert all("complete updated file" in r.messages[0]["content"] for r in edits)
    assert all(r.tools for r in records if r.group == "tool-call")
    assert any(m["role"] == "tool" for r in records for m in r.messages)  # a turn after a tool's answer
    shared = [r for r in records if r.group == "shared-system-prompt"]
    system = {r.messages[0]["content"] for r in shared}
    assert len(system) == 1 and len(next(iter(system))) > 6000  # long enough to fill prefix-cache blocks
    assert len({r.messages[-1]["content"] for r in shared}) == 4


# --------------------------------------------------------------------------------------------
# through a tokenizer


def test_messages_go_through_the_chat_template_and_text_as_it_is(checkpoint_dir):
    tok, template = prompts.load_tokenizer(checkpoint_dir)
    assert template is not None
    recs = prompts.parse("\n".join([
        json.dumps({"messages": [{"role": "system", "content": "S"}, USER]}),
        json.dumps({"messages": [USER], "chat_template_kwargs": {"enable_thinking": False}}),
        json.dumps({"prompt": "plain text"}),
    ]), "p")
    chat, nothink, raw = prompts.render(recs, tok, template, "p", checkpoint_dir)
    assert tok.decode(chat) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert chat[:1] == [tok.convert_tokens_to_ids("<|im_start|>")]  # special tokens once, as the template wrote them
    assert tok.decode(nothink).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert raw == tok("plain text")["input_ids"] and tok.decode(raw) == "plain text"


def test_token_ids_go_as_they_are_and_must_be_in_the_vocabulary(checkpoint_dir):
    tok, template = prompts.load_tokenizer(checkpoint_dir)
    (rec,) = prompts.parse(json.dumps({"prompt_token_ids": [5, 6, 7, 8], "group": "k+1"}), "p")
    assert rec.group == "k+1" and prompts.render([rec], tok, template, "p", checkpoint_dir) == [[5, 6, 7, 8]]
    outside = prompts.parse(json.dumps({"prompt_token_ids": [5, len(tok)]}), "p")
    with pytest.raises(UsageError) as caught:
        prompts.render(outside, tok, template, "p", checkpoint_dir)
    assert str(caught.value) == (
        f"p line 1: token id {len(tok)} is outside --model {checkpoint_dir}'s vocabulary of {len(tok)}")


def test_tools_and_tool_calls_are_rendered(checkpoint_dir):
    tok, template = prompts.load_tokenizer(checkpoint_dir)
    _, records = prompts.load(None)
    multi = next(r for r in records if any(m["role"] == "tool" for m in r.messages))
    text = tok.decode(prompts.render([multi], tok, template, "p", checkpoint_dir)[0])
    assert '"name": "create_event"' in text and "<tools>" in text and "<tool_call>" in text
    assert "<tool_response>\n{\"event_id\": \"evt_8812\"" in text


def test_the_built_in_set_renders_and_shares_its_system_prompt_as_a_token_prefix(checkpoint_dir):
    tok, template = prompts.load_tokenizer(checkpoint_dir)
    _, records = prompts.load(None)
    ids = prompts.render(records, tok, template, "built-in", checkpoint_dir)
    shared = [i for r, i in zip(records, ids, strict=True) if r.group == "shared-system-prompt"]
    common = min(len(i) for i in shared)
    while any(i[:common] != shared[0][:common] for i in shared):
        common -= 1
    assert common > 1000  # the tiny tokenizer's tokens: whole cache blocks of the tiny model
    assert all(0 <= t < 2048 for i in ids for t in i)


def test_a_template_that_refuses_a_conversation_is_a_usage_error_naming_its_line(checkpoint_dir):
    tok, template = prompts.load_tokenizer(checkpoint_dir)
    recs = prompts.parse("\n" + json.dumps({"messages": [USER, {"role": "system", "content": "late"}]}), "p.jsonl")
    refusal = r"^p.jsonl line 2: the chat template refused it \(.*a system message must come first"
    with pytest.raises(UsageError, match=refusal):
        prompts.render(recs, tok, template, "p.jsonl", checkpoint_dir)


def test_messages_without_a_chat_template_are_refused_and_raw_text_still_works(checkpoint_dir):
    config = json.loads((checkpoint_dir / "tokenizer_config.json").read_text())
    del config["chat_template"]
    (checkpoint_dir / "tokenizer_config.json").write_text(json.dumps(config))
    tok, template = prompts.load_tokenizer(checkpoint_dir)
    assert template is None
    recs = prompts.parse(json.dumps({"prompt": "x"}) + "\n" + json.dumps({"messages": [USER]}), "p.jsonl")
    none = f'^p.jsonl line 2: "messages" need a chat template, and --model {checkpoint_dir} has none$'
    with pytest.raises(UsageError, match=none):
        prompts.render(recs, tok, template, "p.jsonl", checkpoint_dir)
    assert prompts.render(recs[:1], tok, template, "p.jsonl", checkpoint_dir)


def test_a_template_kept_beside_the_tokenizer_counts(checkpoint_dir):
    config = json.loads((checkpoint_dir / "tokenizer_config.json").read_text())
    template = config.pop("chat_template")
    (checkpoint_dir / "tokenizer_config.json").write_text(json.dumps(config))
    (checkpoint_dir / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    assert prompts.load_tokenizer(checkpoint_dir)[1] == template


def test_a_tokenizer_that_does_not_load_is_a_usage_error(tmp_path):
    pytest.importorskip("transformers")
    from fake_checkpoint import fake_checkpoint

    d = fake_checkpoint(tmp_path / "c")
    (d / "tokenizer.json").write_text("{broken")
    (d / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    with pytest.raises(UsageError, match=f"^--model {d}: its tokenizer does not load \\("):
        prompts.load_tokenizer(d)
