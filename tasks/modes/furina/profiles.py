"""Profile fields an LLM writes (pool fragments and synthesized characters), each with one length cap.

The caps keep a small local model's constrained output finite; they are
generous for real models. Both the pool's character sketches and synthesis'
profile drafts are built from these types, so a field means the same in both.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Name = Annotated[str, Field(min_length=1, max_length=80)]
Nickname = Annotated[str, Field(max_length=120)]
Gender = Annotated[str, Field(max_length=40)]
Age = Annotated[str, Field(max_length=60)]
Appearance = Annotated[str, Field(max_length=400)]
Persona = Annotated[str, Field(max_length=600)]
Beliefs = Annotated[str, Field(max_length=400)]
LongText = Annotated[str, Field(max_length=600)]  # memories, experiences, relationships, backgrounds
Hobbies = Annotated[str, Field(max_length=300)]
SpeechPattern = Annotated[str, Field(max_length=400)]
Motivation = Annotated[str, Field(min_length=1, max_length=600, description="First person: what I want right now.")]

# The keys of a pool character's profile, in the order they are shown; private unless a user says
# otherwise, as in FURINA's case study: relationships, hobbies, speech pattern, private background.
PROFILE_KEYS = ("nickname", "gender", "age", "appearance", "persona", "relationships", "hobbies", "speech_pattern",
                "background_public", "background_private")
PRIVATE_BY_DEFAULT = frozenset({"relationships", "hobbies", "speech_pattern", "background_private"})
