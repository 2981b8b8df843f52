"""Given-circumstance acting, as CoSER's ``gca_simulation`` (main.py at 624efc5) runs it, in CoSER's own words
(``release.py``): an actor agent per speaking character (the model under test), an Environment agent and a
next-speaker predictor, up to 20 rounds.

Each agent keeps its own conversation, opened by the release's opening line: its own turns as the assistant's,
everyone else's as the user's, prefixed with the speaker's name and with their [thoughts] removed (nobody sees
another's thoughts); two messages of one side in a row are one message, as its ``Agent.update`` joins them. A
scene's turns are stored as the model wrote them (main.py stores a reply without its speaker's name). Each round
the current speaker acts, then the predictor names who acts next; the scene ends when it says <END CHAT> from
round 6 on, or after round 20.

What the release's agents do around a reply, rpbench does too: a reply that comes back empty is asked again, the
same messages at temperature 1, up to five times more, and then kept empty (``resampled``); a reply of a model
that is not a GPT or a Claude is cut at its first repetition (``repetition.py``); a llama or step model is told to
start with its name, and only its own part of the reply is kept; a Claude or o1 model gets its system prompt as
the user's.

Draws: the release seeds Python's generator with 42 and draws, agent by agent and circumstance by circumstance in
file order, what each environment agent is called and how each actor's prompt sets the other characters'
profiles apart; rpbench makes the same draws in the same order (``prompt_draws``), so its prompts are the
release's. Where the predictor's answer cannot be followed ("random", a name off the list, the speaker who just
spoke, an end before round 6, or no usable reply), the next speaker is drawn among the main characters and the
Environment, as CoSER's protocol does, with a generator seeded by the run's seed, the circumstance and the model
(the release draws from its one generator, from a set whose order depends on Python's hash seed), and each such
draw is counted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.requests import CallResult
from rpbench.tasks.modes.coser import release
from rpbench.tasks.modes.coser.records import END_CHAT, ENVIRONMENT, NEXT_SPEAKER, Circumstance, Message, SceneEnd
from rpbench.tasks.modes.coser.repetition import cut_repetition
from rpbench.tasks.modes.coser.scoring import without_thoughts

MAX_ROUNDS = 20
FIRST_ROUND_THAT_MAY_END = 5  # rounds count from 0: the scene may end from its sixth round on
# get_response_json: the first ask at the role's temperature, then up to five more at temperature 1.
RESAMPLES = 6
HOT = {"temperature": 1.0}
SPECIAL = (ENVIRONMENT, NEXT_SPEAKER)


def named_next(reply: str) -> str:
    """The name a predictor's reply gives, read as ``extract_nsp`` reads it: its last "Next Speaker: ..." line
    (trimmed of trailing punctuation and asterisks), else what comes before a colon, else the whole reply."""
    found = release.next_speaker_pattern().findall(reply)
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


def model_name(model: str) -> str:
    """A litellm model string as CoSER's code would name the model (``openai/gpt-4o`` is ``gpt-4o``): its rules
    go by that name (a GPT or a Claude keeps its repetitions, a Claude gets no system role, ...)."""
    return model.rsplit("/", 1)[-1]


@dataclass
class Agent:
    """One agent's conversation, as the release's ``Agent`` keeps it."""

    name: str
    model: str  # as CoSER's code would name it
    messages: list[dict[str, str]] = field(default_factory=list)

    def update(self, role: str, text: str) -> None:
        """A message added as ``Agent.update`` adds it: nothing for an empty one, joined to the last one of the same
        side."""
        if not text:
            return
        if self.messages and self.messages[-1]["role"] == role:
            self.messages[-1] = {"role": role, "content": f"{self.messages[-1]['content']}\n\n{text}"}
        else:
            self.messages.append({"role": role, "content": text})

    def sent(self) -> list[dict[str, str]]:
        """The messages as ``get_response`` sends them: a Claude's system message as the user's, user messages in a
        row as one (joined with nothing between them)."""
        out: list[dict[str, str]] = []
        for k, m in enumerate(self.messages):
            role = "user" if k == 0 and m["role"] == "system" and self.model.startswith("claude") else m["role"]
            if role == "user" and out and out[-1]["role"] == "user":
                out[-1] = {"role": "user", "content": out[-1]["content"] + m["content"]}
            else:
                out.append({"role": role, "content": m["content"]})
        return out


def new_agent(name: str, model: str, system: str) -> Agent:
    """An agent as the release's ``Agent.__init__`` makes one, its conversation opened as gca_simulation opens it."""
    system = system.strip("\n")
    if name not in SPECIAL:
        system += release.length_ask()
    if model.startswith(("llama", "step")):
        system += release.name_prefix_ask().fill({"name": name})
    agent = Agent(name, model, [{"role": "user" if model.startswith(("claude", "o1")) else "system",
                                 "content": system}])
    agent.update("user", release.conversation_opening())
    return agent


@dataclass(frozen=True)
class Draws:
    """What the release's generator draws for one circumstance's prompts: the environment's name, and each
    actor's way of setting the others' profiles apart (an index into the release's choices)."""

    environment: int
    decorators: dict[str, int]


def prompt_draws(circumstances: Sequence[Circumstance]) -> dict[str, Draws]:
    """Every circumstance's draws, made as main.py makes them: one generator seeded 42, the file's circumstances in
    order, each one's agents in the order it makes them (the speaking characters, then the predictor). Give every
    circumstance of the file, not only those a run acts: each draw depends on all before it."""
    rng = random.Random(release.RELEASE_SEED)
    roles, decorators = len(release.environment_roles()), len(release.character_prompt().decorators)
    out = {}
    for c in circumstances:
        environment, chosen = -1, {}
        for name in c.speaking:
            if name == ENVIRONMENT:
                environment = rng.choice(range(roles))
            elif c.profiles:  # get_character_prompt draws only when there are profiles to set apart
                chosen[name] = rng.choice(range(decorators))
        out[c.circumstance_id] = Draws(environment, chosen)
    return out


def agents(c: Circumstance, draws: Draws, actor: str, environment: str, predictor: str,
           thinks: bool = True) -> dict[str, Agent]:
    """Every agent of the scene, with the release's system prompt for it (``actor``, ``environment`` and
    ``predictor``: the models' names as CoSER's code would have them). ``thinks``: actors write [thoughts] as
    well as actions and speech (CoSER's default; its ``--wo_thought`` is not given)."""
    profiles = {p.speaker: p.text for p in c.profiles}
    motivations: dict[str, str] = {}
    for m in c.motivations:
        motivations.setdefault(m.name, m.text)
    shape = release.character_prompt()
    out: dict[str, Agent] = {}
    for name in [*c.speaking, NEXT_SPEAKER]:
        if name == NEXT_SPEAKER:
            system = release.next_speaker_prompt().fill({"ENVIRONMENT": ENVIRONMENT, "all_characters": c.speaking,
                                                         "scenario": c.scenario})
            out[name] = new_agent(name, predictor, system)
            continue
        if name == ENVIRONMENT:
            system = release.environment_prompt().fill({
                "random.choice(model_roles)": release.environment_roles()[draws.environment],
                "major_characters": [m for m in c.major if m != ENVIRONMENT], "scenario": c.scenario})
            out[name] = new_agent(name, environment, system)
            continue
        others = ""
        if profiles:
            decorator = shape.decorators[draws.decorators[name]]
            others = "".join(shape.other_profile.fill({"decorator": decorator, "other_character": other,
                                                       "profile": text})
                             for other, text in profiles.items() if other != name)
        motivation = motivations.get(name, "")
        system = shape.system.fill({
            "character": name, "book_name": c.book, "character_profile": profiles.get(name, ""),
            "scenario": c.scenario,
            "other_character_profiles_str": shape.others.fill({"other_character_profiles_str": others}) if others
            else "",
            "motivation": shape.motivation.fill({"motivation": motivation}) if motivation else ""})
        fmt = shape.output_formats[(not thinks, "coser" not in actor.lower())]
        out[name] = new_agent(name, actor, system + shape.requirements.fill({"output_format": fmt}))
    return out


def _nth(request: Request[Any], nth: int) -> Request[Any]:
    """The ``nth`` ask of ``request`` (from 0) as ``get_response_json`` makes it: one reply, no repair turn, at
    temperature 1 after the first (a sample of its own, so the call cache tells the asks apart)."""
    return dataclasses.replace(request, attempts=1, sample_index=request.sample_index + nth,
                               sampling=HOT if nth else None)


async def _resample(gateway: Model, request: Request[Any], first: CallResult[Any]) -> CallResult[Any]:
    last = first
    for nth in range(1, RESAMPLES):
        if last.ok or not last.raw_replies:
            break
        last = await gateway.run(_nth(request, nth))
    return last


async def resampled(gateway: Model, request: Request[Any]) -> CallResult[Any]:
    """``get_response_json``: asked once at the role's own sampling; a reply that is empty, or that cannot be read,
    asked again (the same messages) at temperature 1, up to five times more. A call that gets no reply at all
    (after the gateway's retries) is a failure at once; after six unusable replies, the last is given back."""
    return await _resample(gateway, request, await gateway.run(_nth(request, 0)))


async def resampled_all(gateway: Model, requests: Sequence[Request[Any]], roles: list[str]) -> list[CallResult[Any]]:
    """``resampled`` for independent requests: their first asks together (a role with ``batch`` sends them as a
    batch), then each unusable one asked again on its own."""
    first = await gateway.run_all([_nth(r, 0) for r in requests], roles=roles)
    return list(await asyncio.gather(*(_resample(gateway, r, f) for r, f in zip(requests, first, strict=True))))


def _own_part(reply: str, name: str) -> str:
    """What a llama or step model said as ``name`` (it may write others' lines too): the lines from where ``name``
    first speaks to where someone else does, as the release's ``parse_response`` keeps them; nothing when it never
    speaks (the release's agent then gives an empty reply)."""
    parts: list[tuple[str | None, str]] = []
    speaker: str | None = None
    said = ""
    for line in reply.split("\n"):
        if ":" in line:
            who = line.split(":", 1)[0].strip()
            if who != speaker:
                if said:
                    parts.append((speaker, said))
                speaker, said = who, ""
        said += line + "\n"
    if said:
        parts.append((speaker, said))
    return next((text for who, text in parts if who == name), "")


async def _chat(gateway: Model, agent: Agent, role: str, tag: str) -> tuple[str | None, str | None, bool]:
    """(reply, error, kept empty) of one agent's turn, with what the release's ``Agent.chat`` does to a reply."""
    result = await resampled(gateway, Request(role, agent.sent(), tag=tag,
                                              ends=f"Next Speaker: {END_CHAT}" if agent.name == NEXT_SPEAKER
                                              else None))
    if not result.ok and not result.raw_replies:
        return None, result.error, False
    text = result.text if result.ok else ""
    if agent.name != NEXT_SPEAKER and agent.model.startswith(("llama", "step")):
        text = _own_part(text, agent.name)
    if agent.name != NEXT_SPEAKER and not agent.model.lower().startswith(("gpt", "claude")):
        text = cut_repetition(text) or text
    return text, None, not result.ok


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
              next_role: str, continue_from: int, seed: int, draws: Draws, max_rounds: int = MAX_ROUNDS,
              thinks: bool = True) -> tuple[list[Message], SceneEnd]:
    """One model's scene for ``c``: its messages (next-speaker choices included) and how it ended."""
    rng = random.Random(f"{seed}:{c.circumstance_id}:{model}")
    cast = agents(c, draws, model_name(gateway.model_of(actor_role)), model_name(gateway.model_of(environment_role)),
                  model_name(gateway.model_of(next_role)), thinks)
    made: list[Message] = []
    current: str | None = c.speaking[0]
    rounds = kept_empty = 0

    def note(role: str, content: str, decided_by: str = "model", chosen: str | None = None) -> None:
        made.append(Message(circumstance_id=c.circumstance_id, model=model, index=len(made), role=role,
                            content=content, decided_by=decided_by, chosen=chosen))  # type: ignore[arg-type]

    def ended(status: str = "ok", error: str | None = None) -> SceneEnd:
        return SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=rounds, status=status,  # type: ignore[arg-type]
                        error=error, kept_empty=kept_empty)

    for r in range(max_rounds):
        if current is None:
            break
        rounds = r + 1
        tag = f"coser:{c.circumstance_id}:{model}:{r}"
        # The speaker acts.
        if r < continue_from:
            text, told = (c.original[r].text if r < len(c.original) else ""), "original"
        else:
            role = environment_role if current == ENVIRONMENT else actor_role
            reply, error, empty = await _chat(gateway, cast[current], role, f"{tag}:{current}")
            if reply is None:
                return made, ended("failed", f"{current}'s turn in round {r + 1}: {error}")
            text, told, kept_empty = reply, "model", kept_empty + empty
        note(current, text, told)
        heard = with_speaker(without_thoughts(text), current)
        for name, agent in cast.items():
            agent.update("assistant" if name == current else "user", text if name == current else heard)
        # The predictor names who acts next.
        predictor = cast[NEXT_SPEAKER]
        if r < continue_from:
            said: str | None = c.original[r + 1].speaker if r + 1 < len(c.original) else END_CHAT
        else:
            said, _error, empty = await _chat(gateway, predictor, next_role, f"{tag}:next")
            kept_empty += empty
        name = named_next(said) if said is not None else ""
        following, how = decide(c, name, current, r, rng)
        if said is None:
            how = "failed"
        elif r < continue_from and how == "model":
            how = "original"
        note(NEXT_SPEAKER, name, how, following)
        if how in ("model", "original"):
            predictor.update("assistant", said or name)
        else:  # as the release does after an unusable choice: the name it gave, then its system prompt again
            predictor.update("assistant", name)
            predictor.update("user", predictor.messages[0]["content"])
        current = following
    return made, ended()


def given_scene(c: Circumstance, messages: Sequence[Message] | None, model: str,
                source: str) -> tuple[list[Message], SceneEnd]:
    """A released simulation read as ``model``'s scene; a circumstance the file lacks is a failed scene."""
    if messages is None:
        return [], SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=0, status="failed",
                            error=f"{source} has no simulation of this circumstance")
    made = [m.model_copy(update={"model": model}) for m in messages]
    rounds = sum(m.role != NEXT_SPEAKER for m in made)
    return made, SceneEnd(circumstance_id=c.circumstance_id, model=model, rounds=rounds, status="ok")
