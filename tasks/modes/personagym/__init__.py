"""PersonaGym (vsamuel2003/PersonaGym): personas answering their questions, graded by two evaluators against
a rubric per task."""
