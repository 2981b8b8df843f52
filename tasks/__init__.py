"""rpbench tasks: pure, typed functions and the thin Prefect tasks that wrap them."""
