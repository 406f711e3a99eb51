"""Plots and reports."""

from .plots import (
    analyses_figures_plot,
    analyses_plot,
    calibration_plot,
    subset_plot,
    success_plot,
)

__all__ = ["analyses_figures_plot", "analyses_plot", "calibration_plot", "subset_plot", "success_plot"]
