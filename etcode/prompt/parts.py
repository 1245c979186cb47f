"""One piece of the system prompt, tagged with the layer it belongs to."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Layer = Literal["provider", "agent", "environment", "instructions", "skills", "user"]


@dataclass(frozen=True)
class PromptPart:
    """A system prompt part: its ``layer``, where its text came from (``source``: a
    template name, file path or URL; ``None`` when generated) and the ``text`` itself."""

    layer: Layer
    source: str | None
    text: str

    def to_dict(self) -> dict[str, str | None]:
        """``{"layer", "source", "text"}`` as used by ``etcode debug prompt --json``."""
        return asdict(self)
