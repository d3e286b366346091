"""How a model and its thresholds are chosen: the outcome estimator, the metrics, the threshold rules and the
warm start.  Offline only: the runtime (``earlyeval.model``, ``earlyeval.live``) never imports it."""

from earlyeval.core.extras import require
from earlyeval.model.threads import configure

require("train", "earlyeval.fitting (choosing a model and its thresholds)", ("sklearn", "scipy"))
configure()  # OpenMP's wait policy, before LightGBM loads it (earlyeval.model.threads)
