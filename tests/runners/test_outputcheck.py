"""The output check: an HTML game passes, empty / prose / looping output does not."""

from __future__ import annotations

from runners.harness.outputcheck import check_output

GAME = """<!DOCTYPE html>
<html><head><style>body { background: #000; }</style></head>
<body><canvas id="game" width="800" height="600"></canvas>
<script>
const ctx = document.getElementById('game').getContext('2d');
let score = 0, lives = 3;
function loop(t) { ctx.clearRect(0, 0, 800, 600); requestAnimationFrame(loop); }
requestAnimationFrame(loop);
</script></body></html>"""


def test_it_passes_an_html_game() -> None:
    verdict = check_output(GAME)
    assert verdict.ok
    assert verdict.flags == []


def test_it_flags_empty_output() -> None:
    assert check_output("  \n").flags == ["empty_output"]


def test_it_flags_prose_without_markup_or_script() -> None:
    verdict = check_output("Sure! Here is how you could write a Space Invaders game in JavaScript.")
    assert not verdict.ok
    assert verdict.flags == ["no_html_markup", "no_script"]


def test_it_flags_a_repetition_loop() -> None:
    looping = GAME + " the invaders move left and the invaders move right again and again" * 40
    verdict = check_output(looping)
    assert not verdict.ok
    assert "repeated_ngram" in verdict.flags


def test_it_flags_a_loop_without_spaces() -> None:
    verdict = check_output(GAME + "=;" * 200)
    assert verdict.flags == ["repeated_chars"]


def test_it_does_not_flag_ordinary_repetitive_code() -> None:
    rows = "\n".join(f"invaders.push({{x: {i * 40}, y: {i // 11 * 30}, alive: true}});" for i in range(55))
    assert check_output(GAME.replace("let score", rows + "\nlet score")).ok
