"""One model (or several) across every benchmark mode: `rpbench suite run` and its profile report."""
