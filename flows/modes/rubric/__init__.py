"""In-character replies graded against a rubric: the guide's worked example of a judged benchmark
(docs/write-a-benchmark.md shows it whole)."""
