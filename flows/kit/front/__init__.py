"""What stands before a flow runs, without Prefect: the registry of benchmark modes, the typed settings every
command and flow is made from, and the command-line bridge (options, checks, signals).
"""
