"""What stands before a flow runs, without Prefect: the registry of benchmark modes, the typed settings every
command and flow is made from, the systems a run ranks (models asked, or answer files), the input check run once
per run, and the command-line bridge (options, checks, signals).
"""
