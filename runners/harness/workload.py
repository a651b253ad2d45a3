"""The standard workloads: fixed, versioned prompt text whose sha256 travels with every run.

Changing a prompt's text means a new version: results of different versions are
never compared (the service's comparison key includes the prompt hash).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from runners.config import WorkloadConfig

SPACE_INVADERS_V1 = """\
Write a complete, playable Space Invaders game as a single self-contained HTML file.

Requirements:
- One file: HTML, CSS in a <style> element and JavaScript in a <script> element.
  No external libraries, images or fonts.
- Draw everything on a <canvas> element of 800x600 pixels.
- The player's ship moves left and right with the arrow keys and fires with the space bar;
  one player bullet on screen at a time.
- A formation of 5 rows by 11 columns of invaders marches sideways, steps down when it
  reaches an edge, and speeds up as invaders are destroyed.
- Invaders drop bombs at random; four destructible shields protect the player.
- A mystery ship crosses the top of the screen now and then and is worth bonus points.
- Show the score, the high score (kept in localStorage) and the remaining lives;
  the player starts with 3 lives.
- When all invaders are destroyed, start the next wave faster. When the invaders reach
  the player or the lives run out, show "GAME OVER" and let the player restart with Enter.
- Use requestAnimationFrame for the game loop and keep the game speed independent of
  the frame rate.

Reply with the HTML file only, starting with <!DOCTYPE html>, with no explanation before or after it.
"""

PROMPTS = {("space-invaders-html", "1"): SPACE_INVADERS_V1}
CURRENT_VERSION = {"space-invaders-html": "1"}


def prompt_sha256(text: str) -> str:
    """Return the hex sha256 of the prompt's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Workload:
    """A workload at one version with its sampling settings."""

    name: str
    version: str
    prompt: str
    max_tokens: int
    repetitions: int
    warmup: int
    temperature: float
    top_k: int | None
    top_p: float | None
    min_p: float | None
    seed: int | None
    thinking: bool
    request_timeout_s: float
    disagreement_pct: float

    @property
    def prompt_sha256(self) -> str:
        return prompt_sha256(self.prompt)

    @classmethod
    def from_config(cls, config: WorkloadConfig) -> Workload:
        """Return the workload ``config`` names; raise KeyError for an unknown workload."""
        version = CURRENT_VERSION.get(config.name)
        if version is None:
            raise KeyError(f"unknown workload {config.name!r} (known: {', '.join(sorted(CURRENT_VERSION))})")
        return cls(
            name=config.name,
            version=version,
            prompt=PROMPTS[(config.name, version)],
            max_tokens=config.max_tokens,
            repetitions=config.repetitions,
            warmup=config.warmup,
            temperature=config.temperature,
            top_k=config.top_k,
            top_p=config.top_p,
            min_p=config.min_p,
            seed=config.seed,
            thinking=config.thinking,
            request_timeout_s=config.request_timeout_s,
            disagreement_pct=config.disagreement_pct,
        )

    def sampling(self) -> dict[str, Any]:
        """Return the sampling fields of a request body (unset ones left to the server)."""
        body: dict[str, Any] = {"temperature": self.temperature}
        for key in ("top_k", "top_p", "min_p", "seed"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        return body

    def chat_body(self, *, model: str = "") -> dict[str, Any]:
        """Return the /v1/chat/completions body for one repetition.

        ``cache_prompt: false`` makes every repetition pay the full prefill (the
        server's ``timings.cache_n`` is checked to confirm it); the thinking switch
        goes through ``chat_template_kwargs``, which templates without one ignore."""
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": False,
            "chat_template_kwargs": {"enable_thinking": self.thinking},
            **self.sampling(),
        }
        if model:
            body["model"] = model
        return body

    def payload(self) -> dict[str, Any]:
        """Return the run payload's ``workload`` object (docs/api.md)."""
        return {
            "name": self.name,
            "version": self.version,
            "prompt_sha256": self.prompt_sha256,
            "max_tokens": self.max_tokens,
            "repetitions": self.repetitions,
            "warmup": self.warmup,
        }
