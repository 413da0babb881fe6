"""Judge ladder settings: which model backs Tiers 2 and 3, their flags, and the judges built from them.

Settings are a small frozen value, so they travel to ``spawn`` worker processes; the LLM
client is created inside the process that uses it. The flags are ``--judge-*`` (the model's,
from ``model_settings``, plus ``--judge-samples`` and ``--judge-passes``), each also readable
from ``DYNSTEER_JUDGE_<FIELD>``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynsteer_hook.judges.base import Judge
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.model_settings import ModelSettings, add_model_flags, env_name, model_from_args, setting

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
        cache: Folder of stored judge answers (``judge_cache``): a call asked before with the same
            model, prompt, sampling and sample index is answered from it, with no model call.
    """

    model: ModelSettings = JUDGE_MODEL
    samples: int = 2
    passes: int = 2
    cache: str | None = None

    def build(self) -> dict[int, Judge]:
        """Tier 2 and Tier 3 judges for this model (empty without a model).

        Raises:
            ConfigError: The named API-key variable is not set.
            LLMUsageError: The model string or key is unusable (checked before any rollout).
        """
        if not self.model.model:
            return {}
        from dynsteer_hook.judge_cache import CachedJudgeClient
        from dynsteer_hook.judges.llm_judges import ExpertJudge, JsonClient, StandardJudge

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
    from dynsteer_hook.judge_cache import CachedJudgeClient

    for judge in judges.values():
        client = getattr(judge, "client", None)
        if isinstance(client, CachedJudgeClient):
            return client.stats.to_dict()
    return None


def cache_sentence(stats: Mapping[str, Any]) -> str:
    """One line saying what the judge cache did."""
    return (f"judge cache: {stats['hits']} answers reused, {stats['misses']} asked and stored"
            + (f", {stats['corrupt']} unreadable entries ignored" if stats["corrupt"] else "")
            + (f", {stats['unwritable']} answers not stored (folder not writable)" if stats["unwritable"] else ""))


def add_judge_flags(p: argparse.ArgumentParser) -> None:
    """Options of the Tier 2/3 LLM judges (without --judge-model: Tier 1 rules only)."""
    add_model_flags(p, JUDGE_MODEL, title="LLM judges (tiers 2 and 3; without --judge-model: Tier 1 rules only)", skip=("tool_choice",))
    g = p.add_argument_group("judge ladder")
    g.add_argument("--judge-samples", type=int, default=None, help=f"samples of the tier 2 judge (default 2); env {env_name('judge', 'samples')}")
    g.add_argument("--judge-passes", type=int, default=None,
                   help=f"deliberation passes of the tier 3 judge (default 2); env {env_name('judge', 'passes')}")
    g.add_argument("--judge-cache", default=None, metavar="DIR",
                   help="folder of stored judge answers keyed by model, prompt, sampling and sample index: a re-run asks no model "
                        f"for what it already asked (created if missing); env {env_name('judge', 'cache')}")


def judges_from_args(args: argparse.Namespace, config: EvaluatorConfig,
                     environ: Mapping[str, str] | None = None) -> tuple[JudgeSettings, EvaluatorConfig]:
    """Judge settings (flags, then ``DYNSTEER_JUDGE_*``, then defaults), and the config with ``max_tier``
    defaulting to 3 when a judge model is given."""
    settings = JudgeSettings(
        model=model_from_args(args, JUDGE_MODEL, environ),
        samples=setting(args, "judge", "samples", 2, environ),
        passes=setting(args, "judge", "passes", 2, environ),
        cache=setting(args, "judge", "cache", None, environ) or None,
    )
    if settings.cache is not None and Path(settings.cache).exists() and not Path(settings.cache).is_dir():
        raise DynsteerError(f"--judge-cache {settings.cache} is a file; pass a folder for the stored judge answers (it is created if missing)")
    if settings.model.model and getattr(args, "max_tier", None) is None:
        config = config.with_overrides(max_tier=3)
    if config.max_tier > 1 and not settings.model.model:
        asked = f"--min-tier {config.min_tier}" if config.min_tier > 1 else f"--max-tier {config.max_tier}"
        raise DynsteerError(f"{asked} needs an LLM judge: pass --judge-model (and --judge-api-base for a local server)")
    if settings.samples < 1 or settings.passes < 1:
        raise DynsteerError(f"the tier 2 samples and tier 3 passes (--judge-samples, --judge-passes, or {env_name('judge', 'samples')}, "
                            f"{env_name('judge', 'passes')}) must be at least 1, not {settings.samples} and {settings.passes}")
    return settings, config
