"""Stage judges: one signature for all tiers."""

from dynsteer_hook.judges.base import (
    TIER_NAMES,
    BindingCheck,
    DimensionScore,
    Judge,
    JudgeRequest,
    StageContext,
    StageGoal,
    Verdict,
)
from dynsteer_hook.judges.tier1 import Tier1Judge

__all__ = [
    "TIER_NAMES",
    "BindingCheck",
    "DimensionScore",
    "Judge",
    "JudgeRequest",
    "StageContext",
    "StageGoal",
    "Tier1Judge",
    "Verdict",
]
