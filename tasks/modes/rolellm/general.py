"""RoleBench-general: general instructions answered by every role, the way RoleLLM built its general set.

Instructions come from a JSONL file (``instruction`` or ``question``, optional ``input``, and the original
answer as ``output``, ``response`` or ``answer``). Kept are the short ones (instruction, input and answer
under 100 words; 200 characters for Chinese, our choice), de-duplicated with BM25. The model that plays the
roles (role ``rolellm-rolegpt``, RoleGPT prompting) answers each instruction six times per role of the same
language: five answers are reference candidates (cleaned by RoleLLM's rules), the sixth is the RoleGPT
baseline. The original answer becomes the RAW reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rpbench.storage.user_files import jsonl_objects
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.modes.rolellm.cleaning import unclean
from rpbench.tasks.modes.rolellm.records import GeneralResponse, Mode, RoleProfile
from rpbench.tasks.modes.rolellm.rolegpt import Retriever, messages
from rpbench.tasks.modes.rolellm.segments import size
from rpbench.tasks.modes.rolellm.splits import held_out_roles, test_instructions
from rpbench.tasks.stats.similarity import BM25Index, has_cjk

ROLEGPT = "rolellm-rolegpt"
RESPONSES = 6  # five reference candidates and the baseline
MAX_SIZE = {"en": 100, "zh": 200}


@dataclass(frozen=True)
class Instruction:
    question: str
    answer: str
    language: str


def load_instructions(path: str | Path) -> list[Instruction]:
    out = []
    for where, row in jsonl_objects(path, "an instructions file (JSONL)", "instruction and output", 256 * 2**20):
        text = row.get("instruction", row.get("question"))
        answer = next((row[k] for k in ("output", "response", "answer") if k in row), None)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: field 'instruction': missing")
        if not isinstance(answer, str) or not answer.strip():
            raise InputError(f"{where}: field 'output': missing (the original answer, for RAW)")
        extra = row.get("input") or ""
        question = f"{text.strip()}\n{extra.strip()}" if isinstance(extra, str) and extra.strip() else text.strip()
        out.append(Instruction(question, answer.strip(), "zh" if has_cjk(question) else "en"))
    return out


def select_instructions(found: Sequence[Instruction], duplicate_share: float = 0.6) -> list[Instruction]:
    """The short instructions, each question once and none too close (BM25) to one kept before it."""
    short = [i for i in found if size(f"{i.question} {i.answer}", i.language) < MAX_SIZE[i.language]]
    if not short:
        return []
    index = BM25Index([i.question for i in short], floor=False)
    own = [index.scores_of(index.docs[j])[j] or 1e-9 for j in range(len(short))]
    kept: list[int] = []
    for j in range(len(short)):
        scores = index.scores_of(index.docs[j])
        if all(scores[k] / own[k] < duplicate_share for k in kept):
            kept.append(j)
    return [short[j] for j in kept]


async def respond_all(gateway: Model, profile: RoleProfile, instructions: Sequence[Instruction], mode: Mode,
                      k: int, on_done: OnDone = None) -> list[GeneralResponse]:
    """Six answers in role to each instruction of the role's language: five references (cleaned), a baseline."""
    mine = [i for i in instructions if i.language == profile.language]
    retriever = Retriever({profile.name: profile})
    asks: list[tuple[Instruction, int, Request[Any]]] = []
    for j, ins in enumerate(mine):
        chat = messages(profile, ins.question, mode, retriever, k)
        asks += [(ins, n, Request(ROLEGPT, chat, sample_index=n, tag=f"rolellm:general:{profile.name}:{j}:{n}"))
                 for n in range(RESPONSES)]
    results = await gateway.run_all([r for _, _, r in asks], on_done=on_done)
    out = []
    for (ins, n, _), res in zip(asks, results, strict=True):
        outcome: Literal["reference", "baseline", "unclean", "failed"]
        if not res.ok:
            outcome, error = "failed", res.error
        elif n == RESPONSES - 1:
            outcome, error = "baseline", None
        else:
            why = unclean(res.text, profile.name)
            outcome, error = ("unclean", why) if why else ("reference", None)
        out.append(GeneralResponse(role=profile.name, question=ins.question, index=n,
                                   text=res.text if res.ok else None, status=res.status, outcome=outcome,
                                   error=error))
    return out


def general_layout(responses: Sequence[GeneralResponse], languages: Mapping[str, str], seed: int = 0
                   ) -> dict[str, list[dict[str, object]]]:
    """RoleBench-general files: relative path -> rows (``generated``: the clean references; the baseline file
    the sixth answer). A (role, instruction) with no clean reference is left out."""
    refs: dict[tuple[str, str], list[str]] = {}
    base: dict[tuple[str, str], str] = {}
    for r in sorted(responses, key=lambda r: (r.role, r.question, r.index)):
        if r.outcome == "reference" and r.text:
            refs.setdefault((r.role, r.question), []).append(r.text)
        elif r.outcome == "baseline" and r.text:
            base[(r.role, r.question)] = r.text
    files: dict[str, list[dict[str, object]]] = {}

    def put(rel: str, keys: Sequence[tuple[str, str]], baseline: bool = False) -> None:
        rows: list[dict[str, object]] = [
            {"role": role, "question": q, "generated": [base[(role, q)]] if baseline else refs[(role, q)]}
            for role, q in keys if (role, q) in refs and (not baseline or (role, q) in base)]
        if rows:
            files[rel] = rows

    for lang, folder in (("en", "rolebench-eng/instruction-generalization/general"), ("zh", "rolebench-zh/general")):
        keys = sorted(k for k in refs if languages.get(k[0]) == lang)
        test = test_instructions(sorted({q for _, q in keys}), seed)  # 4:1 within each language
        if keys:
            put(f"{folder}/train.jsonl", [k for k in keys if k[1] not in test])
            put(f"{folder}/test.jsonl", [k for k in keys if k[1] in test])
            put(f"{folder}/rolegpt_baseline.jsonl", [k for k in keys if k[1] in test], baseline=True)
    en = sorted(r for r, lang in languages.items() if lang == "en")
    held = held_out_roles(en, seed)
    if held:
        folder = "rolebench-eng/role-generalization/general"
        keys = sorted(k for k in refs if languages.get(k[0]) == "en")
        put(f"{folder}/train.jsonl", [k for k in keys if k[0] not in held])
        put(f"{folder}/test.jsonl", [k for k in keys if k[0] in held])
        put(f"{folder}/rolegpt_baseline.jsonl", [k for k in keys if k[0] in held], baseline=True)
    return files
