"""RoleInteract's input checks, run by the command before any flow starts (and by the flow itself).

Nothing here imports Prefect or the gateway, so a bad data file or an unknown model is one line at once."""

from __future__ import annotations

from rpbench.flows.kit.front.systems import System, evaluation_systems
from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.prompts.releases import require
from rpbench.tasks.modes.roleinteract.loader import load_files
from rpbench.tasks.modes.roleinteract.release import RELEASE
from rpbench.tasks.modes.roleinteract.selection import select


def check_run(s: RoleInteractSettings) -> list[System]:
    """The systems (models resolved to roles, answer files read and their ids checked against the items of
    all the data: a file may answer more than --limit or --column keep): every input error before any call."""
    if s.models or s.scoring == "released":  # SocialBench's words and its letter reading come from its files
        require([RELEASE])
    select(s.data, s.columns, s.languages, s.limit, s.drop_unanswerable)
    # Every item of the data, not only those selected: read again only when there are answers to check.
    every = {i.item_id: i for i in load_files(s.data, s.drop_unanswerable)[0]} if s.answers else None
    return evaluation_systems(s, "roleinteract-player", every)
