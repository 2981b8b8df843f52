"""A judged benchmark's pieces (in-character replies graded against a rubric), as the kit gives them."""
