"""The scripted drafter and its offline replay: what verify claims it exercised must be true."""

from __future__ import annotations

import pytest

from vllm_backports.verify.drafts import SCHEDULE, Script, transitions

VOCAB = 50


def script(k: int = 3) -> Script:
    prompts = [[2, 3, 4], [5, 6, 7], [8, 9]]
    conts = [list(range(10, 40)), list(range(20, 50)), [(i * 7) % VOCAB for i in range(30)]]
    return Script(prompts, conts, k=k, vocab=VOCAB)


def test_drafts_follow_the_schedule_with_wrong_tokens_after_the_correct_ones():
    s = script()
    prompt, cont = s.prompts[0], s.continuations[0]
    seen = []
    done = 1
    for step in range(len(SCHEDULE)):
        drafts = s.propose(prompt + cont[:done])
        offered, correct = SCHEDULE[step % len(SCHEDULE)]
        assert len(drafts) == offered
        assert drafts[:correct] == cont[done : done + correct]
        assert all(d != t for d, t in zip(drafts[correct:], cont[done + correct :], strict=False))
        seen.append((offered, correct))
        done += 1
    assert seen == list(SCHEDULE)


def test_requests_run_the_schedule_at_different_phases_so_batches_mix_rows():
    s = script()
    first = [len(s.propose(p + c[:1])) for p, c in zip(s.prompts, s.continuations, strict=True)]
    assert 0 in first and any(n > 0 for n in first)


def test_unknown_context_and_cap_at_k():
    s = script(k=1)
    assert s.propose([99, 98, 97, 96]) == []
    assert len(s.propose(s.prompts[0] + s.continuations[0][:1])) <= 1


def test_prompts_must_be_distinct():
    with pytest.raises(ValueError, match="distinct"):
        Script([[1, 2], [1, 2]], [[3], [3]], k=3, vocab=VOCAB)


def test_replay_of_a_perfect_output_counts_every_transition():
    s = script()
    steps = s.replay(0, s.continuations[0])
    # the engine emitted exactly the continuation, so every correct draft was accepted
    for (offered, accepted), (o, c) in zip(
        steps, [SCHEDULE[i % len(SCHEDULE)] for i in range(len(steps))], strict=True
    ):
        assert offered == o and accepted == c
    t = transitions(steps)
    assert t["accepted_then_no_drafts"] > 0 and t["partial_acceptance"] > 0
    assert t["accepted_drafts"] == sum(a for _, a in steps)


def test_replay_as_v2_ran_it_offers_k_every_step_and_never_a_step_without_drafts():
    s = script()
    scripted, as_v2 = s.replay(0, s.continuations[0]), s.replay(0, s.continuations[0], always_k=True)
    assert [o for o, _ in as_v2] == [3] * len(as_v2)
    # the same acceptance (the pads are wrong tokens), so the same steps
    assert [a for _, a in as_v2] == [a for _, a in scripted]
    t = transitions(as_v2)
    assert t["accepted_then_no_drafts"] == 0 < transitions(scripted)["accepted_then_no_drafts"]
    # (2, 2) and (1, 1) steps are partial acceptances of k drafts there
    assert t["partial_acceptance"] > transitions(scripted)["partial_acceptance"]


def test_replay_of_a_diverged_output_accepts_nothing_after_the_divergence():
    s = script()
    cont = s.continuations[0]
    out = [cont[0]] + [(t + 5) % VOCAB for t in cont[1:]]  # a different path from the second token on
    steps = s.replay(0, out)
    assert transitions(steps)["accepted_drafts"] == 0


def test_replay_does_not_disturb_the_live_counters():
    s = script()
    s.replay(1, s.continuations[1])
    assert s.steps == {}


def test_json_round_trip():
    s = script()
    back = Script.from_json(s.to_json())
    assert (back.prompts, back.continuations, back.k, back.vocab) == (s.prompts, s.continuations, 3, VOCAB)


def test_a_custom_schedule_survives_the_trip_to_the_engine_and_replays():
    s = script()
    s.schedule = ((3, 3),)
    back = Script.from_json(s.to_json())
    assert back.schedule == ((3, 3),)
    out = s.continuations[1][:13]
    # Every draft right: each step emits its 3 drafts plus the bonus token.
    assert back.replay(1, out) == [(3, 3)] * 3
    assert Script.from_json(script().to_json()).schedule == SCHEDULE


def test_reset_restarts_the_schedule_and_can_follow_a_new_continuation():
    from vllm_backports.verify import drafts

    s = script()
    s.schedule = ((3, 3),)
    drafts._installed.append(s)
    try:
        prompt = s.prompts[0]
        assert s.propose(prompt + s.continuations[0][:1]) == s.continuations[0][1:4]
        own = [[t + 1 for t in c] for c in s.continuations]  # what the engine emitted last round
        drafts.reset(own)
        assert s.steps == {} and s.propose(prompt + own[0][:1]) == own[0][1:4]
    finally:
        drafts._installed.remove(s)


def test_the_request_of_a_context_is_the_first_whose_prompt_it_begins_with():
    import random

    rng = random.Random(0)
    shared = [rng.randrange(2, VOCAB) for _ in range(20)]
    prompts = [shared + [i, 7] for i in range(10)] + [[3, 4], [3, 5, 6], [9] * 30]
    s = Script(prompts, [[] for _ in prompts], k=3, vocab=VOCAB)

    def brute(context):
        return next((i for i, p in enumerate(prompts) if context[: len(p)] == p), None)

    contexts = [p + [rng.randrange(2, VOCAB) for _ in range(5)] for p in prompts]
    contexts += [shared, shared + [3], [3], [3, 4], [9] * 29, [], [1, 2, 3]]
    for context in contexts:
        assert s.request_of(context) == brute(context), context
    assert s.request_of(prompts[4] + [1]) == 4 and s.request_of([3, 5, 6, 0]) == 11


def test_a_row_of_the_token_table_finds_the_request_its_context_would():
    np = pytest.importorskip("numpy")
    prompts = [[2, 3, 4], [2, 3, 5, 6], [8, 9], [7] * 20]
    s = Script(prompts, [[] for _ in prompts], k=3, vocab=VOCAB)
    table = np.zeros((6, 30), dtype=np.int32)
    rows = [[2, 3, 4, 11, 12], [2, 3, 5, 6, 1], [8, 9], [7] * 20 + [1], [2, 3, 5], [1, 2, 3]]
    for r, values in enumerate(rows):
        table[r, : len(values)] = values
    for r, values in enumerate(rows):
        for length in range(len(values) + 1):
            assert s.request_of_row(table[r], length) == s.request_of(values[:length]), (r, length)
    assert s.request_of_row(table[1], 5) == 1 and s.request_of_row(table[4], 3) is None


def test_drafts_for_is_what_propose_offers():
    a, b = script(), script()
    prompt, cont = a.prompts[1], a.continuations[1]
    for done in range(1, 8):
        assert a.propose(prompt + cont[:done]) == b.drafts_for(1, done)


def v1_hooked(monkeypatch):
    """V1's ngram proposer as a stand-in module, hooked with a script; and a twin of that script,
    to say what the hook should have drafted."""
    import sys
    import types

    from vllm_backports.verify import drafts

    class NgramProposer:
        pass

    for name in ("vllm", "vllm.v1", "vllm.v1.spec_decode"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    module = types.ModuleType("vllm.v1.spec_decode.ngram_proposer")
    module.NgramProposer = NgramProposer
    monkeypatch.setitem(sys.modules, "vllm.v1.spec_decode.ngram_proposer", module)
    monkeypatch.setattr(drafts, "_installed", [])
    hooked, reference = script(), script()
    drafts.install(hooked)
    return NgramProposer, hooked, reference


def test_the_installed_hook_drafts_for_each_valid_row_as_propose_would(monkeypatch):
    np = pytest.importorskip("numpy")
    from vllm_backports.verify import drafts

    NgramProposer, hooked, reference = v1_hooked(monkeypatch)
    contexts = [
        hooked.prompts[0] + hooked.continuations[0][:3],
        [1, 1, 1],
        hooked.prompts[2] + hooked.continuations[2][:5],
    ]
    table = np.zeros((3, 40), dtype=np.int64)
    for r, c in enumerate(contexts):
        table[r, : len(c)] = c
    lengths = np.array([len(c) for c in contexts])
    out = NgramProposer.batch_propose(None, 4, [0, 1, 2], lengths, table)
    assert out == [reference.propose(c) for c in contexts] + [[]]
    assert out[0] and out[1] == []
    # what tells verify the script drafted at all: a call with a row of the script's counts; one
    # without rows, or whose rows are none of the script's prompts, does not
    assert drafts.served() == 1
    NgramProposer.batch_propose(None, 2, [], lengths, table)
    NgramProposer.batch_propose(None, 2, [1], lengths, table)
    assert drafts.served() == 1


def test_the_v1_hook_offers_no_more_than_the_k_vllm_asks_for(monkeypatch):
    np = pytest.importorskip("numpy")

    NgramProposer, hooked, reference = v1_hooked(monkeypatch)
    context = hooked.prompts[0] + hooked.continuations[0][:3]
    table = np.zeros((1, 40), dtype=np.int64)
    table[0, : len(context)] = context
    full = reference.propose(context)
    assert len(full) == 3
    # 0.24+ passes the step's k positionally, after the token table
    assert NgramProposer.batch_propose(None, 1, [0], np.array([len(context)]), table, 1) == [full[:1]]


def test_no_installed_script_has_served_anything(monkeypatch):
    from vllm_backports.verify import drafts

    monkeypatch.setattr(drafts, "_installed", [script(), script()])
    assert drafts.served() == 0


def fake_vllm(monkeypatch, with_v2: bool):
    """vLLM's two ngram drafters as the hooks see them: V1's CPU proposer and, when `with_v2`, a
    V2 speculator with the real one's signature that drafts k copies of token 7 for every row."""
    import sys
    import types

    torch = pytest.importorskip("torch")

    class NgramProposer:
        pass

    class NgramGPUSpeculator:
        def __init__(self, req_states, k):
            self.req_states, self.drafts = req_states, torch.full((8, k), 7, dtype=torch.int64)

        def propose(self, input_batch, attn_metadata, slot_mappings, last_hidden_states, aux_hidden_states,
                    num_sampled, num_rejected, last_sampled, next_prefill_tokens, temperature, seeds,
                    dp_sync_state=None, dummy_run=False, skip_attn_for_dummy_run=False, mm_inputs=None,
                    is_profile=False, num_speculative_tokens=None):
            return self.drafts[: input_batch.num_reqs]

    modules = {
        "vllm.v1.spec_decode.ngram_proposer": {"NgramProposer": NgramProposer},
        "vllm.v1.worker.gpu.spec_decode.ngram.speculator": {"NgramGPUSpeculator": NgramGPUSpeculator},
    }
    for name in ("vllm", "vllm.v1", "vllm.v1.spec_decode"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    for name, attrs in modules.items():
        if name.endswith("speculator") and not with_v2:
            monkeypatch.setitem(sys.modules, name, None)  # import fails, as before 0.32
            continue
        module = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, name, module)
    return torch, NgramProposer, NgramGPUSpeculator


def test_the_v2_hook_writes_the_scripts_drafts_k_long_over_the_rows_it_knows(monkeypatch):
    from types import SimpleNamespace

    from vllm_backports.verify import drafts

    torch, _, Speculator = fake_vllm(monkeypatch, with_v2=True)
    monkeypatch.setattr(drafts, "_installed", [])
    hooked, reference = script(), script()
    drafts.install(hooked)
    # requests sit in the state table in another order than the batch's rows
    contexts = {3: hooked.prompts[0] + hooked.continuations[0][:3], 0: [1, 1, 1, 1], 5: hooked.prompts[2]}
    spec = Speculator(_v2_state(torch, contexts), k=3)
    batch = SimpleNamespace(num_reqs=3, idx_mapping=torch.tensor([3, 0, 5, 0]))
    # the third row is a prefill chunk short of its end: nothing sampled, nothing drafted
    sampled = torch.tensor([1, 1, 0])
    out = spec.propose(batch, None, None, None, None, sampled, None, None, None, None, None)
    want = reference.drafts_for(0, 3)
    assert out[0].tolist() == reference.padded(want, 0, 3, 3) and len(out[0]) == 3
    assert out[0].tolist()[: len(want)] == want
    assert out[1].tolist() == [7, 7, 7] and out[2].tolist() == [7, 7, 7]  # vLLM's own drafts
    assert drafts.served() == 1
    # a dummy run (graph capture, profiling) is vLLM's alone
    spec.propose(batch, None, None, None, None, sampled, None, None, None, None, None, dummy_run=True)
    assert drafts.served() == 1


def _v2_state(torch, contexts: dict[int, list[int]], width: int = 200):
    """vLLM's request-state table as V2's speculator holds it: a token row and a total length a slot."""
    from types import SimpleNamespace

    table = torch.zeros((16, width), dtype=torch.int32)
    total = torch.zeros(16, dtype=torch.int32)
    for slot, c in contexts.items():
        table[slot, : len(c)] = torch.tensor(c, dtype=torch.int32)
        total[slot] = len(c)
    return SimpleNamespace(total_len=SimpleNamespace(gpu=total), all_token_ids=SimpleNamespace(gpu=table))


@pytest.mark.parametrize("k", [3, 2])
def test_the_v2_hook_drafts_on_the_device_what_the_host_script_would_step_after_step(monkeypatch, k):
    """Random batches over many steps (rows in another order than their slots, prefill rows that
    sampled nothing, unknown rows, requests past their known continuation, prompts sharing their
    first tokens): every row as Script.drafts_for and Script.padded give it, the schedule moving on
    per request exactly as on the host, and the served count the host hook kept."""
    import random
    from types import SimpleNamespace

    from vllm_backports.verify import drafts

    torch, _, Speculator = fake_vllm(monkeypatch, with_v2=True)
    monkeypatch.setattr(drafts, "_installed", [])
    rng = random.Random(7)
    prompts = [[2, 3, 4, 5], [2, 3, 4, 5, 6, 7], [9, 8], [11, 12, 13]]  # 0 begins 1: a row of 1 is 1's
    conts = [[rng.randrange(VOCAB) for _ in range(n)] for n in (40, 12, 40, 3)]
    hooked, reference = Script(prompts, conts, k=3, vocab=VOCAB), Script(prompts, conts, k=3, vocab=VOCAB)
    drafts.install(hooked)
    done, served = [1] * len(prompts), 0
    for _ in range(60):
        reqs = rng.sample(range(len(prompts)), rng.randint(1, len(prompts)))
        slots = rng.sample(range(1, 16), len(reqs) + 1)
        contexts = {slot: prompts[r] + conts[r][: done[r]] + [1] * max(0, done[r] - len(conts[r]))
                    for slot, r in zip(slots, reqs, strict=False)}
        contexts[slots[-1]] = [30, 31, 32, 33, 34]  # a request the script does not know
        order = slots[:]
        rng.shuffle(order)
        sampled = [rng.random() > 0.2 for _ in order]
        spec = Speculator(_v2_state(torch, contexts), k=k)
        batch = SimpleNamespace(num_reqs=len(order), idx_mapping=torch.tensor(order + [0]))
        out = spec.propose(batch, None, None, None, None, torch.tensor(sampled, dtype=torch.int32), None, None, None,
                           None, None)
        hit = False
        for b, slot in enumerate(order):
            row = torch.tensor(contexts[slot], dtype=torch.int32).numpy()
            req = reference.request_of_row(row, len(contexts[slot])) if sampled[b] else None
            if req is None:
                assert out[b].tolist() == [7] * k, (b, slot)
                continue
            d = len(contexts[slot]) - len(prompts[req])
            assert out[b].tolist() == reference.padded(reference.drafts_for(req, d)[:k], req, d, k)
            hit = True
            done[req] += rng.randint(1, 3)
        served += hit
    assert drafts.served() == served > 40


def test_a_reset_round_drafts_from_the_new_continuations_and_keeps_the_count(monkeypatch):
    from types import SimpleNamespace

    from vllm_backports.verify import drafts

    torch, _, Speculator = fake_vllm(monkeypatch, with_v2=True)
    monkeypatch.setattr(drafts, "_installed", [])
    hooked = Script([[2, 3], [4, 5]], [[], []], k=3, vocab=VOCAB)  # a benchmark's: no continuation yet
    drafts.install(hooked)

    def step(context):
        spec = Speculator(_v2_state(torch, {4: context}), k=3)
        batch = SimpleNamespace(num_reqs=1, idx_mapping=torch.tensor([4]))
        return spec.propose(batch, None, None, None, None, torch.tensor([1]), None, None, None, None, None)[0].tolist()

    assert step([2, 3, 40]) == [1, 1, 1]  # nothing known: wrong filler, schedule step 0
    drafts.reset([[40, 41, 42, 43, 44], [9, 9]])
    assert step([2, 3, 40]) == [41, 42, 43]  # the schedule from its start: (3, 3) for request 0
    assert drafts.served() == 2


def test_padding_drafts_is_wrong_after_what_the_schedule_offers():
    s = script()
    cont = s.continuations[1]
    got = s.padded([cont[2]], 1, 2, 3)
    assert got[0] == cont[2] and got[1:] == [(cont[3] + 1) % s.vocab, (cont[4] + 1) % s.vocab]
    # past the known continuation the filler is still a token of the vocabulary
    assert s.padded([], 1, len(cont), 2) == [1, 1]


def test_without_a_v2_speculator_only_the_v1_proposer_is_hooked(monkeypatch):
    from vllm_backports.verify import drafts

    _, proposer, _ = fake_vllm(monkeypatch, with_v2=False)
    monkeypatch.setattr(drafts, "_installed", [])
    drafts.install(script())
    assert hasattr(proposer, "batch_propose")


def test_a_v2_module_that_fails_to_load_leaves_the_v1_hook_working(monkeypatch, capsys):
    import sys
    import types

    from vllm_backports.verify import drafts

    _, proposer, _ = fake_vllm(monkeypatch, with_v2=False)
    broken = types.ModuleType("vllm.v1.worker.gpu.spec_decode.ngram.speculator")

    def fail(name):
        raise RuntimeError("CUDA unavailable at import")

    broken.__getattr__ = fail  # `from ... import NgramGPUSpeculator` raises
    monkeypatch.setitem(sys.modules, "vllm.v1.worker.gpu.spec_decode.ngram.speculator", broken)
    monkeypatch.setattr(drafts, "_installed", [])
    drafts.install(script())
    assert hasattr(proposer, "batch_propose")
    assert "V2 ngram speculator not hooked: CUDA unavailable at import" in capsys.readouterr().err


def landing(block: int = 8) -> Script:
    prompts = [[2, 3, 4, 5, 6], [7, 8, 9]]
    conts = [[(i * 3) % VOCAB for i in range(60)], [(i * 11) % VOCAB for i in range(60)]]
    return Script(prompts, conts, k=3, vocab=VOCAB, land_on=block)


def walk(s: Script, req: int) -> list[tuple[int, int, int]]:
    """(the row's length when drafted, offered, accepted) per step of a greedy output equal to the
    continuation, from the prefill's first token on."""
    length, out = len(s.prompts[req]) + 1, []
    for offered, accepted in s.replay(req, s.continuations[req]):
        out.append((length, offered, accepted))
        length += accepted + 1
    return out


@pytest.mark.parametrize("req", [0, 1])
def test_landing_stops_each_row_one_short_of_every_block_end_and_offers_one_right_draft_there(req):
    s = landing()
    steps = walk(s, req)
    lengths = [length for length, _, _ in steps]
    # block ends the output crosses with k tokens of it still to come (a shorter tail drafts less)
    ends = [t for t in range(lengths[0], lengths[-1] - s.k) if (t + 1) % 8 == 0]
    assert len(ends) >= 6
    for end in ends:
        assert end in lengths, f"the row passed {end} without stopping there"
        assert steps[lengths.index(end)][1:] == (1, 1)
    # elsewhere the schedule still runs: steps without drafts and with every draft right
    assert any(o == 0 for length, o, _ in steps if length not in ends)
    assert any(0 < o == a for length, o, a in steps if length not in ends)


def running_block(block: int, computed: int, scheduled: int) -> int:
    """The block V1's preprocess_mamba keeps a row's running state in: that of the step's last
    scheduled token (tests/release/test_verify_hooks.py reads it off each release)."""
    return -(-(computed + scheduled) // block) - 1


def decisions(s: Script, req: int, block: int) -> list[tuple[str, int]]:
    """The fused postprocess's decision (verify/shifts.py) on each step of a row, with the
    runner's inputs for a decode row: computed = length - 1, scheduled = 1 + offered."""
    from vllm_backports.verify import shifts

    out = []
    for length, offered, accepted in walk(s, req):
        computed, scheduled = length - 1, 1 + offered
        src = running_block(block, computed, scheduled)
        out.append(shifts.decide(block, src, scheduled, computed, offered, accepted + 1))
    return out


def test_the_postprocess_shifts_a_landed_row_by_one_row_within_its_block():
    kinds = decisions(landing(), 0, 8)
    ends = sum(1 for length, _, _ in walk(landing(), 0) if (length + 1) % 8 == 0)
    assert kinds.count(("shift", 1)) == ends and ends >= 6
    assert {k for k, _ in kinds} <= {"none", "shift", "cross"}


def test_a_landing_offers_one_draft_because_k_would_copy_across_blocks():
    """With k drafts the step's last scheduled token, and so the running state, sits in the next
    block, and the same accepted draft makes a cross-block copy: a landing of (k, 1) never shifts
    within a block (0.28.0's first align-shift-ngram run, 2026-12-07, counted none)."""
    from vllm_backports.verify import shifts

    computed = 6  # the row is 7 tokens long, one short of the block's end at 8
    for offered, made in ((1, ("shift", 1)), (3, ("cross", 1))):
        src = running_block(8, computed, 1 + offered)
        assert shifts.decide(8, src, 1 + offered, computed, offered, 2) == made


def test_landing_survives_the_trip_to_the_engine():
    s = landing(160)
    assert Script.from_json(s.to_json()).land_on == 160
    assert Script.from_json(script().to_json()).land_on == 0


def test_a_landing_script_leaves_v2_unhooked_and_says_so(monkeypatch, capsys):
    from vllm_backports.verify import drafts

    _, proposer, speculator = fake_vllm(monkeypatch, with_v2=True)
    original = speculator.propose
    monkeypatch.setattr(drafts, "_installed", [])
    drafts.install(landing())
    assert hasattr(proposer, "batch_propose") and speculator.propose is original
    assert "landing on block ends is V1's only" in capsys.readouterr().err
