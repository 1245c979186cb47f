"""Token counts calibrated to a model server's own tokenizer.

etcode counts with tiktoken; a local model's tokenizer and chat template make its prompts
larger or smaller (SmolLM2's by about 18%). After each request the server's reported prompt
size (``usage.prompt_tokens``: input and cached input) is compared with etcode's count of
the same request (system, tools and messages as sent); their ratio, smoothed, scales every
estimate from the next request on (the status bar's %, the compaction threshold, the check
that the newest message fits) and is handed on to be kept with the server's discovered
facts for the next runs (``provider.discovery.calibrate``, applied by
``wiring.server_window``). Only servers whose counts are not tiktoken's are calibrated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.engine.context import TokenEstimator

#: The bounds of a kept ratio.
RATIO_RANGE = (0.5, 2.5)
#: An observed ratio outside these bounds is not this prompt's count (a proxy's sums, a
#: server that counts something else): it is ignored, not clamped.
PLAUSIBLE = (0.4, 3.0)
#: The weight of the newest observation in the smoothed ratio.
WEIGHT = 0.5
#: Requests counted smaller than this teach nothing (a template's framing dominates them).
MIN_TOKENS = 256
#: A ratio is handed on for keeping when it moved this share since it was last handed on.
STORE_STEP = 0.01


def _clamp(ratio: float) -> float:
    return min(max(ratio, RATIO_RANGE[0]), RATIO_RANGE[1])


@dataclass
class TokenCalibration:
    """The ratio the ``estimators`` scale their counts by (they share it). ``enabled`` is
    set for servers whose tokenizer is not tiktoken's; ``on_learn`` is told each ratio
    worth keeping."""

    estimators: list[TokenEstimator]
    enabled: bool = False
    on_learn: Callable[[float], None] | None = None
    #: Whether a ratio was observed in this session (a stored one no longer applies).
    learned: bool = False
    _known: float | None = field(default=None, repr=False)

    @property
    def ratio(self) -> float:
        return self.estimators[0].ratio

    def _set(self, ratio: float) -> None:
        for estimator in self.estimators:
            estimator.ratio = ratio

    def use(self, ratio: float) -> None:
        """Start from a ratio kept by an earlier run (ignored once one was observed here)."""
        if self.learned or not PLAUSIBLE[0] <= ratio <= PLAUSIBLE[1]:
            return
        self._known = _clamp(ratio)
        self._set(self._known)

    def observe(self, real: int, estimate: int) -> float | None:
        """The server counted ``real`` prompt tokens where etcode counted ``estimate``
        (without calibration): the new ratio, or None when the observation is not used."""
        if not self.enabled or estimate < MIN_TOKENS or real <= 0:
            return None
        seen = real / estimate
        if not PLAUSIBLE[0] <= seen <= PLAUSIBLE[1]:
            return None
        prior = self.ratio if self.learned or self._known is not None else None
        ratio = _clamp(round(seen if prior is None else prior + WEIGHT * (seen - prior), 4))
        self._set(ratio)
        self.learned = True
        known = self._known
        if known is None or abs(ratio - known) >= STORE_STEP * known:
            self._known = ratio
            if self.on_learn is not None:
                self.on_learn(ratio)
        return ratio
