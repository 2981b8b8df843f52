"""The parts of Label Studio validation that need no server: the sample, the configs, reading answers back."""

from __future__ import annotations

import xml.dom.minidom

import pytest


def _items(n: int):
    from rpbench.tasks.modes.furina.domain import Item

    dims = ["CR", "FR", "RR", "CA", "PA"]
    return [Item(item_id=f"i{k:03d}", character="Zero", character_type="synthesized", language="zh" if k % 3 else "en",
                 scene_id="s1", dialogue_id="d0", dimension=dims[k % 5], history=[], test_utterance="t",
                 base_utterance="b", source_model="m", sigma=1) for k in range(n)]


def test_the_sample_is_seeded_and_reaches_every_stratum_first():
    from rpbench.tasks.modes.furina.annotation import stratified_sample

    items = _items(60)
    first = stratified_sample(items, 10, seed=1)
    assert [i.item_id for i in first] == [i.item_id for i in stratified_sample(list(reversed(items)), 10, seed=1)]
    assert [i.item_id for i in first] != [i.item_id for i in stratified_sample(items, 10, seed=2)]
    # 5 dimensions x 2 languages: ten items are one from each stratum.
    assert len({(i.dimension, i.language) for i in first}) == 10
    assert len(stratified_sample(items, None, seed=1)) == 60


@pytest.mark.parametrize("kind", ["dimension", "pairwise"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_labeling_configs_are_xml_with_unsure_and_every_dimension(kind, language):
    from rpbench.tasks.modes.furina.annotation import labeling_config

    config = labeling_config(kind, language)
    dom = xml.dom.minidom.parseString(config)  # a definition with quotes or ampersands must not break it
    aliases = [c.getAttribute("alias") for c in dom.getElementsByTagName("Choice")]
    assert aliases[-1] == "unsure"
    assert aliases[:-1] == (["CR", "FR", "RR", "CA", "PA"] if kind == "dimension" else ["1", "2", "3", "4", "5"])
    for field in ("$profile", "$background", "$history"):
        assert field in config


def _task(key: str, shown_first: str, *answers: dict) -> dict:
    item, model, kind = key.split("|")
    return {"id": hash(key) % 1000, "data": {"rpbench_key": key, "task": kind, "item_id": item, "model": model,
                                               "language": "en", "shown_first": shown_first},
            "annotations": list(answers)}


def _said(who: int, choice: str | None, when: str, cancelled: bool = False) -> dict:
    result = [] if choice is None else [{"from_name": "score", "value": {"choices": [choice]}}]
    return {"id": hash((who, when)) % 1000, "completed_by": who, "result": result, "updated_at": when,
            "lead_time": 2.0, "was_cancelled": cancelled}


def test_answers_read_back_unrandomised_with_skips_unsure_and_duplicates_counted():
    from rpbench.tasks.annotation.results import read_back
    from rpbench.tasks.modes.furina.annotation import PAIRWISE

    users = {1: "a@x", 2: "b@x"}
    tasks = [
        _task("i1|m|pairwise", "test", _said(1, "2", "2026-01-01T10:00"), _said(2, "unsure", "2026-01-01T10:01")),
        # a@x answered twice: the later answer (4, mirrored to 2 as the base was shown first) is kept.
        _task("i2|m|pairwise", "base", _said(1, "4", "2026-01-01T11:00"), _said(1, "1", "2026-01-01T09:00"),
              _said(2, None, "2026-01-01T11:05", cancelled=True)),
        {"id": 9, "data": {"text": "not ours"}, "annotations": [_said(1, "3", "2026-01-01T12:00")]},
    ]
    got = read_back(tasks, users, {"pairwise": PAIRWISE})
    assert [(r["item_id"], r["annotator"], r["score"], r["score_as_shown"]) for r in got.rows] == [
        ("i1", "a@x", 2, 2), ("i2", "a@x", 2, 4)]
    assert (got.skipped, got.unsure, got.foreign) == (1, 1, 1)
    assert got.duplicates == ["i2|m|pairwise by a@x"]
