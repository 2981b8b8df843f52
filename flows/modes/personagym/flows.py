"""PersonaGym's stages and flow: the kit's judged stages given the release's items, words and reading."""

from __future__ import annotations

from rpbench.flows.kit.running.judged import Make, Prepare, judged_flow
from rpbench.flows.modes.personagym.mode import PersonaGymSettings
from rpbench.tasks.modes.personagym import grading as pg
from rpbench.tasks.modes.personagym import questions as pq

personagym = judged_flow(
    "personagym", PersonaGymSettings, pg.actor_messages, pg.grading_asks,  # as openai_chat_gen, score_rubrics ask
    prepare=Prepare("examples", pg.EXAMPLER, pg.chunks, pg.examples_request, pg.example_row, pg.EXAMPLES),
    # select_settings and gen_questions: a short list is asked again as the next sample, not as itself
    make=Make("questions", pq.ASKER, pq.write_all, heal=False))
