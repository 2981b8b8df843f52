"""Metric specs, model scores with intervals, leaderboards and reports, for any benchmark mode."""
