"""CoSER's given-circumstance acting as a benchmark mode: settings, checks, the flow and its command."""
