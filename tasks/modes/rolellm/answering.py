"""Models answer RoleBench questions in role, prompted the RoleGPT way; and the RAW references they are also
scored against (RoleBench's files hold the role-play references only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rpbench.storage.user_files import jsonl_objects
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm import Model, Request
from rpbench.tasks.llm.gather import OnDone
from rpbench.tasks.modes.rolellm.records import BenchRow, Mode, RoleAnswer, RoleProfile
from rpbench.tasks.modes.rolellm.rolegpt import Retriever, messages

RAW_ANSWER_FIELDS = ("answer", "output", "response", "generated")


def requests(rows: Sequence[BenchRow], profiles: Mapping[str, RoleProfile], retriever: Retriever, role: str,
             model: str, mode: Mode, k: int) -> list[Request[None]]:
    return [Request(role, messages(profiles[r.role], r.question, mode, retriever, k, r.language, r.split),
                    tag=f"rolellm:{r.row_id}:{model}:{mode}") for r in rows]


async def answer_all(gateway: Model, rows: Sequence[BenchRow], profiles: Mapping[str, RoleProfile], role: str,
                     model: str, mode: Mode, k: int, on_done: OnDone = None) -> list[RoleAnswer]:
    results = await gateway.run_all(requests(rows, profiles, Retriever(profiles), role, model, mode, k),
                                    on_done=on_done)
    return [RoleAnswer(row_id=r.row_id, model=model, mode=mode, text=res.text if res.ok else None,
                       status=res.status, error=res.error) for r, res in zip(rows, results, strict=True)]


def read_rolebench_answers(path: str | Path) -> dict[str, list[str]]:
    """A user's answers to RoleBench questions: JSONL of ``answer`` with the row's ``id``, or with ``role`` and
    ``question`` (as RoleBench's own files key them); keys are the id, or role and question on two lines, each
    with its answers in file order.

    RoleBench's own answer files (``rolegpt_baseline.jsonl``) hold the answer as ``generated``, a list of one text;
    that is read too, so a released answer file is an answers file as it stands. A question RoleBench asks twice
    (its English role-specific test file has 25 such pairs) is answered twice there: the answers go to the
    question's rows in the order both files hold them (``paired``). An id answered twice, differently, is an
    error."""
    out: dict[str, list[str]] = {}
    for where, row in jsonl_objects(path, "a file of answers (JSONL)", "'answer' and 'id' (or 'role' and "
                                    "'question')", 256 * 2**20):
        if "answer" not in row and "generated" in row:
            row = {**row, "answer": _single_generated(row["generated"], where)}
        if not isinstance(row.get("answer"), str):
            problem = "not text" if "answer" in row else "missing"
            raise InputError(f"{where}: field 'answer': {problem}")
        if isinstance(row.get("id"), str):
            key = row["id"]
            if key in out and out[key] != [row["answer"]]:
                raise InputError(f"{where}: field 'id': '{key}' is answered twice, differently")
            out[key] = [row["answer"]]
            continue
        if isinstance(row.get("role"), str) and isinstance(row.get("question"), str):
            out.setdefault(f"{row['role']}\n{row['question'].strip()}", []).append(row["answer"])
        else:
            raise InputError(f"{where}: field 'id': missing (give the row's id, or its role and question)")
    return out


def paired(keys: Sequence[str], answers: Mapping[str, Sequence[str]]) -> list[str | None]:
    """The answer to each of ``keys`` (rows in data order): a key's answers go to its rows in order, the last one
    serving any further row of it (a file answering each question once covers a question asked twice)."""
    taken: dict[str, int] = {}
    out: list[str | None] = []
    for key in keys:
        given = answers.get(key)
        if not given:
            out.append(None)
            continue
        n = taken.get(key, 0)
        out.append(given[min(n, len(given) - 1)])
        taken[key] = n + 1
    return out


def _single_generated(value: object, where: str) -> str:
    """RoleBench's ``generated``: one answer, as text or a list holding one text (more would be references)."""
    texts = value if isinstance(value, list) else [value]
    if len(texts) != 1 or not isinstance(texts[0], str):
        raise InputError(f"{where}: field 'generated': expected one answer as text (a list of one), "
                         f"got {f'a list of {len(texts)}' if isinstance(value, list) else type(value).__name__}")
    return texts[0]


def load_raw(path: str | Path) -> dict[str, list[str]]:
    """RAW references: JSON Lines of ``question`` and the original answer (``answer``, ``output``,
    ``response``, or ``generated`` as a list), keyed by the question's text."""
    out: dict[str, list[str]] = {}
    expected = f"question and one of {', '.join(RAW_ANSWER_FIELDS)}"
    for where, row in jsonl_objects(path, "a RAW references file (JSONL)", expected, 256 * 2**20):
        field = next((f for f in RAW_ANSWER_FIELDS if f in row), None)
        if not isinstance(row.get("question"), str) or field is None:
            raise InputError(f"{where}: expected {expected}")
        value = row[field]
        refs = value if isinstance(value, list) else [value]
        if not refs or not all(isinstance(v, str) and v.strip() for v in refs):
            raise InputError(f"{where}: field '{field}': expected the answer as text")
        out.setdefault(row["question"].strip(), []).extend(refs)
    return out
