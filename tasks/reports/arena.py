"""The arena: pairwise battles any benchmark writes, and what they give, for one run or a leaderboard of many.

A benchmark that judges two replies side by side (RPBench-Auto's judge picking model_a or model_b each round,
FURINA's both-order judgments against its base model) writes one ``ArenaBattle`` per judgment into
``battles.parquet``. From those rows, for each model against the run's baseline:

- the **win rate**: wins over decisive battles (a tie or a round whose judge named no winner is not one; both
  are counted beside), as RPBench-Auto's ``calculate_metrics`` computes it over the battles it keeps;
- the **Elo rating**: Bradley-Terry maximum likelihood over every decisive battle and tie, on the scale of
  Chatbot Arena and RPBench-Auto (400, base 10, centred on 1000; ``tasks.stats.bradley_terry``);
- 95% intervals for both from a bootstrap that resamples whole dialogues (rounds of one dialogue share a
  history), seeded;
- the share of decisive battles won from slot A (position bias: 50% is none), and where the battles carry the
  replies' length and markup, the style-controlled win rate (``tasks.stats.style``).

``rpbench leaderboard`` fits the same table over the battles of several runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from rpbench.storage.schemas import TableSpec
from rpbench.tasks.core.records import Record
from rpbench.tasks.stats import cluster_bootstrap_ci
from rpbench.tasks.stats.bradley_terry import Battle, elo_intervals, fit_elo

ALL = "all"
Outcome = Literal["model_a", "model_b", "tie", "none"]


class ArenaBattle(Record):
    """One judgment of two replies to the same turn: which model sat in which slot, and who won."""

    benchmark: str
    version: str  # what makes two runs' battles comparable (the release's commit, the rounds a dialogue runs)
    run: str  # the run that made it (its folder)
    subset: str  # the benchmark's part (RPBench-Auto's character or scene; FURINA's dimension)
    language: str
    dialogue: str  # battles of one dialogue share its history: the bootstrap resamples dialogues whole
    item_id: str
    round: int
    model_a: str  # in slot A (shown to the judge first)
    model_b: str
    candidate: str  # the model under test in this battle
    baseline: str
    position: Literal["a", "b"]  # the candidate's slot
    outcome: Outcome  # "none": the judge named no winner (not a battle the figures count)
    judge: str
    reason: str | None = None
    # The replies' length in characters and pieces of markup, for the style-controlled figure (None: not known).
    a_chars: int | None = None
    b_chars: int | None = None
    a_markup: int | None = None
    b_markup: int | None = None

    @property
    def winner(self) -> str | None:
        """The model that won, "tie", or None (no winner named)."""
        return {"model_a": self.model_a, "model_b": self.model_b, "tie": "tie"}.get(self.outcome)


BATTLES = TableSpec("battles", 1, ArenaBattle)


class ArenaRow(Record):
    """One model's figures against the baseline, over one subset and language (or all of them)."""

    benchmark: str
    subset: str
    language: str
    model: str
    baseline: str
    judge: str
    released: bool = False  # a row of the benchmark's released leaderboard, shown beside
    battles: int = 0  # decisive battles with the baseline
    wins: int = 0
    ties: int = 0
    no_winner: int = 0
    win_rate: float | None = None  # 0-1
    win_low: float | None = None
    win_high: float | None = None
    elo: float | None = None
    elo_low: float | None = None
    elo_high: float | None = None
    slot_a_share: float | None = None  # of its decisive battles, the share the slot-A reply won
    style_win_rate: float | None = None  # 0-1, at equal length and markup
    runs: int = 0


ARENA = TableSpec("arena", 1, ArenaRow)


def fit_battles(battles: Iterable[ArenaBattle]) -> list[Battle]:
    """The battles the Elo fit takes: decisive ones and ties, each clustered by its dialogue."""
    share = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}
    return [Battle(b.model_a, b.model_b, share[b.outcome], (b.run, b.dialogue)) for b in battles
            if b.outcome in share]


def win_rate(battles: Sequence[ArenaBattle], model: str, baseline: str) -> tuple[int, int, float | None]:
    """(decisive battles, wins, wins / decisive) of ``model`` against ``baseline``."""
    decisive = [b for b in battles if {b.model_a, b.model_b} == {model, baseline}
                and b.outcome in ("model_a", "model_b")]
    wins = sum(b.winner == model for b in decisive)
    return len(decisive), wins, (wins / len(decisive) if decisive else None)


def _style(battles: Sequence[ArenaBattle], model: str, baseline: str, resamples: int, seed: int) -> float | None:
    from rpbench.tasks.stats.style import Comparison, style_controlled

    pairs = [b for b in battles if {b.model_a, b.model_b} == {model, baseline} and b.outcome != "none"]
    if not pairs or any(v is None for b in pairs for v in (b.a_chars, b.b_chars, b.a_markup, b.b_markup)):
        return None
    comparisons = []
    for b in pairs:
        mine_a = b.model_a == model
        share = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[b.outcome]
        mine, theirs = ((b.a_chars, b.a_markup), (b.b_chars, b.b_markup)) if mine_a else \
            ((b.b_chars, b.b_markup), (b.a_chars, b.a_markup))
        comparisons.append(Comparison(model, share if mine_a else 1 - share, f"{b.run}/{b.dialogue}",
                                      {"chars": (float(mine[0] or 0), float(theirs[0] or 0)),
                                       "markup": (float(mine[1] or 0), float(theirs[1] or 0))}))
    found = style_controlled(comparisons, resamples, seed)
    return found[0].controlled_win_rate / 100 if found else None


def _slices(battles: Sequence[ArenaBattle]) -> list[tuple[str, str]]:
    subsets = sorted({b.subset for b in battles})
    languages = sorted({b.language for b in battles})
    out = [(ALL, ALL)]
    out += [(s, ALL) for s in subsets if len(subsets) > 1]
    out += [(ALL, lang) for lang in languages if len(languages) > 1]
    return out


def arena_rows(battles: Sequence[ArenaBattle], resamples: int = 1000, seed: int = 0,
               style_resamples: int = 200) -> list[ArenaRow]:
    """Every model's row against the baseline, over all battles and per subset and per language where there are
    several. The battles must share one benchmark, baseline and judge (``same_field`` says which differ)."""
    if not battles:
        return []
    benchmark, baseline, judge = battles[0].benchmark, battles[0].baseline, battles[0].judge
    out: list[ArenaRow] = []
    for subset, language in _slices(battles):
        picked = [b for b in battles if subset in (ALL, b.subset) and language in (ALL, b.language)]
        fitted = fit_battles(picked)
        elo = fit_elo(fitted)
        bands = elo_intervals(fitted, resamples, seed) if fitted else {}
        models = sorted({b.candidate for b in picked} | {baseline})
        for model in models:
            mine = [b for b in picked if model in (b.model_a, b.model_b)]
            n, wins, rate = win_rate(picked, model, baseline)
            decisive = [b for b in mine if b.outcome in ("model_a", "model_b")]
            low = high = None
            if model != baseline and n:
                against = [b for b in decisive if {b.model_a, b.model_b} == {model, baseline}]
                values = [float(b.winner == model) for b in against]
                low, high = cluster_bootstrap_ci(values, [(b.run, b.dialogue) for b in against], rate or 0.0,
                                                 resamples=resamples, seed=seed)
            band = bands.get(model, (math.nan, math.nan))
            out.append(ArenaRow(
                benchmark=benchmark, subset=subset, language=language, model=model, baseline=baseline, judge=judge,
                battles=n, wins=wins, win_rate=rate if model != baseline else 0.5 if n == 0 else rate,
                win_low=_finite(low), win_high=_finite(high),
                ties=sum(b.outcome == "tie" and {b.model_a, b.model_b} == {model, baseline} for b in mine),
                no_winner=sum(b.outcome == "none" and {b.model_a, b.model_b} == {model, baseline} for b in mine),
                elo=elo.get(model), elo_low=_finite(band[0]), elo_high=_finite(band[1]),
                slot_a_share=(sum(b.outcome == "model_a" for b in decisive) / len(decisive)) if decisive else None,
                style_win_rate=_style(picked, model, baseline, style_resamples, seed) if model != baseline else None,
                runs=len({b.run for b in mine})))
    return out


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def same_field(battles: Sequence[ArenaBattle], fields: Sequence[str] = ("benchmark", "version", "baseline", "judge")
               ) -> tuple[str, list[str]] | None:
    """The first of ``fields`` whose value differs between battles, with the values found; None if all agree."""
    for name in fields:
        values = sorted({str(getattr(b, name)) for b in battles})
        if len(values) > 1:
            return name, values
    return None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _band(low: float | None, high: float | None, scale: float = 100.0, digits: int = 1) -> str:
    if low is None or high is None:
        return "-"
    return f"{scale * low:.{digits}f}-{scale * high:.{digits}f}"


def arena_markdown(rows: Sequence[ArenaRow], subset: str = ALL, language: str = ALL) -> str:
    """The arena's table for one slice, ranked by Elo (released rows after, marked)."""
    picked = [r for r in rows if r.subset == subset and r.language == language]
    ours = sorted((r for r in picked if not r.released), key=lambda r: -(r.elo if r.elo is not None else -math.inf))
    released = sorted((r for r in picked if r.released), key=lambda r: -(r.win_rate or 0))
    lines = ["| model | win rate vs baseline (%) | 95% CI | decisive | ties | no winner | Elo | 95% CI | "
             "slot-A wins (%) | style-ctrl win (%) |", "|" + "---|" * 10]
    for r in ours:
        lines.append(f"| {r.model}{' (baseline)' if r.model == r.baseline else ''} | {_pct(r.win_rate)} | "
                     f"{_band(r.win_low, r.win_high)} | {r.battles} | {r.ties} | {r.no_winner} | "
                     f"{'-' if r.elo is None else f'{r.elo:.1f}'} | {_band(r.elo_low, r.elo_high, 1.0)} | "
                     f"{_pct(r.slot_a_share)} | {_pct(r.style_win_rate)} |")
    for r in released:
        lines.append(f"| {r.model} (released) | {_pct(r.win_rate)} | - | - | - | - | - | - | - | - |")
    return "\n".join(lines)


def arena_chart(rows: Sequence[ArenaRow], title: str) -> str | None:
    """Elo with its interval per model (a base64 PNG), None when no model has a rating."""
    rated = sorted((r for r in rows if r.elo is not None and not r.released), key=lambda r: r.elo or 0)
    if not rated:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rpbench.tasks.reports.render import chart_fonts, png

    plt.rcParams["font.family"] = chart_fonts()
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.4 * len(rated)))
    ys = list(range(len(rated)))
    elos = [float(r.elo or 0) for r in rated]
    # A percentile interval of a refitted rating need not hold the rating itself (the fit is centred anew each
    # resample): a bar is drawn from the point to each end the interval has beyond it.
    lows = [max(0.0, e - (r.elo_low if r.elo_low is not None else e)) for e, r in zip(elos, rated, strict=True)]
    highs = [max(0.0, (r.elo_high if r.elo_high is not None else e) - e) for e, r in zip(elos, rated, strict=True)]
    ax.errorbar(elos, ys, xerr=[lows, highs], fmt="o", capsize=3)
    ax.set_yticks(ys, [r.model for r in rated])
    ax.set_xlabel("Elo (Bradley-Terry, 95% interval)")
    ax.set_title(title)
    return png(fig)


def rows_as_dicts(rows: Sequence[ArenaRow]) -> list[dict[str, Any]]:
    return [r.model_dump() for r in rows]
