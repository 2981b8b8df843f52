"""FURINA-Builder: director-driven group simulation, DWRS, judge selection, post-processing."""
