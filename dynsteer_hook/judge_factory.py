"""Judge ladder settings: which model backs Tiers 2 and 3, built where the evaluator runs.

Settings are a small frozen value, so they travel to ``spawn`` worker processes; the LLM
client is created inside the process that uses it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from dynsteer_hook.config import EvaluatorConfig
from dynsteer_hook.errors import DynsteerError
from dynsteer_hook.judges.base import Judge


@dataclass(frozen=True)
class JudgeSettings:
    """The model behind the LLM judges (``model=None``: Tier 1 rules only)."""

    model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    max_retries: int = 2
    samples: int = 2
    passes: int = 2

    def build(self) -> dict[int, Judge]:
        """Tier 2 and Tier 3 judges for this model (empty without a model).

        Raises:
            ConfigError: The named API-key variable is not set.
            LLMUsageError: The model string or key is unusable (checked before any rollout).
        """
        if not self.model:
            return {}
        from dynsteer_hook.judges.llm_judges import ExpertJudge, StandardJudge
        from dynsteer_hook.llm import LLMClient, api_key_from_env

        key = api_key_from_env(self.api_key_env, "--judge-api-key-env")
        client = LLMClient(self.model, api_base=self.api_base, api_key=key, timeout=self.timeout, max_retries=self.max_retries)
        client.check()
        return {
            2: StandardJudge(client, samples=self.samples),
            3: ExpertJudge(client.with_options(temperature=0.2), passes=self.passes),
        }


def add_judge_flags(p: argparse.ArgumentParser) -> None:
    """Options of the Tier 2/3 LLM judges (without --judge-model: Tier 1 rules only)."""
    g = p.add_argument_group("LLM judges (tiers 2 and 3)")
    g.add_argument("--judge-model", default=None, help="litellm model string, e.g. openai/gpt-4o-mini; enables tiers 2 and 3")
    g.add_argument("--judge-api-base", default=None, help="endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp)")
    g.add_argument("--judge-api-key-env", default=None, metavar="VAR", help="environment variable holding the API key")
    g.add_argument("--judge-timeout", type=float, default=60.0, help="seconds per attempt of a judge call, whole answer included")
    g.add_argument("--judge-max-retries", type=int, default=2, help="retries on timeouts, 429 and 5xx")
    g.add_argument("--judge-samples", type=int, default=2, help="samples of the tier 2 judge")
    g.add_argument("--judge-passes", type=int, default=2, help="deliberation passes of the tier 3 judge")


def judges_from_args(args: argparse.Namespace, config: EvaluatorConfig) -> tuple[JudgeSettings, EvaluatorConfig]:
    """Judge settings, and the config with ``max_tier`` defaulting to 3 when a judge model is given."""
    settings = JudgeSettings(
        model=args.judge_model,
        api_base=args.judge_api_base,
        api_key_env=args.judge_api_key_env,
        timeout=args.judge_timeout,
        max_retries=args.judge_max_retries,
        samples=args.judge_samples,
        passes=args.judge_passes,
    )
    if settings.model and getattr(args, "max_tier", None) is None:
        config = config.with_overrides(max_tier=3)
    if config.max_tier > 1 and not settings.model:
        raise DynsteerError(f"--max-tier {config.max_tier} needs an LLM judge: pass --judge-model (and --judge-api-base for a local server)")
    if settings.samples < 1 or settings.passes < 1 or settings.max_retries < 0 or settings.timeout <= 0:
        raise DynsteerError("--judge-samples and --judge-passes must be at least 1, --judge-max-retries 0 or more, --judge-timeout positive")
    return settings, config
