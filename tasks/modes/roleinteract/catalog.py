"""RoleInteract's fixed vocabulary: the nine columns of its results table, which item categories feed each, how
each column scores an item, and the paper's published Table 2 for comparison."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Metric = Literal["single", "multiple", "cover"]
MEMORY_SHORT_LIMIT = 40  # a memory item with fewer utterances than this is short-term (as the released code splits)
PREFERENCES = ("positive", "neutral", "negative")


@dataclass(frozen=True)
class Column:
    name: str  # as the paper's table heads it; the name in every table and report
    level: Literal["individual", "group"]
    metric: Metric


COLUMNS: tuple[Column, ...] = (
    Column("SA Style", "individual", "single"),
    Column("SA Know.", "individual", "single"),
    Column("EP Situ.", "individual", "multiple"),
    Column("EP Emo.", "individual", "single"),
    Column("CM Short", "individual", "cover"),
    Column("CM Long", "individual", "cover"),
    Column("Pos.", "group", "single"),
    Column("Neu.", "group", "single"),
    Column("Neg.", "group", "single"),
)
NAMES = tuple(c.name for c in COLUMNS)
MEMORY = ("CM Short", "CM Long")
GROUP = ("Pos.", "Neu.", "Neg.")

# The released category strings -> their column ("memory" is split by length, see ``column_of``).
CATEGORIES: dict[str, str] = {
    "Individual-SA-RoleStyle": "SA Style",
    "Individual-SA-RoleKnowledge": "SA Know.",
    "Individual-EP-SituationUnderstanding": "EP Situ.",
    "Individual-EP-DialogueEmotionDetect": "EP Emo.",
    "Individual-EP-HumorSarcasmDetect": "EP Emo.",
    "Individual-MEM": "memory",
    # The release's current conversation_memory.json (commit "rename category") names the split itself.
    "Individual-MEM-Short": "CM Short",
    "Individual-MEM-Long": "CM Long",
    "Group-SAP-Positive": "Pos.",
    "Group-SAP-Neutral": "Neu.",
    "Group-SAP-Negative": "Neg.",
}
GROUP_PREFERENCE = {"Pos.": "positive", "Neu.": "neutral", "Neg.": "negative"}


def column_of(category: str, utterances: int) -> str:
    """The column an item scores in; memory items are short-term below ``MEMORY_SHORT_LIMIT`` utterances."""
    column = CATEGORIES[category]
    if column == "memory":
        return "CM Short" if utterances < MEMORY_SHORT_LIMIT else "CM Long"
    return column


# The paper's Table 2 (scores x 100), kept to set a run beside published numbers; Avg is the unweighted mean
# of the nine columns.
PAPER_TABLE: dict[str, tuple[float, ...]] = {
    "LLaMA-2-7B-Chat": (48.76, 51.23, 31.23, 28.91, 25.38, 21.89, 44.98, 24.19, 27.67),
    "LLaMA-2-13B-Chat": (57.62, 65.51, 37.12, 32.56, 30.43, 29.82, 66.38, 42.25, 26.27),
    "LLaMA-2-70B-Chat": (67.61, 70.78, 35.74, 38.47, 45.57, 26.74, 69.87, 45.29, 39.37),
    "Mistral-7B": (50.12, 61.17, 36.48, 31.72, 31.78, 25.42, 65.67, 46.34, 28.96),
    "Qwen-7B-Chat": (66.44, 71.16, 41.68, 40.68, 67.45, 53.45, 75.61, 52.78, 43.11),
    "Qwen-14B-Chat": (77.06, 86.15, 45.71, 43.78, 65.32, 51.37, 78.32, 58.25, 59.21),
    "Qwen-72B-Chat": (83.87, 90.64, 53.10, 52.89, 83.29, 73.15, 91.53, 73.44, 63.82),
    "GPT-4-Turbo": (84.57, 93.11, 56.48, 53.05, 81.39, 80.11, 89.73, 81.69, 75.10),
    "GPT-3.5-Turbo": (73.17, 73.82, 52.44, 45.49, 73.03, 59.72, 81.59, 76.79, 54.16),
    "Qwen-Max": (82.04, 93.34, 61.14, 52.36, 76.45, 72.65, 87.22, 72.14, 52.19),
    "Xingchen-Plus": (85.43, 91.6, 55.44, 60.73, 82.43, 80.69, 94.27, 86.69, 77.26),
    "Baichuan-NPC-Turbo": (53.69, 61.67, 52.14, 43.34, 76.47, 22.40, 62.09, 48.91, 34.59),
    "Baichuan-2-Turbo": (77.75, 83.35, 55.7, 47.38, 80.11, 78.91, 87.37, 74.71, 68.50),
    "CharGLM-3": (74.70, 79.41, 26.23, 41.27, 81.16, 68.29, 84.40, 70.45, 36.36),
    "GLM-3-Turbo": (77.85, 84.62, 35.58, 53.05, 74.64, 71.68, 84.41, 67.47, 54.55),
    "Minimax-abab5.5s-chat": (36.09, 42.11, 28.15, 47.97, 29.55, 19.30, 44.59, 41.04, 22.45),
    "Minimax-abab6-chat": (82.92, 87.45, 35.90, 51.38, 83.60, 80.26, 89.12, 79.55, 74.65),
}
PAPER_AVG = {"LLaMA-2-7B-Chat": 33.80, "LLaMA-2-13B-Chat": 43.11, "LLaMA-2-70B-Chat": 48.83, "Mistral-7B": 41.96,
             "Qwen-7B-Chat": 56.93, "Qwen-14B-Chat": 62.80, "Qwen-72B-Chat": 73.97, "GPT-4-Turbo": 77.25,
             "GPT-3.5-Turbo": 65.58, "Qwen-Max": 72.17, "Xingchen-Plus": 79.39, "Baichuan-NPC-Turbo": 50.59,
             "Baichuan-2-Turbo": 72.64, "CharGLM-3": 62.47, "GLM-3-Turbo": 67.09, "Minimax-abab5.5s-chat": 34.58,
             "Minimax-abab6-chat": 73.87}
# A few of them in every report, for scale.
REPORTED = ("GPT-4-Turbo", "Xingchen-Plus", "Qwen-72B-Chat", "GPT-3.5-Turbo", "LLaMA-2-7B-Chat")
