"""Statistics every benchmark mode shares: bootstrap intervals, correlation, spread of scores (scipy)."""

from rpbench.tasks.stats.agreement import krippendorff_alpha
from rpbench.tasks.stats.intervals import (
    bootstrap_ci,
    cluster_bootstrap_ci,
    macro_mean,
    mean_statistic,
    stratified_bootstrap_ci,
)
from rpbench.tasks.stats.ranking import pearson, separability_index, spearman

__all__ = ["bootstrap_ci", "cluster_bootstrap_ci", "krippendorff_alpha", "macro_mean", "mean_statistic", "pearson",
           "separability_index", "spearman", "stratified_bootstrap_ci"]
