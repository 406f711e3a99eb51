"""Plots and reports."""

from .plots import calibration_plot, subset_plot, success_plot

__all__ = ["calibration_plot", "subset_plot", "success_plot"]
