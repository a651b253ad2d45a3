"""A form renderer that writes Django's ``<input>`` widgets in Python instead of through
``django/forms/widgets/input.html`` and ``attrs.html``: the leaderboard's filter form has
seven inputs (text, two dates, a number, two checkboxes, a hidden one), and the template
engine rendered each as two templates with a loop over its attributes, ~1.5–3 ms of the
board's CPU a request (benchmarks/site_phases.py, thirty-third session).

Only the writing of the tag moves: the widget's context (its type, name, value as the
widget formats it, attributes with ``id``, ``maxlength``, ``min``/``max``/``step``,
``checked``, ``aria-*``) is still built by Django's ``Widget.get_context`` and
``BoundField.build_widget_attrs``, so every rule of what an input carries stays Django's.
Every other template (a select's, an error list's) goes to Django's own renderer.

Plain reference: ``django.forms.renderers.DjangoTemplates``, the default renderer.
tests/boards/test_cells_speedup.py holds the two equal for every field of the filter form
on valid, invalid and hostile queries."""

from __future__ import annotations

from typing import Any

from django.forms.renderers import DjangoTemplates

from leaderboard.boards.speedups.html import esc

# The widget templates that are input.html and nothing else (each is one include of it).
_INPUT_TEMPLATES = frozenset(
    f"django/forms/widgets/{name}.html"
    for name in (
        "input",
        "text",
        "date",
        "datetime",
        "time",
        "number",
        "email",
        "url",
        "password",
        "hidden",
        "checkbox",
        "search",
        "color",
        "tel",
    )
)


def input_tag(widget: dict[str, Any]) -> str:
    """Return what input.html renders for a widget's context: ``<input type name [value] attrs>``,
    an attribute whose value is False left out and one whose value is True written bare."""
    parts = [f'<input type="{esc(widget["type"])}" name="{esc(widget["name"])}"']
    if widget["value"] is not None:
        parts.append(f' value="{esc(_text(widget["value"]))}"')
    for name, value in widget["attrs"].items():
        if value is False:
            continue
        parts.append(f" {esc(name)}" if value is True else f' {esc(name)}="{esc(_text(value))}"')
    parts.append(">")
    return "".join(parts)


def _text(value: Any) -> Any:
    """Return what ``|stringformat:'s'`` gives, a safe string kept safe."""
    return value if isinstance(value, str) else str(value)


class InputRenderer(DjangoTemplates):
    """DjangoTemplates, with the input widgets written by ``input_tag``."""

    def render(self, template_name: str, context: dict[str, Any], request: Any = None) -> str:
        if template_name in _INPUT_TEMPLATES:
            return input_tag(context["widget"])
        return super().render(template_name, context, request)


# One instance for every form: a renderer builds its template engine once (a cached property).
INPUT_RENDERER = InputRenderer()
