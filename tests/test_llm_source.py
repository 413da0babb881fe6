"""The LLM candidate source: separate calls per candidate, focus codes, pruning with reasons, tokens and cost into provenance."""

from __future__ import annotations

from typing import Any

import pytest
from fake_llm import PRICE_IN, PRICE_OUT, FakeLLMServer, Reply
from llm_graphs import MALFORMED, VIEW, cyclic_graph, good_graph, hallucinated_graph

from dynsteer_hook.compile.compiler import compile_blueprint, compile_consensus
from dynsteer_hook.compile.generator.candidates import FOCUS_CODES, deterministic_source
from dynsteer_hook.compile.generator.candidates import GENERATOR as RULES
from dynsteer_hook.llm.candidates import GENERATOR, llm_source
from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.model.errors import ConsensusError, LLMUnavailableError, LLMUsageError

MODEL = "openai/gpt-4o-mini"


def _source(server: FakeLLMServer, **kw: Any) -> Any:
    client = LLMClient(MODEL, api_base=server.url, timeout=5.0, max_retries=1, backoff_base=0.0, temperature=0.8)
    return llm_source(client, **kw)


def _faulty_five(server: FakeLLMServer) -> None:
    server.script(
        Reply(content=good_graph(), prompt_tokens=300, completion_tokens=100),
        Reply(content=MALFORMED, prompt_tokens=300, completion_tokens=40),
        Reply(content=hallucinated_graph(), prompt_tokens=300, completion_tokens=90),
        Reply(content=cyclic_graph(), prompt_tokens=300, completion_tokens=110),
        Reply(content="", prompt_tokens=300, completion_tokens=0),
    )


def test_each_candidate_is_a_separate_call_cycling_through_the_focus_codes(llm_server: FakeLLMServer) -> None:
    """C candidates mean C requests at the client's temperature, batch i under focus code i mod 5."""
    llm_server.script(*[Reply(content=good_graph())] * 7)
    cands = _source(llm_server)(VIEW, 7)
    assert len(cands) == 7 and len(llm_server.requests) == 7
    codes = [FOCUS_CODES[i % len(FOCUS_CODES)].code for i in range(7)]
    assert [c.name for c in cands] == [f"llm:{MODEL}#{i}:{code}" for i, code in enumerate(codes)]
    for i, (body, code) in enumerate(zip(llm_server.requests, codes, strict=True)):
        prompt = body["messages"][1]["content"]
        assert f"This is candidate batch {i}. Focus code: {code}." in prompt
        assert body["temperature"] == 0.8 and "n" not in body
    assert all(c.generator == GENERATOR and c.model == MODEL for c in cands)


def test_concurrent_candidates_overlap_and_keep_their_order(llm_server: FakeLLMServer) -> None:
    """With concurrency, calls are in flight together; candidates still come back in index order."""
    llm_server.script(*[Reply(content=good_graph(), delay=0.3)] * 4)
    cands = _source(llm_server, concurrency=4)(VIEW, 4)
    assert llm_server.peak_in_flight >= 2
    assert [c.name for c in cands] == [f"llm:{MODEL}#{i}:{FOCUS_CODES[i].code}" for i in range(4)]
    prompts = sorted(body["messages"][1]["content"] for body in llm_server.requests)
    assert all(any(f"candidate batch {i}." in p for p in prompts) for i in range(4))
    assert all(c.blueprint is not None for c in cands)


def test_sequential_candidates_never_overlap(llm_server: FakeLLMServer) -> None:
    llm_server.script(*[Reply(content=good_graph(), delay=0.05)] * 3)
    _source(llm_server)(VIEW, 3)
    assert llm_server.peak_in_flight == 1


def test_a_failure_among_concurrent_candidates_propagates(llm_server: FakeLLMServer) -> None:
    """A provider that keeps failing for one candidate ends the compile, as it does sequentially."""
    llm_server.script(*[Reply(content=None, status=503)] * 8)
    with pytest.raises(LLMUnavailableError):
        _source(llm_server, concurrency=3)(VIEW, 3)


def test_concurrency_below_one_is_refused(llm_server: FakeLLMServer) -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        _source(llm_server, concurrency=0)


def test_faulty_answers_are_pruned_with_their_reasons(llm_server: FakeLLMServer) -> None:
    """Malformed JSON, a hallucinated tool, a cycle and an empty answer each prune one candidate, with the reason recorded."""
    _faulty_five(llm_server)
    result = compile_consensus(VIEW, sources=[_source(llm_server)], n=5, min_valid=1)
    rules = {p.candidate.split("#")[1]: (p.rule, p.message) for p in result.pruned}
    assert rules["1:hierarchical"][0] == "json" and "no JSON object" in rules["1:hierarchical"][1]
    assert rules["2:reordered"] == ("schema", "tool 'delete_all_contacts' is not in the tool catalog")
    assert rules["3:liberal"][0] == "acyclic" and "precedence cycle" in rules["3:liberal"][1]
    assert rules["4:conservative"] == ("empty", "the model returned an empty answer")
    assert result.valid == (f"llm:{MODEL}#0:direct",)
    assert [m.tool for m in result.blueprint.milestones] == ["search_contacts", "send_message"]


def test_pruned_candidates_keep_their_raw_text(llm_server: FakeLLMServer) -> None:
    """The answer a candidate was read from stays on the candidate, whatever became of it."""
    _faulty_five(llm_server)
    cands = _source(llm_server)(VIEW, 5)
    assert cands[1].blueprint is None and cands[1].raw == MALFORMED and cands[1].rule == "json"
    assert cands[4].raw == "" and cands[4].rule == "empty"
    assert cands[0].blueprint is not None and cands[0].raw == good_graph()


def test_tokens_cost_and_model_reach_the_provenance(llm_server: FakeLLMServer, priced_model: str) -> None:
    """Every call's tokens and cost, pruned candidates included, are summed into the blueprint's provenance."""
    _faulty_five(llm_server)
    model = f"openai/{priced_model}"
    client = LLMClient(model, api_base=llm_server.url, timeout=5.0, max_retries=1, backoff_base=0.0, temperature=0.8)
    prov = compile_blueprint(VIEW, sources=[llm_source(client)], n=5, min_valid=1).provenance
    assert prov is not None
    assert prov.tokens == 5 * 300 + 100 + 40 + 90 + 110
    assert prov.cost_usd == pytest.approx(1500 * PRICE_IN + 340 * PRICE_OUT)
    assert prov.models == (model,) and prov.generators == (GENERATOR,)
    assert prov.candidates == 5 and prov.valid_candidates == 1


def test_fewer_valid_candidates_than_the_minimum_is_a_clear_error(llm_server: FakeLLMServer) -> None:
    """One valid of five against a minimum of two: ConsensusError naming the counts and the first reasons."""
    _faulty_five(llm_server)
    with pytest.raises(ConsensusError, match=r"only 1 of 5 candidates are valid, fewer than the minimum 2 \(.*json"):
        compile_consensus(VIEW, sources=[_source(llm_server)], n=5, min_valid=2)


def test_the_generator_adds_its_own_candidates(llm_server: FakeLLMServer) -> None:
    """LLM and generator candidates pool into one consensus; provenance lists both sources and the model."""
    llm_server.script(*[Reply(content=good_graph())] * 3)
    prov = compile_blueprint(VIEW, sources=[_source(llm_server), deterministic_source], n=3, min_valid=3).provenance
    assert prov is not None and prov.candidates == 6
    assert prov.generators == tuple(sorted((GENERATOR, RULES)))
    assert MODEL in prov.models and prov.tokens == 3 * 150


def test_a_transient_fault_is_retried_inside_one_candidate(llm_server: FakeLLMServer) -> None:
    """A 500 before an answer costs a retry, not the candidate."""
    llm_server.script(Reply(status=500), Reply(content=good_graph()))
    cands = _source(llm_server)(VIEW, 1)
    assert cands[0].blueprint is not None and len(llm_server.requests) == 2


def test_an_unreachable_provider_propagates(llm_server: FakeLLMServer) -> None:
    """Retries exhausted is not a model's answer: the source raises instead of pruning."""
    llm_server.script(*[Reply(status=503)] * 4)
    with pytest.raises(LLMUnavailableError):
        _source(llm_server)(VIEW, 3)
    assert len(llm_server.requests) == 2


def test_usage_errors_propagate_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing key stops the source before it sends anything."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMUsageError, match="OPENAI_API_KEY"):
        llm_source(LLMClient("gpt-4o-mini"))(VIEW, 1)


def test_litellm_mock_source_without_a_server(priced_model: str) -> None:
    """The offline hook drives the whole source: five identical good answers give a two-milestone blueprint,
    its tokens priced at the model's price."""
    client = LLMClient(f"openai/{priced_model}", extra={"mock_response": good_graph()})
    bp = compile_blueprint(VIEW, sources=[llm_source(client)], n=5, min_valid=5)
    assert [m.tool for m in bp.milestones] == ["search_contacts", "send_message"]
    assert bp.provenance is not None and bp.provenance.tokens == 5 * 30
    assert 5 * 30 * PRICE_IN <= bp.provenance.cost_usd <= 5 * 30 * PRICE_OUT


@pytest.mark.parametrize("n", [0, -1])
def test_candidate_count_must_be_positive(n: int) -> None:
    """n < 1 is a programming error."""
    with pytest.raises(ValueError, match="at least 1"):
        llm_source(LLMClient("gpt-4o-mini", api_key="k"))(VIEW, n)
