"""RoleLLM's training source: RoleBench-layout files (RoleLLM's own, or Context-Instruct's output).

A RoleBench row gives one sample per reference answer, prompted as RoleGPT prompts a role zero-shot (the
role's description as the system message, the question as the user turn): RoleLLM's RoCIT.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.rolellm.profiles import discover_profiles, load_profiles, profile_files
from rpbench.tasks.modes.rolellm.records import BenchRow, RoleProfile
from rpbench.tasks.modes.rolellm.rolebench import data_files, read_file
from rpbench.tasks.modes.rolellm.rolegpt import Retriever, messages
from rpbench.tasks.training.data import chat_turns
from rpbench.tasks.training.records import SftSample
from rpbench.tasks.training.sources import TrainingRequest, TrainingSource

NO_PROFILES = ("--profiles: none given, and no profiles-*/desc.json beside the RoleBench data (the role "
               "descriptions make the system prompt each sample is trained with)")


# -- RoleBench layout ---------------------------------------------------------------------------------------
def rolebench_samples(paths: Sequence[str], parts: Sequence[str], profiles: Sequence[str]) -> list[SftSample]:
    """One sample per reference answer of every row in ``paths`` (files, or folders read for ``parts``)."""
    files = data_files(paths, parts)
    found = profile_files(profiles) if profiles else discover_profiles(paths)
    if not found:
        raise InputError(NO_PROFILES)
    known: dict[str, RoleProfile] = load_profiles(found)
    retriever = Retriever(known)
    out: list[SftSample] = []
    for f, row, profile in _checked_rows(files, known):
        prompt = messages(profile, row.question, "zsp", retriever, language=row.language)
        for k, reference in enumerate(row.generated):
            out.append(SftSample(sample_id=f"{row.row_id}#{k}", source=f, kind=row.kind, language=row.language,
                                 role=row.role, prompt=chat_turns(prompt), response=reference,
                                 system=prompt[0]["content"], input=row.question))
    return out


def _checked_rows(files: Sequence[str], known: dict[str, RoleProfile]) -> Iterator[tuple[str, BenchRow, RoleProfile]]:
    """Every row of ``files`` with its role's profile; a role with none, or an empty reference, is an error."""
    for f in files:
        for row in read_file(Path(f)):
            profile = known.get(row.role)
            if profile is None:
                raise InputError(f"{f}: row {row.row_id}: field 'role': no profile for role '{row.role}' (give it "
                                 "with --profiles)")
            for k, reference in enumerate(row.generated):
                if not reference.strip():
                    raise InputError(f"{f}: row {row.row_id}: field 'generated': reference {k + 1} is empty")
            yield f, row, profile


RELEASED_PARTS = ("train", "test")  # RoleBench's files are <part>.jsonl under rolebench-eng/..., rolebench-zh/...


def _claims(path: Path, request: TrainingRequest) -> bool:
    """Any file (RoleBench rows, whatever its name), or a folder in RoleBench's layout (``<part>.jsonl`` files)."""
    if path.is_dir():
        parts = {*RELEASED_PARTS, *request.parts}
        return any(f.stem in parts for f in path.rglob("*.jsonl"))
    return path.is_file()


def _profiles(paths: Sequence[str], request: TrainingRequest) -> list[str]:
    found = profile_files(request.profiles) if request.profiles else discover_profiles(paths)
    if not found:
        raise InputError(NO_PROFILES)
    return found


def _check(paths: Sequence[str], request: TrainingRequest) -> list[str]:
    """The files and profiles, and every row read once: an empty file or a role without a profile is one line
    now, not an error inside the training flow."""
    files, profiles = data_files(paths, request.parts), _profiles(paths, request)
    for _row in _checked_rows(files, load_profiles(profiles)):
        pass
    return [*files, *profiles]


def _samples(paths: Sequence[str], request: TrainingRequest) -> list[SftSample]:
    return rolebench_samples(data_files(paths, request.parts), ["train"], _profiles(paths, request))


ROLEBENCH = TrainingSource(what="RoleBench files", claims=_claims, check=_check, samples=_samples,
                           templates=("rolellm/system", "rolellm/question"))
