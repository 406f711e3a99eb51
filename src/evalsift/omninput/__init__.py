"""OmniInput: evaluate a model over its own input space, not a test set (Liu et al., "OmniInput").

Sample the model's whole input space by output value (parallel tempering with multiple-histogram
reweighting, or Wang-Landau), estimate the output distribution rho(z) -- how many inputs give each
output --, have a judge label a few representative inputs per output bin, r(z), and turn both into
precision and recall over the input space (Eq. 3-4), PR curves and AUPR.

>>> import numpy as np
>>> from evalsift.omninput import FunctionModel, InputSpace, make_sampler, omni_curve
>>> space = InputSpace(5, 4)                                          # 4^5 = 1024 inputs
>>> model = FunctionModel(lambda x: x.sum(axis=1), output="logit")    # z = the sum of the digits
>>> exact = make_sampler("exact", bin_width=1.0).run(model, space, quiet=True)
>>> int(np.exp(exact.ln_rho[-1]).round())                             # one input sums to 15
1
>>> pt = make_sampler("pt", steps=600, bin_width=1.0, seed=0).run(model, space, quiet=True)
>>> bool(abs(pt.ln_rho[-1] - 0.0) < 0.5)                              # and parallel tempering finds that
True
>>> reps = pt.representatives(5)
>>> curve = omni_curve(pt, reps.z, (reps.x.sum(axis=1) >= 12).astype(float), n_boot=50)
>>> round(curve["aupr"], 2) > 0.9                                     # the sum predicts "sum >= 12" well
True

See ``docs/omninput.md`` for the method, the formulas and where our choices differ from the paper.
"""

from .curves import (aupr, aupr_log, aupr_log_ratios, auroc, common_recall_range, cross_model_normalisation,
                     label_rates, omni_curve, output_range, pr_curve, precision_from_roc, range_curve, rescaled_axis)
from .judge import DigitsProxy, Labeler, ToyRule, labeler, labelers, make_labeler, to_pool
from .models import FunctionModel, OmniModel, SklearnModel, TorchModel, as_model
from .samplers import (ExactEnumeration, Interrupted, MetropolisSampler, ParallelTempering, Sampler, UniformSampler,
                       WangLandau, clone_sampler, enumerate_outputs, make_sampler, sampler, samplers)
from .samples import Candidates, OmniSamples, Representatives, sample_id
from .space import InputSpace
from .zoo import load_model, omni_model, omni_models

__all__ = [
    "Candidates", "DigitsProxy", "ExactEnumeration", "FunctionModel", "InputSpace", "Interrupted", "Labeler",
    "MetropolisSampler", "OmniModel", "OmniSamples", "ParallelTempering", "Representatives", "Sampler",
    "SklearnModel", "ToyRule", "TorchModel", "UniformSampler", "WangLandau", "as_model", "aupr", "aupr_log",
    "aupr_log_ratios", "auroc", "clone_sampler", "common_recall_range", "cross_model_normalisation", "enumerate_outputs", "label_rates", "labeler", "labelers",
    "load_model", "make_labeler", "make_sampler", "omni_curve", "omni_model", "omni_models", "output_range", "pr_curve",
    "precision_from_roc", "range_curve", "rescaled_axis", "sample_id", "sampler", "samplers", "to_pool",
]
