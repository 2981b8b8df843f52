"""A candidate against the baseline on one character or scene, as RPBench-Auto's ``eval_models_pairwise`` runs
it (run_character_eval.py, run_scene_eval.py at 01a2579), in its own words (``release.py``).

The judge plays the user and picks the better NPC each round. It opens with both slots holding the greeting;
each round the candidate and the baseline answer the same history, a draw puts each in slot A or B, the judge
sees ``{"model_a": ..., "model_b": ...}`` (``json.dumps`` as the release writes it), names a winner and writes
the user's next turn, and the reply of slot A if it won, else of slot B (a round with no winner included, as
the release does), joins the history. A character dialogue runs ``MAX_MESSAGES_PER_CHAR`` rounds (5); a scene's
up to 10, ending once a round's winner says ``is_chat_finished``.

Where the release leaves things unseeded or unbounded, rpbench does what it describes, and counts it:
- the A/B draw is ``random.getrandbits(1)`` per round, from a generator seeded by the run's seed, the subset and
  the item (the release draws from Python's unseeded global generator), so a rerun is the same run;
- a judge reply that cannot be read is asked again, the same request as a new sample (the release loops until
  one can be read), at most ``judge_asks`` times; then the round is a failure and the dialogue ends there, never
  a default winner;
- a candidate's call that gets no reply ends the dialogue as a failure (the release sends "$ERROR$" on);
- a judge that names no winner (null, or anything but model_a/model_b) gives a round with no winner, which the
  win rates and the Elo fit leave out, as the release's ``calculate_metrics`` leaves it out, and which is counted.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rpbench.storage.user_files import jsonl_objects
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.requests import CallResult
from rpbench.tasks.modes.rpbench_auto import release
from rpbench.tasks.modes.rpbench_auto.records import DialogueEnd, Item, JudgeTurn, Round
from rpbench.tasks.modes.rpbench_auto.release import Subset
from rpbench.tasks.reports.arena import Outcome

# A judge reply that cannot be read is asked again up to this many times in all (the release: forever).
JUDGE_ASKS = 5
# The baseline's replies are samples of their own: a candidate that is the baseline's own model still gets
# two replies, as the release's two calls would.
BASELINE_SAMPLE = 1


# -- the data -------------------------------------------------------------------------------------
def _filled(template: Any, values: dict[str, Any], where: str, prefix: str) -> str:
    try:
        return str(template.substitute(values))
    except KeyError as exc:
        raise InputError(f"{where}: field '{prefix}{exc.args[0]}': missing (the release's prompt asks for it)"
                         ) from None


def _greeting(record: dict[str, Any], where: str) -> str:
    conversation = record.get("conversation")
    if not isinstance(conversation, list) or not conversation or not isinstance(conversation[0], dict):
        problem = "missing" if "conversation" not in record else "not a list of messages"
        raise InputError(f"{where}: field 'conversation': {problem}")
    sentences = conversation[0].get("sentences")
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise InputError(f"{where}: field 'conversation.0.sentences': not a list of text")
    return "\n".join(sentences)


def item_of(subset: Subset, record: dict[str, Any], where: str, n: int) -> Item:
    """One line of a subset's data as the release uses it; a field its prompts need and the line lacks is an
    InputError naming it."""
    greeting = _greeting(record, where)
    profile = record.get("npc_profile")
    if not isinstance(profile, dict):
        problem = "missing" if "npc_profile" not in record else "not an object"
        raise InputError(f"{where}: field 'npc_profile': {problem}")
    if subset == "character":
        if "background" in profile:  # the release's substitute(background=..., **npc_profile) would refuse it
            raise InputError(f"{where}: field 'npc_profile.background': the profile may not hold one")
        if "background" not in record:
            raise InputError(f"{where}: field 'background': missing (the release's prompt asks for it)")
        system = _filled(release.candidate_template(subset), {"background": record["background"], **profile},
                         where, "npc_profile.")
        judge = _filled(release.judge_template(subset), profile, where, "npc_profile.")
        name = str(profile.get("name_text", ""))
    else:
        system = _filled(release.candidate_template(subset), record, where, "")
        judge = _filled(release.judge_template(subset), record, where, "")
        name = str(profile.get("name", ""))
    return Item(subset=subset, item_id=str(record.get("id", n)), name=name, candidate_system=system,
                judge_system=judge, greeting=greeting)


def load_items(subset: Subset, path: str | None = None) -> list[Item]:
    """A subset's items: the release's data file, or ``path`` in its layout (one JSON object a line)."""
    if path is None:
        where = f"{release.RELEASE.key(release.data_path(subset))}"
        lines = [(f"{where}: line {n}", json.loads(line)) for n, line in
                 enumerate(release.data_text(subset).splitlines(), 1) if line.strip()]
    else:
        lines = jsonl_objects(Path(path), f"RPBench-Auto {subset} data", "npc_profile, conversation and more")
    items: list[Item] = []
    seen: set[str] = set()
    for n, (where, record) in enumerate(lines):
        item = item_of(subset, record, where, n)
        if item.item_id in seen:
            raise InputError(f"{where}: field 'id': {item.item_id} appears more than once")
        seen.add(item.item_id)
        items.append(item)
    return items


# -- reading replies ------------------------------------------------------------------------------
def read_judge(text: str) -> JudgeTurn:
    """A judge's reply as the release reads it (``JudgeTurn.from_reply``)."""
    return JudgeTurn.from_reply(text)


def chat_finished(reply: str) -> bool | None:
    """A scene reply's ``is_chat_finished`` as the release reads it (json_repair over the whole reply, the value's
    truth); None where it cannot be read, which the release takes as not finished."""
    import json_repair

    try:
        return bool(json_repair.loads(reply)["is_chat_finished"])
    except Exception:
        return None


def said(winner: Any) -> str | None:
    """The judge's winner as the round records it."""
    return None if winner is None else winner if isinstance(winner, str) else json.dumps(winner)


# -- the dialogue ---------------------------------------------------------------------------------
def draws(seed: int, subset: str, item_id: str) -> random.Random:
    """The generator a dialogue's A/B draws come from: the same seed, subset and item always draw alike."""
    return random.Random(f"{seed}:{subset}:{item_id}")


async def judged(gateway: Model, role: str, messages: list[dict[str, Any]], tag: str, asks: int,
                 heal: bool = True) -> tuple[Any, int, str | None]:
    """(the reply, how many asks it took, None) or (None, asks, the error) when none of ``asks`` could be read.

    Each ask is a sample of its own (its index in the call cache), so a rerun replays the asks that were made and
    takes the same reply; where every ask came from the cache unreadable (an earlier run's failure) and ``heal``
    (no --keep-failures), ``asks`` more are made, once. The stage's gateway does not heal single asks: an
    unreadable first ask that a later one answered is part of the dialogue, not a failure to retry."""
    last, limit, fresh, k = "no ask was made", asks, False, 0
    while k < limit:
        ask: Request[Any] = Request(role, list(messages), schema=JudgeTurn, attempts=1, sample_index=k,
                                    tag=f"{tag}:judge{k}" if k else f"{tag}:judge")
        result: CallResult[Any] = await gateway.run(ask)
        if result.ok:
            return result, k + 1, None
        last, fresh, k = result.error, fresh or not result.cached, k + 1
        if not result.raw_replies:  # no reply at all (after the gateway's retries): asking again is no help
            break
        if k == limit == asks and heal and not fresh:
            limit += asks
    return None, k, last


async def converse(gateway: Model, item: Item, candidate: str, candidate_role: str, baseline: str,
                   baseline_role: str, judge_role: str, seed: int, rounds: int, asks: int = JUDGE_ASKS,
                   heal: bool = True) -> tuple[list[Round], DialogueEnd]:
    """``candidate`` against ``baseline`` on ``item``: the judged rounds, and how the dialogue ended."""
    tag = f"rpbench-auto:{item.subset}:{item.item_id}:{candidate}"
    made: list[Round] = []
    asked_again = unreadable = 0

    def end(status: str = "ok", error: str | None = None, by_scene: bool = False) -> DialogueEnd:
        return DialogueEnd(model=candidate, subset=item.subset, item_id=item.item_id, rounds=len(made),
                           status=status, error=error, ended_by_scene=by_scene,  # type: ignore[arg-type]
                           judge_asks=asked_again, unreadable_candidates=unreadable)

    history: list[dict[str, Any]] = [{"role": "system", "content": item.candidate_system},
                                     {"role": "assistant", "content": item.greeting}]
    judging: list[dict[str, Any]] = [{"role": "system", "content": item.judge_system},
                                     {"role": "user", "content": json.dumps({"model_a": item.greeting,
                                                                             "model_b": item.greeting})}]
    verdict, took, error = await judged(gateway, judge_role, judging, f"{tag}:r0", asks, heal)
    asked_again += took - 1
    if verdict is None:
        return made, end("failed", f"judge, opening: {error}")
    judging.append({"role": "assistant", "content": verdict.text})
    rng = draws(seed, item.subset, item.item_id)
    for r in range(1, rounds + 1):
        candidate_first = bool(rng.getrandbits(1))
        user = verdict.parsed.next_round_user_speaks
        history.append({"role": "user", "content": user})
        slots = [(candidate, candidate_role, 0), (baseline, baseline_role, BASELINE_SAMPLE)]
        if not candidate_first:
            slots.reverse()
        sent: list[Request[Any]] = [Request(role, list(history), sample_index=sample, tag=f"{tag}:r{r}:{'ab'[k]}")
                for k, (_, role, sample) in enumerate(slots)]
        replies: list[CallResult[Any]] = list(await asyncio.gather(*(gateway.run(a) for a in sent)))
        for (name, _, _), reply in zip(slots, replies, strict=True):
            if not reply.ok:
                return made, end("failed", f"{name}, round {r}: {reply.error}")
        text_a, text_b = str(replies[0].text), str(replies[1].text)
        finished: list[bool | None] = [None, None]
        if item.subset == "scene":
            finished = [chat_finished(text_a), chat_finished(text_b)]
            unreadable += sum(f is None for f in finished)
        judging.append({"role": "user", "content": json.dumps({"model_a": text_a, "model_b": text_b})})
        verdict, took, error = await judged(gateway, judge_role, judging, f"{tag}:r{r}", asks, heal)
        asked_again += took - 1
        if verdict is None:
            return made, end("failed", f"judge, round {r}: {error}")
        winner = verdict.parsed.winner
        outcome: Outcome = "model_a" if winner == "model_a" else "model_b" if winner == "model_b" else "none"
        won_slot = {"model_a": 0, "model_b": 1}.get(outcome)
        made.append(Round(
            model=candidate, baseline=baseline, subset=item.subset, item_id=f"{item.subset}:{item.item_id}",
            dialogue_id=f"{item.subset}:{item.item_id}", name=item.name, round=r, model_a=slots[0][0],
            model_b=slots[1][0], user=user, reply_a=text_a, reply_b=text_b, judge_reply=verdict.text,
            said_winner=said(winner), outcome=outcome, reason=verdict.parsed.decision_reason or None,
            win=None if won_slot is None else float(slots[won_slot][0] == candidate),
            finished_a=finished[0], finished_b=finished[1]))
        if won_slot is not None and item.subset == "scene" and finished[won_slot]:
            return made, end(by_scene=True)
        judging.append({"role": "assistant", "content": verdict.text})
        history.append({"role": "assistant", "content": text_a if winner == "model_a" else text_b})
    return made, end()


def rounds_of(subset: Subset, most: int | None) -> int:
    """The rounds a dialogue of ``subset`` runs: the release's, or fewer when the run asks for fewer."""
    full = release.max_rounds(subset)
    return min(full, most) if most else full


def failure_rows(stage: str, ends: Sequence[DialogueEnd]) -> list[Any]:
    from rpbench.tasks.core.records import Failure

    return [Failure(stage=stage, model=e.model, item_id=f"{e.subset}:{e.item_id}", kind="dialogue", error=e.error)
            for e in ends if e.status == "failed"]
