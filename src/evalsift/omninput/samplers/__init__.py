"""Samplers of a model's input space by output value (registry ``samplers``, decorator ``@sampler``).

Every sampler runs a batch of walkers (replicas x independent chains) as one (W, D) array, so one
model call serves every walker at each step; proposals, acceptances and swaps are vectorised.

- ``uniform``: independent uniform draws (the baseline: how a test set drawn at random sees the space).
- ``metropolis``: one inverse temperature ``beta`` (target ``exp(beta z)``; beta 0 is a random walk over
  the uniform distribution), single-histogram reweighting to ln rho near its typical outputs.
- ``pt`` (parallel tempering): replicas at a ladder of betas from 0 to ``beta_max`` (negative betas
  for the low side of z), neighbours exchanging states (replica exchange); the ladder is tuned during
  burn-in so that neighbour swaps are accepted equally often, ``beta_max='auto'`` is found by a pilot
  that doubles beta until the mean output stops moving; every recorded output enters the
  multiple-histogram (MBAR) estimate of ln rho, normalised by the replica at beta 0.
- ``wang_landau``: flat-histogram sampling with a running ln g(z) per chain, the modification
  factor halved when the histogram is flat, then the 1/t schedule (Belardinelli & Pereyra 2007) so it
  does not saturate; the range of z comes from a pilot.
- ``exact``: enumeration of a small space (the ground truth of the toy validation).

Proposals (``proposal=``): ``mixed`` (the default: each walker makes a ``single`` or a ``block`` move,
by a fair coin; a mixture of symmetric moves is symmetric), ``single`` (one position to another allowed
value), ``block`` (``block`` consecutive positions, or a ``block`` x ``block`` patch of an image,
redrawn: on the toy it reaches the rare lowest-NLL sequences that single moves cannot, because changing
two digits at once can keep their sum), and for torch models with ``forward_onehot``: ``gradient``
(Gibbs-with-gradients, Grathwohl et al. 2021: a single-position move drawn from the first-order change
of the target) and ``langevin`` (the discrete Langevin proposal, Zhang, Liu & Liu 2022: every position
redrawn at once from its own gradient-informed softmax, step size ``step_size``), both with the
Metropolis-Hastings correction for the reverse move.

Modules: :mod:`.base` (the registry and the :class:`Sampler` base), :mod:`.proposals`,
:mod:`.tempering` (``metropolis``, ``pt``), :mod:`.wang_landau`, :mod:`.direct` (``uniform``,
``exact``), :mod:`.reservoirs` (candidate inputs), :mod:`.estimates` (ln rho from recorded outputs),
:mod:`.checkpoints` (resumable state). ``from evalsift.omninput.samplers import X`` works for every
public name of them.

Every sampler is seeded (``seed``), shows a progress bar, and with ``run(..., checkpoint=DIR)`` saves
its whole state (walkers, ladder, histograms, recorded outputs, candidates, the random generator)
every ``checkpoint_every`` seconds and on Ctrl-C; running it again with the same settings resumes
where it stopped and gives the same result as an uninterrupted run (a larger ``steps`` extends a
finished run). Diagnostics: replica round trips and swap rates, histogram flatness, and the
agreement of the independent chains' estimates.
"""


from __future__ import annotations

# the registry and the base first; importing each sampler's module registers it
from .base import Interrupted, Sampler, clone_sampler, make_sampler, sampler, samplers
from .checkpoints import CHECKPOINT
from .direct import ExactEnumeration, UniformSampler, enumerate_outputs
from .estimates import chain_agreement, nice_width, normalised
from .proposals import GRADIENT_PROPOSALS, PROPOSALS, propose_block, propose_single
from .reservoirs import Reservoirs
from .tempering import DIRECTIONS, MetropolisSampler, ParallelTempering
from .wang_landau import WangLandau

__all__ = ["CHECKPOINT", "DIRECTIONS", "ExactEnumeration", "GRADIENT_PROPOSALS", "Interrupted", "MetropolisSampler", "PROPOSALS",
           "ParallelTempering", "Reservoirs", "Sampler", "UniformSampler", "WangLandau", "chain_agreement",
           "clone_sampler", "enumerate_outputs", "make_sampler", "nice_width", "normalised", "propose_block",
           "propose_single", "sampler", "samplers"]
