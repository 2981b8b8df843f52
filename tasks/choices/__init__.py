"""What every multiple-choice benchmark shares: reading the option letters a reply chooses (a named policy, or a
pattern a release states), scoring the letters against the gold ones, and the accuracy metric with its
interval. A mode with options uses these instead of writing its own (RoleInteract reads its replies here)."""
