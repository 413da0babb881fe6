"""Judge ladder settings: which model backs Tiers 2 and 3, built where the evaluator runs.

Settings are a small frozen value, so they travel to ``spawn`` worker processes; the LLM
client is created inside the process that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
