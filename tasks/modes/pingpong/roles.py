"""The model roles PingPong calls. A models file that leaves one out binds it to [default]."""

from __future__ import annotations

ROLES: dict[str, str] = {
    "player": "pingpong: the settings a model under test (--player given as a model string) plays its card with",
    "interrogator": "pingpong: emulates the user; sees the card's summary and the situation, writes each message",
    "pingpong-judge": "pingpong: the settings a judge (--judge given as a model string) scores every turn with",
    "tester": "pingpong v1: one model that writes the user's messages and grades each reply on 1-10",
}
