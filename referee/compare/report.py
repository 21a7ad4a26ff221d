"""The comparison's one-file HTML report: the verdict, the differences, and the running
mean difference over the deal pairs with its 95% band (inline SVG, no external assets)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.compare.sprt import Z95

if TYPE_CHECKING:
    from referee.compare.run import Pair

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 60em;
       color: #222; background: #fff; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: left; }
th { background: #f4f4f4; }
.verdict { font-size: 1.15em; font-weight: 600; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
svg .band { fill: #cfe0f1; } svg .mean { stroke: #2a6fb0; stroke-width: 2; fill: none; }
svg .zero { stroke: #888; } svg .bound { stroke: #c0392b; stroke-dasharray: 4 3; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _pm(x: dict[str, float | None], digits: int = 1) -> str:
    if x["mean"] is None:
        return "–"
    ci = "" if x["ci95"] is None else f" ± {x['ci95']:.{digits}f}"
    return f"{x['mean']:+.{digits}f}{ci}"


def running_mean_svg(
    pairs: Sequence[Pair], lower: float | None, upper: float | None, metric: str = "score"
) -> str:
    """The mean difference the test is on (``metric``) after each deal pair, with its 95%
    band and the bounds."""
    n = len(pairs)
    if n < 2:
        return "<p>Fewer than two deal pairs: nothing to draw.</p>"
    diffs = [p.sample(metric) for p in pairs]
    means, lows, highs = [], [], []
    total = squares = 0.0
    for k, d in enumerate(diffs, 1):
        total += d
        squares += d * d
        mean = total / k
        var = (squares - k * mean * mean) / (k - 1) if k > 1 else 0.0
        half = Z95 * math.sqrt(max(var, 0.0) / k) if k > 1 else 0.0
        means.append(mean)
        lows.append(mean - half)
        highs.append(mean + half)
    values = [*lows[1:], *highs[1:], 0.0] + [v for v in (lower, upper) if v is not None]
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        hi = lo + 1.0
    w, h, left, top = 640, 260, 50, 10
    plot_h = h - 40

    def x(k: int) -> float:
        return left + (k - 1) / max(1, n - 1) * (w - left - 10)

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    band = [f"{x(k):.1f},{y(highs[k - 1]):.1f}" for k in range(2, n + 1)]
    band += [f"{x(k):.1f},{y(lows[k - 1]):.1f}" for k in range(n, 1, -1)]
    line = " ".join(f"{x(k):.1f},{y(means[k - 1]):.1f}" for k in range(1, n + 1))
    parts = [
        f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        'aria-label="running mean score difference with 95% interval">',
        f'<polygon class="band" points="{" ".join(band)}"/>',
        f'<line class="zero" x1="{left}" x2="{w - 10}" y1="{y(0):.1f}" y2="{y(0):.1f}"/>',
    ]
    for label, v in (("H0", lower), ("H1", upper)):
        if v is not None:
            parts.append(
                f'<line class="bound" x1="{left}" x2="{w - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                f'<text x="{w - 12}" y="{y(v) - 3:.1f}" text-anchor="end">{label} {v:g}</text>'
            )
    parts += [
        f'<polyline class="mean" points="{line}"/>',
        f'<text x="{left - 4}" y="{y(hi) + 4:.1f}" text-anchor="end">{hi:.3g}</text>',
        f'<text x="{left - 4}" y="{y(lo) + 4:.1f}" text-anchor="end">{lo:.3g}</text>',
        f'<text x="{left}" y="{h - 12}">1</text>',
        f'<text x="{w - 10}" y="{h - 12}" text-anchor="end">{n} deal pairs</text>',
        "</svg>",
    ]
    return "".join(parts)


def write_compare_html(path: Path, s: dict[str, Any], pairs: Sequence[Pair]) -> None:
    """The report for the summary ``s`` (see :func:`referee.compare.run.summary`) and the
    counted deal pairs."""
    from referee.compare.run import report_text

    test = s["test"]
    verdict_line = report_text(s).splitlines()[1].removeprefix("verdict: ")
    rows = [
        ("Candidate", s["candidate"]),
        ("Baseline", s["baseline"]),
        ("Opponents", ", ".join(s["opponents"])),
        ("Seats per match", s["table_size"]),
        ("Rules", s["rules"]),
        ("Deal pairs counted", s["pairs"]),
        ("Matches played (matches/)", s["matches"]),
        ("Void matches, played again (void/)", s["matches_void"]),
        ("Played after the verdict, not counted", s["pairs_after_verdict"]),
        ("Score difference per match, 95% CI", _pm(s["score_diff"])),
        ("Place difference per match, 95% CI", _pm(s["place_diff"], 2)),
        ("Share of opponents beaten, difference, 95% CI", _pm(s["share_diff"], 3)),
        ("Candidate's mean score", _pm(s["candidate_score"])),
        ("Baseline's mean score", _pm(s["baseline_score"])),
        (
            "Deals won / drawn / lost",
            f"{s['deals_won']} / {s['deals_drawn']} / {s['deals_lost']}",
        ),
    ]
    if test:
        rows.append(
            (
                "Sequential test",
                (
                    f"H0 {test['elo0']:g} Elo ({test['lower']:+.4f}), H1 {test['elo1']:g} Elo "
                    f"({test['upper']:+.4f}) in share of opponents beaten, alpha "
                    if test["elo1"] is not None
                    else f"H0 {test['lower']:g}, H1 {test['upper']:g} points per match, alpha "
                )
                + f"{test['alpha']:g}, beta {test['beta']:g} ({test['statistic']}); evidence "
                f"{test['log_h1']:.2f} of {test['accept_h1_at']:.2f} for H1, "
                f"{test['log_h0']:.2f} of {test['accept_h0_at']:.2f} for H0",
            )
        )
    if s["variance_paired"]:
        rows.append(
            (
                "Variance of a pair: paired / unpaired",
                f"{s['variance_paired']:.4g} / {s['variance_unpaired']:.4g}",
            )
        )
    title = f"Comparison {s['comparison']}: {s['candidate']} vs {s['baseline']}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="verdict">{_e(verdict_line)}</p>',
        "<table><tbody>",
        *(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows),
        "</tbody></table>",
        "<h2>Mean difference over the deal pairs ("
        + ("points per match" if s["metric"] == "score" else "share of opponents beaten")
        + ")</h2>",
        running_mean_svg(
            pairs,
            test["lower"] if test else None,
            test["upper"] if test else None,
            s["metric"],
        ),
        "</body></html>",
    ]
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
