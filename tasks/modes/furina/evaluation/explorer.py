"""An item browser for the HTML report: every (item, model) with its scene, history, the reply under test
beside the base reply, and both judgments with their reasoning, filterable by model, dimension, language
and outcome. Plain HTML with a few lines of inline script: it works from a file, with no server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jinja2 import Environment, StrictUndefined

from rpbench.tasks.modes.furina.domain import Generation, Judgment
from rpbench.tasks.modes.furina.evaluation.run import BASE, Bench
from rpbench.tasks.modes.furina.evaluation.scoring import win_share
from rpbench.tasks.modes.furina.records import ItemScore

OUTCOMES = ("win", "tie", "loss", "unanswered", "unjudged")

_BROWSER = Environment(undefined=StrictUndefined, autoescape=True).from_string(
    """<h2 id="items">Items</h2>
<p>Open an item to see its scene, the conversation before the turn, both replies and both judgments.
Outcome: the reply under test against the base reply, both judgment orders averaged.</p>
<div class="filters">
{% for key, values in filters.items() %}<label>{{ key }} <select data-key="{{ key }}">
<option value="">all</option>{% for v in values %}<option>{{ v }}</option>{% endfor %}</select></label>
{% endfor %}<span id="shown"></span></div>
<style>.entry{border:1px solid #ddd;margin:4px 0;padding:2px 8px}.pair{display:flex;gap:12px}
.pair>div{flex:1;background:#f7f7f7;padding:6px}.filters label{margin-right:10px}.hist{font-size:13px}
.muted{color:#666;font-size:12px}</style>
{% for e in entries %}<details class="entry" data-model="{{ e.model }}" data-dimension="{{ e.dimension }}"
 data-language="{{ e.language }}" data-outcome="{{ e.outcome }}">
<summary>{{ e.item_id }} · {{ e.model }} · {{ e.dimension }} · {{ e.language }} · {{ e.character }}
 · <b>{{ e.outcome }}</b>{% if e.score is not none %} (score {{ '%.2f' % e.score }}){% endif %}</summary>
<p><b>World:</b> {{ e.background }}<br><b>Situation:</b> {{ e.situation }}</p>
<div class="hist">{% for line in e.history %}<div><b>{{ line.speaker }}:</b> {{ line.text }}</div>
{% else %}<div class="muted">(the reply opens the conversation)</div>{% endfor %}</div>
<div class="pair"><div><b>Reply under test ({{ e.model }})</b><p>{{ e.test }}</p></div>
<div><b>Base reply</b><p>{{ e.base }}</p></div></div>
{% for j in e.judgments %}<p><b>Judgment, order {{ j.order }}</b> ({{ j.slot }}): sigma {{ j.sigma }}<br>
{{ j.rationale }}</p>{% endfor %}
</details>
{% endfor %}
<script>
(function () {
  var selects = document.querySelectorAll('.filters select');
  function apply() {
    var shown = 0;
    document.querySelectorAll('details.entry').forEach(function (el) {
      var ok = true;
      selects.forEach(function (s) { if (s.value && el.dataset[s.dataset.key] !== s.value) { ok = false; } });
      el.style.display = ok ? '' : 'none';
      if (ok) { shown += 1; }
    });
    document.getElementById('shown').textContent = shown + ' shown';
  }
  selects.forEach(function (s) { s.addEventListener('change', apply); });
  apply();
})();
</script>
""")


def outcome(score: ItemScore | None) -> str:
    """win / tie / loss for the reply under test, by its share of the win over both orders."""
    if score is None:
        return "unjudged"
    if not score.answered or score.sigma1 is None or score.sigma2 is None:
        return "unanswered"
    share = win_share(score.sigma1, score.sigma2)
    return "win" if share > 0.5 else "loss" if share < 0.5 else "tie"


def item_browser(bench: Bench, scores: Sequence[ItemScore], generations: Sequence[Generation],
                 judgments: Sequence[Judgment]) -> str:
    """The browser as an HTML fragment, one entry per item and model under test."""
    text = {(g.item_id, g.model): g for g in generations}
    judged: dict[tuple[str, str], list[Judgment]] = {}
    for j in judgments:
        judged.setdefault((j.item_id, j.model), []).append(j)
    scored = {(s.item_id, s.model): s for s in scores}
    models = sorted({g.model for g in generations} - {BASE})
    entries: list[dict[str, Any]] = []
    for it in bench.items:
        scene = bench.scenes[it.scene_id]
        base = text.get((it.item_id, BASE))
        for model in models:
            mine = text.get((it.item_id, model))
            s = scored.get((it.item_id, model))
            entries.append({
                "item_id": it.item_id, "model": model, "dimension": it.dimension, "language": it.language,
                "character": it.character, "outcome": outcome(s), "score": s.score if s else None,
                "background": scene.background, "situation": scene.situation, "history": it.history,
                "test": _reply(mine), "base": _reply(base),
                "judgments": [{"order": j.order, "sigma": j.sigma if j.sigma is not None else "failed",
                               "slot": "reply under test shown first" if j.order == 1 else "base shown first",
                               "rationale": j.rationale or j.error or ""}
                              for j in sorted(judged.get((it.item_id, model), []), key=lambda j: j.order)],
            })
    filters = {"model": models, "dimension": sorted({e["dimension"] for e in entries}),
               "language": sorted({e["language"] for e in entries}),
               "outcome": [o for o in OUTCOMES if any(e["outcome"] == o for e in entries)]}
    return _BROWSER.render(entries=entries, filters=filters)


def _reply(g: Generation | None) -> str:
    if g is None:
        return "(no answer recorded)"
    return g.text if g.text is not None else f"(failed: {g.error or 'no reply'})"
