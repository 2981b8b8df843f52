"""DMT-RoleBench's fixed vocabulary: role types, system-prompt formats, evaluation intents, the 14 metrics and
which metrics each role type is judged on (the paper's Table 2). Descriptions are our own wording."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ROLE_TYPES = ("fictional_character", "historical_figure", "professional_occupation", "emotional_companionship",
              "utility_assistant", "game_npc")
FORMATS = ("minimalist", "overview", "detailed")

# The seven evaluation intents that steer a dialogue (Table 1), with what each checks.
INTENTS: dict[str, str] = {
    "identity_recognition": "Identity recognition: does the model know who the role is (name, origin, relations, "
                            "life events) and answer as that person?",
    "knowledge_qa": "Role-specific knowledge: can the model answer questions the role should know about, "
                    "correctly?",
    "personality_trait": "Personality and style: does the model speak and behave with the role's temperament and "
                         "way of talking?",
    "knowledge_boundary": "Knowledge boundary: does the model refuse or deflect what the role could not know "
                          "(later events, other worlds), instead of answering anyway?",
    "conversation_steering": "Steering casual chat: can the model keep a casual conversation going and move it "
                             "somewhere interesting?",
    "professional_skill": "Professional skill: does the model show the real expertise of the role's profession?",
    "game_interaction": "Game interaction: does the model run the game scene, give the player choices and move "
                        "the game forward?",
}


@dataclass(frozen=True)
class Metric:
    code: str
    name: str
    tier: Literal["basic", "conversation", "imitation"]
    aggregation: Literal["all", "any"]  # strict: every round so far good; lenient: any round so far good
    definition: str


METRICS: dict[str, Metric] = {m.code: m for m in (
    Metric("RE", "Role embodying", "basic", "all",
           "The reply is spoken as the role itself, in the first person; it never describes the role from outside "
           "or reveals that an AI is playing it."),
    Metric("IF", "Instruction following", "basic", "all",
           "The reply keeps to what the system prompt asks for (persona, tone, rules, format)."),
    Metric("Flu", "Fluency", "conversation", "all",
           "The reply is grammatical, natural and easy to read."),
    Metric("Coh", "Coherence", "conversation", "all",
           "The reply follows from what the user just said and stays on its subject."),
    Metric("Cons", "Consistency", "conversation", "all",
           "The reply does not contradict anything the role said earlier in the dialogue."),
    Metric("Div", "Diversity", "conversation", "all",
           "The reply is worded freshly, not a template or a repeat of earlier replies."),
    Metric("HL", "Human likeness", "conversation", "all",
           "The reply reads like a person talking; no 'as an AI' or assistant-style boilerplate."),
    Metric("KA", "Knowledge accuracy", "imitation", "all",
           "What the reply states about the role and its world is correct for the role."),
    Metric("KH", "Knowledge hallucination", "imitation", "all",
           "Good when the reply invents nothing and claims no knowledge the role could not have."),
    Metric("KE", "Knowledge exposure", "imitation", "any",
           "The reply brings in knowledge specific to the role (judged leniently: a dialogue needs it somewhere, "
           "not in every round)."),
    Metric("Emp", "Empathy", "imitation", "all",
           "The reply notices the user's feelings and responds to them fittingly."),
    Metric("PT", "Personality trait", "imitation", "all",
           "The reply shows the role's personality and its way of speaking."),
    Metric("Inte", "Interactivity", "imitation", "any",
           "The reply drives the conversation: asks back, proposes, invites the user in (judged leniently)."),
    Metric("GCD", "Game completion degree", "imitation", "all",
           "The reply moves the game scene forward: rules, choices, consequences, progress."),
)}

# Which metrics a dialogue is judged on, by the seed's role type (Table 2).
ALLOCATION: dict[str, tuple[str, ...]] = {
    "fictional_character": ("RE", "Flu", "Coh", "Cons", "Div", "HL", "KA", "KH", "KE", "PT"),
    "historical_figure": ("IF", "Flu", "Coh", "Cons", "Div", "HL", "KA", "PT"),
    "professional_occupation": ("IF", "Flu", "Coh", "Cons", "Div", "HL", "KA", "KH"),
    "emotional_companionship": ("IF", "Flu", "Coh", "Cons", "Div", "HL", "Emp", "PT", "Inte"),
    "utility_assistant": ("IF", "Flu", "Coh", "Cons", "Div", "HL", "KA", "KH"),
    "game_npc": ("GCD",),
}


def allocated(role_type: str, only: list[str] | None = None) -> tuple[str, ...]:
    """The metrics of a role type, narrowed to a seed's own list when it gives one (in Table 2's order)."""
    metrics = ALLOCATION[role_type]
    return metrics if not only else tuple(m for m in metrics if m in only)

# The same metrics for Chinese prompts: name and definition.
METRICS_ZH: dict[str, tuple[str, str]] = {
    "RE": ("角色代入", "回复是以角色本人的口吻、第一人称说的；不从旁描述角色，也不暴露是 AI 在扮演。"),
    "IF": ("指令遵循", "回复遵守系统提示的要求（人设、语气、规则、格式）。"),
    "Flu": ("流畅度", "回复通顺自然、合乎语法、容易读懂。"),
    "Coh": ("连贯性", "回复紧接用户刚说的话，不跑题。"),
    "Cons": ("一致性", "回复不与角色前面说过的话矛盾。"),
    "Div": ("多样性", "回复措辞新鲜，不套模板，不重复之前的回复。"),
    "HL": ("拟人度", "回复像真人说话，没有\"作为 AI\"之类的助手腔。"),
    "KA": ("知识准确性", "回复中关于角色及其世界的说法是正确的。"),
    "KH": ("知识幻觉", "回复不编造内容，也不声称知道角色不可能知道的事，即为好。"),
    "KE": ("知识展现", "回复带出了角色特有的知识（宽松判断：整段对话中出现过即可，不必每轮都有）。"),
    "Emp": ("共情", "回复注意到用户的情绪并恰当回应。"),
    "PT": ("性格特征", "回复体现出角色的性格和说话方式。"),
    "Inte": ("互动性", "回复主动推进对话：反问、提议、邀请用户参与（宽松判断）。"),
    "GCD": ("游戏推进度", "回复推动游戏情节前进：规则、选项、后果、进展。"),
}


def metric_text(code: str, language: str) -> tuple[str, str]:
    """A metric's name and definition in the prompt's language."""
    if language == "zh":
        return METRICS_ZH[code]
    return METRICS[code].name, METRICS[code].definition
