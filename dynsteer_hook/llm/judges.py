"""Judge ladder settings: which model backs Tiers 2 and 3, and the judges built from them.

Settings are a small frozen value, so they travel to ``spawn`` worker processes; the LLM
client is created inside the process that uses it. Their flags are ``--judge-*`` (the model's
fields, plus ``--judge-samples``, ``--judge-passes`` and ``--judge-cache``), each also readable
from ``DYNSTEER_JUDGE_<FIELD>`` (``dynsteer_hook.flags``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynsteer_hook.llm.settings import ModelSettings, option

if TYPE_CHECKING:
    from dynsteer_hook.judges.base import Judge

JUDGE_MODEL = ModelSettings(prefix="judge", temperature=0.7, timeout=60.0, max_retries=2, max_tokens=None)
"""The judges' model defaults: no model (Tier 1 rules only); Tier 2 samples at 0.7, Tier 3 deliberates at 0.2."""


@dataclass(frozen=True)
class JudgeSettings:
    """The model behind the LLM judges (``model.model`` None: Tier 1 rules only) and the ladder's sampling.

    Attributes:
        model: The judges' model; its temperature is Tier 2's (Tier 3 deliberates at 0.2), its
            ``max_tokens`` (when set) bounds both tiers' answers (else 800 and 1200).
        samples: Samples of the Tier 2 judge.
        passes: Deliberation passes of the Tier 3 judge.
        cache: Folder of stored judge answers (``llm.cache``): a call asked before with the same
            model, prompt, sampling and sample index is answered from it, with no model call.
    """

    model: ModelSettings = JUDGE_MODEL
    samples: int = field(default=2, metadata=option("samples of the tier 2 judge", kind=int))
    passes: int = field(default=2, metadata=option("deliberation passes of the tier 3 judge", kind=int))
    cache: str | None = field(default=None, metadata=option(
        "folder of stored judge answers keyed by model, prompt, sampling and sample index: a re-run asks no model for what it "
        "already asked (created if missing)", metavar="DIR"))

    def build(self) -> dict[int, Judge]:
        """Tier 2 and Tier 3 judges for this model (empty without a model).

        Raises:
            ConfigError: The named API-key variable is not set.
            LLMUsageError: The model string or key is unusable (checked before any rollout).
        """
        if not self.model.model:
            return {}
        from dynsteer_hook.judges.llm_judges import ExpertJudge, JsonClient, StandardJudge
        from dynsteer_hook.llm.cache import CachedJudgeClient

        llm = self.model.client()
        client: JsonClient = CachedJudgeClient(llm, Path(self.cache)) if self.cache else llm
        limit = self.model.max_tokens
        return {
            2: StandardJudge(client, samples=self.samples, temperature=self.model.temperature,
                             max_tokens=StandardJudge.max_tokens if limit is None else limit),
            3: ExpertJudge(client, passes=self.passes, max_tokens=ExpertJudge.max_tokens if limit is None else limit),
        }


def judge_cache_stats(judges: Mapping[int, Judge]) -> dict[str, Any] | None:
    """What the judge cache behind these judges did (hits, misses, ignored files), or None without a cache."""
    for judge in judges.values():
        client = getattr(judge, "client", None)
        if client is None:  # Tier 1 rules: no model, no cache (and no import of the LLM client for them)
            continue
        from dynsteer_hook.llm.cache import CachedJudgeClient

        if isinstance(client, CachedJudgeClient):
            return client.stats.to_dict()
    return None


def cache_sentence(stats: Mapping[str, Any]) -> str:
    """One line saying what the judge cache did."""
    return (f"judge cache: {stats['hits']} answers reused, {stats['misses']} asked and stored"
            + (f", {stats['corrupt']} unreadable entries ignored" if stats["corrupt"] else "")
            + (f", {stats['unwritable']} answers not stored (folder not writable)" if stats["unwritable"] else ""))
