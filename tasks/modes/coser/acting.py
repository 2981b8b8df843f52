"""Given-circumstance acting, as CoSER's ``gca_simulation`` runs it: an actor agent per speaking character (the
model under test), an Environment agent and a next-speaker predictor, up to 20 rounds.

Each round the current speaker acts, then the predictor names who acts next. Every agent keeps its own
conversation: its own turns as the assistant's, everyone else's as the user's, prefixed with the speaker's name
and with their [thoughts] removed (nobody sees another's thoughts). A turn is stored under its speaker's name
("Name: ...", thoughts kept), as CoSER's paper-era script stored it and its released simulations hold it, so the
critic reads a live scene and a replayed one in the same layout. The scene ends when the predictor says
<END CHAT> from round 6 on, or after round 20. Where the predictor's answer cannot be followed ("random", a name
off the list, the speaker who just spoke, an end before round 6, or no reply), the next speaker is drawn among
the main characters and the Environment, as CoSER's protocol does, but with a generator seeded by the run's seed,
the circumstance and the model (CoSER's own draw is unseeded), and each such draw is counted.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rpbench import prompts
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.requests import CallResult
from rpbench.tasks.modes.coser.records import END_CHAT, ENVIRONMENT, NEXT_SPEAKER, Circumstance, Message, SceneEnd
from rpbench.tasks.modes.coser.scoring import without_thoughts

MAX_ROUNDS = 20
FIRST_ROUND_THAT_MAY_END = 5  # rounds count from 0: the scene may end from its sixth round on
SCENE_STARTS = {"en": "(The scene begins.)", "zh": "（场景开始。）"}
# CoSER's reading of a "Next Speaker: <name>" line, also taking bold markers after the colon ("**Next Speaker:**
# Ann"), which CoSER's own pattern reads as ":" and so sends to a random draw.
_NEXT = re.compile(r"(?:\*\*|#)?\s*next\s+speaker\s*(?:\*\*|#)?\s*(?:[:\-]|\bis\b)?\s*(?:\*\*)?\s*\*?([^\n*]+)",
                   re.IGNORECASE)


def named_next(reply: str) -> str:
    """The name a predictor's reply gives: its last "Next Speaker: ..." line, else what comes before a colon,
    else the whole reply (as CoSER reads it, bold markers after the colon aside)."""
    found = _NEXT.findall(reply)
    if found:
        name = found[-1].strip().rstrip(".,!\"'").replace("*", "")
        if name:
            return name
    return reply.split(":")[0].strip() if ":" in reply else reply


def with_speaker(text: str, speaker: str) -> str:
    """A turn as the others receive it: prefixed with its speaker's name unless a line already starts so."""
    if any(line.strip().startswith((f"{speaker}:", f"{speaker}：")) for line in text.split("\n")):
        return text
    return f"{speaker}: {text}"


@dataclass
class Agent:
    system: str
    history: list[dict[str, str]] = field(default_factory=list)

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, *self.history]

    def add(self, role: str, content: str) -> None:
        self.history.append({"role": role, "content": content})


def agents(c: Circumstance, thinks: bool = True) -> dict[str, Agent]:
    """Every agent of the scene, each with its instructions and the scene's opening line. ``thinks``: actors
    write [thoughts] as well as actions and speech (CoSER's default; its ``wo_thought`` is False here)."""
    profiles = {p.speaker: p.text for p in c.profiles}
    motivations = {m.name: m.text for m in c.motivations}
    out = {}
    for name in c.speaking:
        if name == ENVIRONMENT:
            system = prompts.render("coser/environment", c.language, major=[m for m in c.major if m != ENVIRONMENT],
                                    scenario=c.scenario).text
        else:
            system = prompts.render("coser/actor", c.language, name=name, book=c.book, profile=profiles.get(name, ""),
                                    scenario=c.scenario, others=[p for p in c.profiles if p.speaker != name],
                                    motivation=motivations.get(name, ""), thinks=thinks).text
        out[name] = Agent(system)
    out[NEXT_SPEAKER] = Agent(prompts.render("coser/next_speaker", c.language, speakers=c.speaking,
                                             environment=ENVIRONMENT,
                                             scenario=c.scenario, end=END_CHAT).text)
    for agent in out.values():
        agent.add("user", SCENE_STARTS[c.language])
    return out


def _draw(c: Circumstance, current: str, rng: random.Random) -> str:
    pool = sorted(set([*c.major, ENVIRONMENT]) - {current}) or sorted(set(c.speaking) - {current})
    return rng.choice(pool)


def decide(c: Circumstance, name: str, current: str, round_: int, rng: random.Random,
           ) -> tuple[str | None, str]:
    """Who acts after ``current`` when the predictor named ``name`` (None: the scene ends), and how."""
    if name == END_CHAT and round_ >= FIRST_ROUND_THAT_MAY_END:
        return None, "model"
    if name in c.speaking and name != current:
        return name, "model"
    kind = ("random" if name.strip().lower() == "random" else "early-end" if name == END_CHAT
            else "same-speaker" if name == current else "off-list")
    return _draw(c, current, rng), kind


async def act(gateway: Model, c: Circumstance, model: str, actor_role: str, environment_role: str,
              next_role: str, continue_from: int, seed: int, max_rounds: int = MAX_ROUNDS, thinks: bool = True,
              ) -> tuple[list[Message], SceneEnd]:
    """One model's scene for ``c``: its messages (next-speaker choices included) and how it ended."""
    rng = random.Random(f"{seed}:{c.circumstance_id}:{model}")
    cast = agents(c, thinks)
    made: list[Message] = []
    current: str | None = c.speaking[0]
    rounds = 0

    def note(role: str, content: str, decided_by: str = "model", chosen: str | None = None) -> None:
        made.append(Message(circumstance_id=c.circumstance_id, model=model, index=len(made), role=role,
                            content=content, decided_by=decided_by, chosen=chosen))  # type: ignore[arg-type]

    for r in range(max_rounds):
        if current is None:
            break
        rounds = r + 1
        tag = f"coser:{c.circumstance_id}:{model}:{r}"
        if r < continue_from:
            text, told = c.original[r].text if r < len(c.original) else "", "original"
        else:
            role = environment_role if current == ENVIRONMENT else actor_role
            reply: CallResult[None] = await gateway.run(Request(role, cast[current].messages(),
                                                                tag=f"{tag}:{current}"))
            if not reply.ok:
                return made, SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=rounds,
                                      status="failed", error=f"{current}'s turn in round {r + 1}: {reply.error}")
            text, told = reply.text, "model"
        note(current, with_speaker(text, current), told)
        heard = with_speaker(without_thoughts(text), current)
        for name, agent in cast.items():
            if name == current:
                agent.add("assistant", text)
            else:
                agent.add("user", heard)
        predictor = cast[NEXT_SPEAKER]
        if r < continue_from:
            name = c.original[r + 1].speaker if r + 1 < len(c.original) else END_CHAT
            said: str | None = name
        else:
            guess: CallResult[None] = await gateway.run(Request(next_role, predictor.messages(), tag=f"{tag}:next",
                                                                ends=f"Next Speaker: {END_CHAT}"))
            said = guess.text if guess.ok else None
            name = named_next(said) if said is not None else ""
        following, how = decide(c, name, current, r, rng)
        if said is None:
            how = "failed"
        elif r < continue_from and how == "model":
            how = "original"
        note(NEXT_SPEAKER, name, how, following)
        if how in ("model", "original"):
            predictor.add("assistant", said or name)
        else:  # as CoSER does after an unusable choice: the name it gave, then its instructions again
            predictor.add("assistant", name)
            predictor.add("user", predictor.system)
        current = following
    return made, SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=rounds, status="ok")


def given_scene(c: Circumstance, messages: Sequence[Message] | None, model: str,
                source: str) -> tuple[list[Message], SceneEnd]:
    """A released simulation read as ``model``'s scene; a circumstance the file lacks is a failed scene."""
    if messages is None:
        return [], SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=0, status="failed",
                            error=f"{source} has no simulation of this circumstance")
    made = [m.model_copy(update={"model": model}) for m in messages]
    rounds = sum(m.role != NEXT_SPEAKER for m in made)
    return made, SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=rounds, status="ok")
