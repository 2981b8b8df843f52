"""PingPong's samples for the viewer: one per conversation (a player on a character card in a situation),
every turn with each judge's scores and reasons, and the conversation's pooled score."""

from __future__ import annotations

from collections.abc import Sequence

from rpbench.tasks.modes.pingpong.records import CRITERIA, Card, ConversationScore, Turn, TurnJudgment
from rpbench.tasks.reports.viewer import Part, Sample, failed_text


def _verdict(j: TurnJudgment) -> str:
    lines = [f"refusal: {'yes' if j.is_refusal else 'no'} ({j.is_refusal_explanation})"]
    lines += [f"{c}: {getattr(j, f'{c}_score')} ({getattr(j, f'{c}_explanation')})" for c in CRITERIA]
    return "\n".join(lines)


def _score_line(score: ConversationScore | None) -> tuple[str, str]:
    if score is None:
        return "not scored", "not scored"
    if score.refusal:
        return "refused", "refused"
    if score.final is None:
        return "not scored", "not scored"
    return f"final {score.final:.2f} (in character {score.in_character:.2f})", "scored"


def samples(turns: Sequence[Turn], cards: Sequence[Card], judgments: Sequence[TurnJudgment],
            scores: Sequence[ConversationScore]) -> list[Sample]:
    by_card = {(c.language, c.name): c for c in cards}
    by_conversation: dict[tuple[str, str], list[Turn]] = {}
    for t in turns:
        by_conversation.setdefault((t.model, t.conversation_id), []).append(t)
    verdicts: dict[tuple[str, str, int], list[TurnJudgment]] = {}
    for j in judgments:
        verdicts.setdefault((j.model, j.conversation_id, j.turn), []).append(j)
    scored = {(s.model, s.conversation_id): s for s in scores}
    out = []
    for (model, cid), mine in sorted(by_conversation.items()):
        mine.sort(key=lambda t: t.turn)
        first = mine[0]
        card = by_card.get((first.language, first.character))
        parts = [Part("Card", card.summary, "note")] if card else []
        for t in mine:
            parts.append(Part("user", failed_text(t.user, t.error if t.player is None else None), "turn"))
            parts.append(Part(first.character, failed_text(t.player, t.error), "turn"))
            parts += [Part(f"judge {j.judge}, turn {t.turn}", _verdict(j), "note")
                      for j in sorted(verdicts.get((model, cid, t.turn), []), key=lambda j: j.judge)]
        score, outcome = _score_line(scored.get((model, cid)))
        out.append(Sample(id=f"{model}/{cid}", item=cid, model=model, title=f"{first.character} - {first.situation_id}",
                          score=score, parts=parts,
                          facets={"language": first.language, "character": first.character,
                                  "situation": first.situation_id, "outcome": outcome}))
    return out
