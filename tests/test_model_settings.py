"""One settings type and one flag function for every model: judge, agent, user and compile models."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer
from judge_runs import chain_files as _files
from judge_runs import standard_reply as _standard

from dynsteer_hook.cli import build_parser, main
from dynsteer_hook.flags import add_model_flags, judges_from_args, model_from_args
from dynsteer_hook.llm.endpoint import endpoint_without_secrets
from dynsteer_hook.llm.judges import JUDGE_MODEL
from dynsteer_hook.llm.settings import ModelSettings, env_name
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.toolsandbox.commands.compile import COMPILE_MODEL
from dynsteer_hook.toolsandbox.roles.named import AGENT_MODEL, USER_MODEL

ROLES = {"judge": ("evaluate", JUDGE_MODEL), "agent": ("run", AGENT_MODEL), "user": ("run", USER_MODEL), "compile": ("compile", COMPILE_MODEL)}
REQUIRED = {"evaluate": ["--blueprint", "b", "--events", "e", "--report", "r"], "run": [], "compile": ["--all"]}


def _parse(command: str, *flags: str) -> argparse.Namespace:
    return build_parser().parse_args([command, *REQUIRED[command], *flags])


@pytest.mark.parametrize("prefix", sorted(ROLES))
def test_each_model_takes_the_same_flags_under_its_prefix(prefix: str) -> None:
    """--<prefix>-model, -api-base, -api-key-env, -temperature, -timeout, -max-retries, -max-tokens and -backoff fill one ModelSettings."""
    command, defaults = ROLES[prefix]
    args = _parse(command, f"--{prefix}-model", "openai/m", f"--{prefix}-api-base", "http://127.0.0.1:9/v1",
                  f"--{prefix}-api-key-env", "KEY_VAR", f"--{prefix}-temperature", "0.3", f"--{prefix}-timeout", "7",
                  f"--{prefix}-max-retries", "1", f"--{prefix}-max-tokens", "64", f"--{prefix}-backoff", "0.5")
    settings = model_from_args(args, defaults, environ={})
    assert settings == ModelSettings(model="openai/m", api_base="http://127.0.0.1:9/v1", api_key_env="KEY_VAR", temperature=0.3,
                                     timeout=7.0, max_retries=1, max_tokens=64, backoff=0.5, json_mode=defaults.json_mode, prefix=prefix)


@pytest.mark.parametrize("prefix", sorted(ROLES))
def test_without_flags_or_environment_each_model_keeps_its_role_defaults(prefix: str) -> None:
    """No flag and no DYNSTEER_* variable gives the role's own defaults (the agent answers greedily, compile waits 300 s)."""
    command, defaults = ROLES[prefix]
    assert model_from_args(_parse(command), defaults, environ={}) == defaults


# (flag value, environment value, expected timeout): a flag beats the environment, which beats the default.
PRECEDENCE = [
    (None, None, JUDGE_MODEL.timeout),
    (None, "7", 7.0),
    ("3", "7", 3.0),
    ("3", None, 3.0),
    (None, "", JUDGE_MODEL.timeout),  # an empty variable is unset
]


@pytest.mark.parametrize(("flag", "env", "expected"), PRECEDENCE)
def test_a_flag_beats_the_environment_which_beats_the_default(flag: str | None, env: str | None, expected: float) -> None:
    """The judge timeout comes from --judge-timeout, else DYNSTEER_JUDGE_TIMEOUT, else the default."""
    args = _parse("evaluate", *(["--judge-timeout", flag] if flag is not None else []))
    environ = {} if env is None else {"DYNSTEER_JUDGE_TIMEOUT": env}
    assert model_from_args(args, JUDGE_MODEL, environ).timeout == expected


def test_every_field_is_read_from_its_environment_variable() -> None:
    """DYNSTEER_<PREFIX>_<FIELD> sets each field of the agent's model when no flag does."""
    environ = {"DYNSTEER_AGENT_MODEL": "openai/env-model", "DYNSTEER_AGENT_API_BASE": "http://127.0.0.1:8/v1",
               "DYNSTEER_AGENT_API_KEY_ENV": "ENV_KEY", "DYNSTEER_AGENT_TEMPERATURE": "0.4", "DYNSTEER_AGENT_TIMEOUT": "9",
               "DYNSTEER_AGENT_MAX_RETRIES": "0", "DYNSTEER_AGENT_MAX_TOKENS": "32", "DYNSTEER_AGENT_BACKOFF": "0.25"}
    settings = model_from_args(_parse("run"), AGENT_MODEL, environ)
    assert (settings.model, settings.api_base, settings.api_key_env) == ("openai/env-model", "http://127.0.0.1:8/v1", "ENV_KEY")
    assert (settings.temperature, settings.timeout, settings.max_retries, settings.max_tokens, settings.backoff) == (0.4, 9.0, 0, 32, 0.25)


def test_the_unprefixed_compile_flags_still_name_the_compile_model() -> None:
    """compile's --model, --api-base, --timeout... give the same settings as --compile-model, --compile-api-base, --compile-timeout..."""
    old = _parse("compile", "--model", "openai/m", "--api-base", "http://127.0.0.1:9/v1", "--timeout", "5", "--max-retries", "0",
                 "--backoff", "0.01", "--temperature", "0.1", "--max-tokens", "99", "--json-mode", "object", "--api-key-env", "K")
    new = _parse("compile", "--compile-model", "openai/m", "--compile-api-base", "http://127.0.0.1:9/v1", "--compile-timeout", "5",
                 "--compile-max-retries", "0", "--compile-backoff", "0.01", "--compile-temperature", "0.1", "--compile-max-tokens", "99",
                 "--compile-json-mode", "object", "--compile-api-key-env", "K")
    assert model_from_args(old, COMPILE_MODEL, {}) == model_from_args(new, COMPILE_MODEL, {})
    assert model_from_args(old, COMPILE_MODEL, {}).json_mode == "object"


def test_a_role_can_leave_out_a_field_that_means_nothing_for_it() -> None:
    """The agent and the user answer with tool calls, not JSON: they get no --agent-json-mode flag."""
    with pytest.raises(SystemExit):
        _parse("run", "--agent-json-mode", "object")


def test_flags_of_a_new_role_come_from_the_same_function() -> None:
    """add_model_flags gives any prefix the whole set, with the variable named in each help text."""
    parser = argparse.ArgumentParser()
    add_model_flags(parser, ModelSettings(prefix="critic"), title="critic model")
    assert model_from_args(parser.parse_args(["--critic-model", "openai/c"]), ModelSettings(prefix="critic"), {}).model == "openai/c"
    assert env_name("critic", "max_retries") in " ".join(parser.format_help().split())


# (endpoint given, endpoint a report may show)
ENDPOINTS = [
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("https://user:sk-secret@api.example.com/v1", "https://api.example.com/v1"),
    ("https://api.example.com/v1?api_key=sk-secret&x=1", "https://api.example.com/v1"),
    ("https://api.example.com/v1#sk-secret", "https://api.example.com/v1"),
    ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
    ("http://host:notaport/v1", "(unreadable endpoint)"),
    ("sk-secret", "(unreadable endpoint)"),
    (None, None),
]


@pytest.mark.parametrize(("given", "shown"), ENDPOINTS)
def test_an_endpoint_loses_every_part_that_can_hold_a_secret(given: str | None, shown: str | None) -> None:
    """User, password, query and fragment go; scheme, host, port and path stay."""
    assert endpoint_without_secrets(given) == shown


@pytest.mark.usefixtures("core_cli")
def test_the_report_says_how_its_judges_were_made_and_holds_no_secret(llm_server: FakeLLMServer, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Model, endpoint without its password, samples, passes and temperatures are recorded; the key and password are nowhere."""
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", "sk-key-never-recorded")
    llm_server.script(*[_standard(0.8)] * 10)
    bp, trace = _files(tmp_path)
    base = llm_server.url.replace("http://", "http://judge:pw-never-recorded@")
    assert main(["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(tmp_path / "out"),
                 "--judge-model", "openai/local-judge", "--judge-api-base", base, "--judge-api-key-env", "JUDGE_KEY_FOR_TEST",
                 "--judge-max-retries", "0", "--judge-samples", "1", "--judge-passes", "3", "--judge-temperature", "0.5"]) == 0
    report = json.loads((tmp_path / "out" / "dynsteer_report.json").read_text())
    judges = report["judges"]
    assert judges["2"] == {"judge": "tier2-standard", "model": "openai/local-judge", "endpoint": llm_server.url, "samples": 1,
                           "temperature": 0.5, "max_tokens": 800}
    assert judges["3"] == {"judge": "tier3-specialist", "model": "openai/local-judge", "endpoint": llm_server.url, "passes": 3,
                           "temperature": 0.2, "max_tokens": 1200}
    assert judges["1"]["judge"] == "tier1-rules"
    assert report["judge_usage"]["calls_by_tier"]["2"] >= 1  # the judges were really used over HTTP
    for path in (tmp_path / "out").iterdir():
        text = path.read_text()
        assert "never-recorded" not in text, path.name


@pytest.mark.usefixtures("core_cli")
def test_judges_configured_by_environment_alone_reach_the_llm_tiers(llm_server: FakeLLMServer, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """DYNSTEER_JUDGE_MODEL and DYNSTEER_JUDGE_API_BASE without any --judge flag enable tiers 2 and 3 over HTTP."""
    llm_server.script(*[_standard(0.8)] * 10)
    for name, value in {"MODEL": "openai/env-judge", "API_BASE": llm_server.url, "MAX_RETRIES": "0", "SAMPLES": "1", "PASSES": "1"}.items():
        monkeypatch.setenv(f"DYNSTEER_JUDGE_{name}", value)
    bp, trace = _files(tmp_path)
    assert main(["evaluate", "--blueprint", str(bp), "--events", str(trace), "--report", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "dynsteer_report.json").read_text())
    assert report["config"]["max_tier"] == 3 and report["judges"]["2"]["model"] == "openai/env-judge"
    assert [body["model"] for body in llm_server.requests][:1] == ["env-judge"]


def test_judge_settings_never_hold_the_key_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings name the variable holding the key; the value is read only when a client is made."""
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", "sk-key-never-recorded")
    settings, _ = judges_from_args(_parse("evaluate", "--judge-model", "openai/x", "--judge-api-key-env", "JUDGE_KEY_FOR_TEST"),
                                   EvaluatorConfig(), environ={})
    assert "never-recorded" not in repr(settings) and settings.model.api_key_env == "JUDGE_KEY_FOR_TEST"



@pytest.mark.parametrize(("field", "value"), [("timeout", 1e308), ("timeout", float("inf")), ("timeout", float("nan")),
                                              ("backoff", float("nan")), ("backoff", 1e308), ("max_retries", 10**9)])
def test_a_wait_no_timer_can_hold_or_no_number_is_refused_in_one_sentence(field: str, value: float) -> None:
    """A timeout of 1e308 s would overflow the attempt's timer at the first call and NaN passes every comparison: both are
    refused with the flag and the range, before any model is asked."""
    from dynsteer_hook.model.errors import ConfigError

    settings = ModelSettings(model="openai/x", prefix="judge", **{field: value})
    with pytest.raises(ConfigError, match=f"--judge-{field.replace('_', '-')} must be") as exc:
        settings.check()
    assert "\n" not in str(exc.value)
