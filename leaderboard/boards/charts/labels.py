"""Context labels as the articles print them (4K, 128K, 198K): read and written."""

from __future__ import annotations


def ctx_tokens_from_label(label: str) -> int | None:
    """Return the token count a printed context label stands for ('198K' → 198 × 1024,
    as the articles' 4K…128K are); None when the label is not of that form."""
    text = (label or "").strip().upper()
    multiplier = 1
    if text.endswith("K"):
        text, multiplier = text[:-1], 1024
    elif text.endswith("M"):
        text, multiplier = text[:-1], 1024 * 1024
    try:
        value = float(text)
    except ValueError:
        return None
    return round(value * multiplier) if value > 0 else None


def ctx_label(tokens: int) -> str:
    """Return ``tokens`` as the articles print a context: "4K" for 4096, else the count."""
    return f"{tokens // 1024}K" if tokens >= 1024 and tokens % 1024 == 0 else str(tokens)
