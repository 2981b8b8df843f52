"""How a flow runs its stages: stage tasks and their cache keys, a run's accounting, outcome and manifest,
progress lines, the shared report stage, plans (``--plan``), what the Prefect UI is shown, and the temporary
Prefect server a command starts.
"""
