"""The label rule shared by the chat-style readers (tau2, ATIF, inspect_ai): a graded reward as an outcome.

Their step definition is ``earlyeval.steps.chat`` (docs/formats.md, "Chat-style formats").
"""

from __future__ import annotations

import math
from typing import Any

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.steps.values import is_number

# Default success rule for graded rewards: success iff reward >= 1 - 1e-6.
DEFAULT_SUCCESS_MIN_REWARD = 1.0 - 1e-6
SUCCESS_OPTION = "success_min_reward"


def success_min_reward(spec: RunSpec) -> float:
    """The catalog's success threshold for graded rewards.

    Looked up in the inline label spec (``labels = [{ format = "inline",
    success_min_reward = 0.5 }]``), then in the run's options (a run key or a
    ``[defaults]`` key); default ``1 - 1e-6`` (success iff the reward is 1).
    """
    for ls in spec.labels:
        if ls.format == "inline" and SUCCESS_OPTION in ls.options:
            return float(ls.options[SUCCESS_OPTION])
    if SUCCESS_OPTION in spec.options:
        return float(spec.options[SUCCESS_OPTION])
    return DEFAULT_SUCCESS_MIN_REWARD


def reward_outcome(reward: Any, threshold: float, file: str, field_name: str) -> int:
    """Map a numeric reward to an outcome: 1 iff reward >= threshold."""
    if not is_number(reward):
        raise IngestError(file, field_name, f"expected a number, got {type(reward).__name__}")
    r = float(reward)
    if math.isnan(r):
        raise IngestError(file, field_name, "reward is NaN")
    return 1 if r >= threshold else 0
