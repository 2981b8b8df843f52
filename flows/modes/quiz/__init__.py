"""A character quiz: the guide's worked example of a benchmark (docs/write-a-benchmark.md shows it whole)."""
