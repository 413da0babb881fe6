"""Every compiled milestone says why it is there; `dynsteer explain` prints it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_generator import view

from dynsteer_hook.cli import main as cli_main
from dynsteer_hook.compile.compiler import compile_blueprint, compile_generator_only
from dynsteer_hook.compile.consensus import Candidate
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.blueprint import Blueprint, Milestone, MilestoneEvidence, ToolSpec, explain_blueprint


def kinds(m: Milestone) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in m.evidence:
        out.setdefault(e.kind, []).append(e.detail)
    return out


def test_goal_lookup_and_report_carry_their_words_schema_flow_and_rule() -> None:
    bp = compile_generator_only(view("Send a message to Fredrik Thordendal saying: How's the new album coming along.",
                                     ["send_message_with_phone_number", "search_contacts"]))
    by_tool = {m.tool: kinds(m) for m in bp.milestones}
    send = by_tool["send_message_with_phone_number"]
    assert any("'Send a message'" in d or "'Send'" in d for d in send["instruction"])
    assert any("send_message_with_phone_number does send on message" in d for d in send["schema"])
    assert any("goal rule send_message" in d for d in send["rule"])
    lookup = by_tool["search_contacts"]
    assert any("'phone_number'" in d and "search_contacts's result" in d for d in lookup["data_flow"])
    assert any("looks up contact records" in d for d in lookup["schema"])
    for m in bp.milestones:
        k = kinds(m)
        assert set(k) - {"consensus"}, m.id  # a reason beyond the vote
        assert len(k["consensus"]) == 1 and k["consensus"][0].startswith("proposed by 5 of 5 valid candidates")


def test_a_relative_time_names_the_words_that_need_the_clock() -> None:
    add_reminder = ToolSpec(name="add_reminder", description="Add a reminder", parameters={
        "type": "object", "required": ["content", "reminder_timestamp"],
        "properties": {"content": {"type": "string", "description": "Content of the reminder"},
                       "reminder_timestamp": {"type": "number", "description": "POSIX timestamp of the reminder"}}})
    bp = compile_generator_only(view("Remind me to buy milk tomorrow at 5 PM", [add_reminder, "get_current_timestamp"]))
    clock = next(m for m in bp.milestones if m.tool == "get_current_timestamp")
    assert any("'tomorrow'" in d for d in kinds(clock)["instruction"])
    assert any("computed from the current time" in d for d in kinds(clock)["data_flow"])


def test_consensus_keeps_every_supporting_reason_and_names_the_proposers() -> None:
    """Reasons are pooled over the candidates that hold the node; the result does not depend on their order."""
    v = view("Turn off wifi", ["set_wifi_status"])
    gen = compile_generator_only(v)
    base = gen.model_copy(update={"provenance": None})

    def cand(name: str, detail: str, model: str) -> Candidate:
        ms = tuple(m.model_copy(update={"evidence": (MilestoneEvidence(kind="rule", detail=detail),)}) for m in base.milestones)
        return Candidate(name, base.model_copy(update={"milestones": ms}), generator="llm", model=model)

    cands = [cand("a", "first reason", "m1"), cand("b", "second reason", "m1"), cand("c", "first reason", "m2")]
    one = compile_blueprint(v, cands)
    two = compile_blueprint(v, list(reversed(cands)))
    assert one.to_json() == two.to_json()
    m = one.milestones[0]
    assert [e.detail for e in m.evidence if e.kind == "rule"] == ["first reason", "second reason"]
    assert [e.detail for e in m.evidence if e.kind == "consensus"] == ["proposed by 3 of 3 valid candidates (majority 2): m1 (2), m2 (1)"]


def test_explain_prints_every_milestone_with_its_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bp = compile_generator_only(view("Turn off wifi", ["set_wifi_status"]))
    path = tmp_path / "bp.json"
    save_blueprint(bp, path)
    assert cli_main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == explain_blueprint(bp) + "\n"
    for m in bp.milestones:
        assert m.id in out
        for e in m.evidence:
            assert f"evidence [{e.kind}] {e.detail}" in out
    assert "turn wifi off" in out


def test_explain_says_when_no_evidence_was_recorded() -> None:
    text = explain_blueprint(Blueprint(task="t", milestones=(Milestone(id="a", tool="x"),)))
    assert "evidence: none recorded" in text


@pytest.mark.parametrize("content", [None, "{", "[]", '{"milestones": [{"id": "a"}]}'])
def test_explain_refuses_bad_input_in_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None) -> None:
    path = tmp_path / "bp.json"
    if content is not None:
        path.write_text(content)
    assert cli_main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dynsteer: error:") and str(path) in err and err.count("\n") == 1 and "Traceback" not in err
