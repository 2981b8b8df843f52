"""CharacterBench's released code as the source of its words, read at run time (never copied, never executed).

thu-coai/CharacterBench at f4ec56a states the reply prompt (``roleplay_prompt.py``), the judge's system prompt
(``model_generation_qwen_chat.py``, the payload CharacterJudge is asked with) and each dimension's judge prompt
(``construct_prompts/eval_prompts_<lang>/``, chosen per dimension by ``construct_prompts/data_info_<lang>.py``).
What rpbench fills them with is assembled as ``process.py`` and ``process_wo_context_<lang>_all.py`` assemble it
(``answering.py``, ``judging.py``); the tests compare both with the release's own code.
"""

from __future__ import annotations

import ast
import functools
import re
import string
from pathlib import PurePosixPath

from rpbench.prompts import python_text
from rpbench.prompts.releases import Release, read_text

RELEASE = Release(
    benchmark="characterbench",
    repository="thu-coai/CharacterBench",
    commit="f4ec56a45b1b3f14b5cdcce5d53d8fdc485c5f63",
    about="the reply prompt and how its reply is read, CharacterJudge's system prompt, and the judge prompt of "
          "each dimension, zh and en",
    files={
        "model_generation_qwen_chat.py": "8055a1e9730da96fa86028cefaebec1f95614bfca8d6eec266813b67788e24b6",
        "process.py": "2b20b4952f42189c5417cb6c009b8ec250b1cfa7efbc2944bf0b7e3168f734c8",
        "roleplay_prompt.py": "df12719ceaddffb607bc9b605f8b6ad7b4a3a6412c665f53799fbcf4e5f21846",
        "construct_prompts/data_info_en.py": "1b928ca8e7968db30829a7ebb907423103ec41a3a547fcda328171e16a1a8187",
        "construct_prompts/data_info_zh.py": "717ee62c0baecaf6685c447ffe051dc82796031cacb9b3210b1a5fb664a40cd8",
        "construct_prompts/eval_prompts_en/attribute_consistency_bot.py":
            "9f614f7fcb496b263a4b6cc1200ad8632943455e8a0388a9d267b88fd78efa8c",
        "construct_prompts/eval_prompts_en/attribute_consistency_human.py":
            "21a0cb35b0ee12439d675f29a6ae1d406a76af6f0d03a49f6c41b1834d6c6dce",
        "construct_prompts/eval_prompts_en/behavior_consistency_bot.py":
            "bea2e617afd0de8fb06fb4b6b409d4e1f5bf99157fc695c7021dc2cdcc092d7d",
        "construct_prompts/eval_prompts_en/behavior_consistency_human.py":
            "b6bdc82d018f8c512d8716bd349aa1af444e682cf907535e3d2407a29d0efd0e",
        "construct_prompts/eval_prompts_en/boundary_consistency.py":
            "5d4f756d2ddff4a327b1e5bc2efcb82fa5633efabcc03b515c1cf4396986d693",
        "construct_prompts/eval_prompts_en/emotion_self_regulation.py":
            "cdb6d6c7be02e355abd01b6d30babee012d1a03bf51cae916229164c780dad75",
        "construct_prompts/eval_prompts_en/empathetic_responsiveness.py":
            "d981f9e61a2ecf3d5e8492092b8f710d7e605ac3e601557724a1a7cc7244324a",
        "construct_prompts/eval_prompts_en/engagement.py":
            "bf260e8a561c6bbff8538a94b4fe6b5c4d668065b2fde290b144c139c2d11ed0",
        "construct_prompts/eval_prompts_en/fact_accuracy.py":
            "a7fd878065ab1c701c49da57d13f805dbcf6d3659381e6bb308fe4e6f25ca69e",
        "construct_prompts/eval_prompts_en/human_likeness.py":
            "98b95a5fe055e49dd1c2c1753af5754d9561c834d14d9724c0baab5d89641c9d",
        "construct_prompts/eval_prompts_en/memory_consistency.py":
            "f6cd51f928bcee02a63b961fb2eaf1058eba4a866196a67989abacad0e544846",
        "construct_prompts/eval_prompts_en/morality.py":
            "96853fc2970926faa32d5f1a9f99c71df72c070f61ec1e22acb58a9a2436cc81",
        "construct_prompts/eval_prompts_zh/attribute_consistency_bot.py":
            "4dc2d1b7fcdcf49ff44bb912d90d4c1a6c9654a66aaa5d0a4057a75cc9efddf9",
        "construct_prompts/eval_prompts_zh/attribute_consistency_human.py":
            "2f194feddf06e243a1ff692642b033e002fea14bb0d8fb7ae6d493832a297e8a",
        "construct_prompts/eval_prompts_zh/behavior_consistency_bot.py":
            "03838fa50c7f8bc5ceb8ff6026e8903dfbe74eae8f5690de3a35e0f34b49247e",
        "construct_prompts/eval_prompts_zh/behavior_consistency_human.py":
            "cb143ae0706e003daa3a6d0a9b4ffb98f4175ffad317a170bc11e2cf9d176fae",
        "construct_prompts/eval_prompts_zh/boundry_consistency.py":
            "6e88ac2e15f9fbdadbd8822ecdcad8cd792af72c16f6760647bd06aba4cba1f8",
        "construct_prompts/eval_prompts_zh/emotion_self_regulation.py":
            "464d08908f6390e5f599e50be2c4d3894b3dab1327d84861be077aab4842ae3b",
        "construct_prompts/eval_prompts_zh/empathetic_responsiveness.py":
            "d7270c11b40653ea0ef82cf49d4036aa7f68cc623f53951f10f76dc21b31a865",
        "construct_prompts/eval_prompts_zh/engagement.py":
            "d257aaaee1f6b6e7aeb4761ce7d94ec409571284e74adc88efbd39760a440dac",
        "construct_prompts/eval_prompts_zh/fact_accuracy.py":
            "cd21ef21d7e00371f6af6dd35edf59c7f0923fdecff145b7830dffcbfc895740",
        "construct_prompts/eval_prompts_zh/human_likeness.py":
            "8e3d559f88656ef84bc430b57a0ee0ebc9793b9340e0e5416c65cfc66765cca4",
        "construct_prompts/eval_prompts_zh/memory_consistency.py":
            "9f7d94d6b60acbb00cf79f7bc85337f77afafb06bcaaddd97a9d1bc3162b35f1",
        "construct_prompts/eval_prompts_zh/morality.py":
            "665a001146b83f95d122af861116a7e720031487010210575b1f60ca2c5273cc",
    },
)
PROMPTS = "construct_prompts"
# A scale's steps as the judge prompts write them: "1分：", "(3) 3分，", "2 points:".
_STEP = re.compile(r"(?m)^\s*(?:\(\d+\)\s*)?(\d+)\s*(?:分|points?)\s*[:：,，]")


def reply_prompt(language: str) -> str:
    """The prompt that asks a model under test for a reply (``Role_Play_PROMPT_ZH`` / ``_EN``), unfilled."""
    name = f"Role_Play_PROMPT_{'ZH' if language == 'zh' else 'EN'}"
    return str(python_text.constant(read_text(RELEASE, "roleplay_prompt.py"), name, "roleplay_prompt.py"))


def user_profile_default(language: str) -> str:
    """What the reply prompt says of a user whose item has no profile (``norm_session_<lang>``'s default)."""
    where = "process.py"
    fn = python_text.function(read_text(RELEASE, where), f"norm_session_{language}", where)
    for call in python_text.calls(fn, "get"):
        if len(call.args) == 2 and python_text.literal(call.args[0], where) == "user_profile":
            return str(python_text.literal(call.args[1], where))
    raise python_text.ReleaseLayoutError(f"{where}: norm_session_{language} has no default user profile")


def reply_cleaning() -> list[tuple[str, str]]:
    """The replacements process.py makes in a model's reply before it reads the reply's JSON, in order (they
    change the reply the judge then sees)."""
    where = "process.py"
    assigned = python_text.assignments(python_text.parsed(read_text(RELEASE, where)), "response_zh")
    for value in assigned:
        pairs: list[tuple[str, str]] = []
        node = value.args[0] if isinstance(value, ast.Call) and value.args else value
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "replace":
                pairs.append((python_text.literal(node.args[0], where), python_text.literal(node.args[1], where)))
            node = node.func.value
        if pairs:
            return pairs[::-1]  # the innermost call is made first
    raise python_text.ReleaseLayoutError(f"{where}: no cleaning of the reply before it is read")


def judge_system() -> str:
    """The system message of the payload CharacterJudge is asked with (``create_payload``)."""
    where = "model_generation_qwen_chat.py"
    source = read_text(RELEASE, where)
    payload = python_text.assignments(python_text.function(source, "create_payload", where), "payload")
    if not payload:
        raise python_text.ReleaseLayoutError(f"{where}: create_payload builds no payload")
    messages = python_text.dict_entry(payload[0], "messages", where)
    system = [python_text.literal(python_text.dict_entry(m, "content", where), where)
              for m in getattr(messages, "elts", [])
              if python_text.literal(python_text.dict_entry(m, "role", where), where) == "system"]
    if len(system) != 1 or not isinstance(system[0], str):
        raise python_text.ReleaseLayoutError(f"{where}: create_payload's messages hold no one system text")
    return system[0]


@functools.lru_cache(maxsize=64)
def _judge_prompt_place(dimension: str, language: str, data_info: str) -> tuple[str, str]:
    """Where data_info_<lang>.py takes the dimension's judge prompt from: (file, constant)."""
    where = f"{PROMPTS}/data_info_{language}.py"
    table = python_text.dict_of_names(data_info, "data_info", where)
    if dimension not in table:
        raise python_text.ReleaseLayoutError(f"{where}: data_info has no dimension {dimension}")
    name = table[dimension].get("base_eval_prompt")
    module = python_text.imported_names(data_info).get(name or "")
    if not name or module is None:
        raise python_text.ReleaseLayoutError(f"{where}: {dimension}'s base_eval_prompt is not an imported name")
    return str(PurePosixPath(PROMPTS, *module.split("."))) + ".py", name


def judge_prompt(dimension: str, language: str) -> str:
    """The dimension's judge prompt in ``language`` (the ``base_eval_prompt`` data_info gives it), unfilled."""
    path, name = _judge_prompt_place(dimension, language, read_text(RELEASE, f"{PROMPTS}/data_info_{language}.py"))
    return str(python_text.constant(read_text(RELEASE, path), name, path))


def holes(prompt: str) -> set[str]:
    """The names a prompt's ``str.format`` holes take."""
    return {name for _text, name, _spec, _conv in string.Formatter().parse(prompt) if name}


def scale_top(dimension: str, language: str) -> int:
    """The top of the dimension's scale as its judge prompt in ``language`` states it (its highest step)."""
    steps = [int(n) for n in _STEP.findall(judge_prompt(dimension, language))]
    if not steps:
        raise python_text.ReleaseLayoutError(f"{RELEASE.name}: {dimension}'s {language} judge prompt states no "
                                             "scale")
    return max(steps)


def criterion(dimension: str, language: str) -> str:
    """What the judge is told of the dimension, for people scoring the same replies: its judge prompt up to the
    section that shows the profile (the task and the scale, in the judge's own words)."""
    prompt = judge_prompt(dimension, language)
    head = prompt.split("{character_profile}", 1)[0].rstrip().splitlines()[:-1]  # without that section's title
    return "\n".join(head).strip()
