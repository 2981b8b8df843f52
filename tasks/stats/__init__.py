"""Statistics every benchmark mode shares: bootstrap intervals, correlation, spread of scores (scipy)."""

from rpbench.tasks.stats.intervals import bootstrap_ci, cluster_bootstrap_ci, mean_statistic
from rpbench.tasks.stats.ranking import pearson, separability_index

__all__ = ["bootstrap_ci", "cluster_bootstrap_ci", "mean_statistic", "pearson", "separability_index"]
