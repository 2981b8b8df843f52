"""CharacterBench as a benchmark mode: settings, checks, the flow and its command."""
