"""RoleInteract's letter reading on a corpus of replies, each with the letters it chooses, in English and
Chinese; compared with the regex SocialBench's released evaluation uses (its newer version, order kept, each
letter once). rpbench must read every reply right, so at least every one the released regex reads right."""

from __future__ import annotations

import re

import pytest

from rpbench.tasks.choices.letters import option_letters

CORPUS: list[tuple[str, list[str]]] = [
    # bare letters and markup
    ("B", ["B"]), ("B.", ["B"]), ("(C)", ["C"]), ("**D**", ["D"]), ("[B]", ["B"]), ("\n\nB\n", ["B"]),
    ("Ａ", ["A"]), ("B) Angry", ["B"]), ("A", ["A"]),
    # answer phrases
    ("The answer is B.", ["B"]), ("Answer: C", ["C"]), ("**Answer:** C", ["C"]), ("Choice: D", ["D"]),
    ("I choose A.", ["A"]), ("I think the best answer would be A.", ["A"]), ("My answer is (b).", ["B"]),
    ("Option B best fits her mood.", ["B"]),
    # affirmations with the letter first
    ("A is correct.", ["A"]), ("A is the answer.", ["A"]), ("A fits her best.", ["A"]),
    ("A, because the speaker is clearly teasing.", ["A"]), ("It's definitely C, because she hides her pain.", ["C"]),
    ("I'll say D.", ["D"]),
    # the article is not an option
    ("A good choice is D", ["D"]), ("A person in his position would feel B.", ["B"]),
    # lists with and / or
    ("A and C", ["A", "C"]), ("A or C", ["A", "C"]), ("A, C", ["A", "C"]), ("I'd pick A and C.", ["A", "C"]),
    ("The correct options are A, B and D.", ["A", "B", "D"]),
    # negations
    ("I would not choose A. My answer: D", ["D"]), ("Not A. The answer is D.", ["D"]),
    ("The answer is not A; it is C.", ["C"]), ("Neither A nor B; C.", ["C"]),
    ("I wouldn't pick B, I'd go with C.", ["C"]), ("Between A and B, I'd go with B.", ["B"]),
    # Chinese
    ("答案是B", ["B"]), ("答案：C。", ["C"]), ("我选A", ["A"]), ("选B和D", ["B", "D"]), ("B和C", ["B", "C"]),
    ("正确答案为（D）", ["D"]), ("不选A，选C", ["C"]), ("A是正确的", ["A"]), ("应选A、C", ["A", "C"]),
    ("我认为是B，因为她在讽刺。", ["B"]), ("答案是 **C**", ["C"]), ("不是A，是D", ["D"]),
]

# SocialBench's released extraction (dataset.py, newer version): standalone capitals A-H, first appearance kept.
_RELEASED = re.compile(r"(\b|\W+|^|[\u4e00-\u9fa5]+|(?<=[A-D]))([A-H])(\b|(?=[A-D])|$|\W+|[\u4e00-\u9fa5]+)")


def released(reply: str) -> list[str]:
    out: list[str] = []
    for _before, letter, _after in _RELEASED.findall(reply):
        if letter not in out:
            out.append(letter)
    return out


def test_the_corpus_is_large_and_covers_both_languages():
    assert len(CORPUS) >= 40
    assert sum(bool(re.search(r"[\u4e00-\u9fff]", r)) for r, _ in CORPUS) >= 10


@pytest.mark.parametrize(("reply", "letters"), CORPUS)
def test_each_reply_is_read_as_the_letters_it_chooses(reply, letters):
    assert option_letters(reply, "ABCD") == letters


def test_rpbench_reads_right_every_reply_the_released_regex_reads_right():
    ours = {r for r, want in CORPUS if option_letters(r, "ABCD") == want}
    theirs = {r for r, want in CORPUS if released(r) == want}
    assert theirs <= ours, sorted(theirs - ours)
    assert len(ours) > len(theirs)  # and more: the negations and the article, which the regex cannot tell
    assert released("A is correct") == ["A"] and released("I would not choose A. My answer: D") == ["A", "D"]


def test_the_kit_names_its_readers_and_scores_letters_by_a_named_rule():
    """The kit's multiple-choice pieces a new benchmark reads its replies with: a reader by its policy's name
    (an unknown one is an error listing them), a release's own pattern followed as it is, and the two rules."""
    import re

    from rpbench.tasks.choices.letters import pattern_reader, reader, score_letters
    from rpbench.tasks.core.errors import InputError

    assert reader("lenient")("I choose B, not A.", "ABCD") == ["B"]
    with pytest.raises(InputError, match="unknown letter reader 'lenint' \\(did you mean 'lenient'"):
        reader("lenint")
    released = pattern_reader(re.compile(r"(^|\W)([A-H])(\W|$)"), group=1)
    assert released("A good choice is D.", "ABCD") == ["A", "D"]  # the article read as a letter, as released
    assert score_letters(["B"], ["B"]) == 1.0 and score_letters(["B", "C"], ["B"]) == 0.0
    assert score_letters(["B", "C"], ["B"], rule="first") == 1.0 and score_letters([], ["B"], "first") == 0.0
    with pytest.raises(InputError, match="unknown letter rule"):
        score_letters(["B"], ["B"], rule="any")
