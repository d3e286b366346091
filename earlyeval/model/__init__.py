"""What a halting process loads: the model directory, its predictors, the halting rule and the thresholds it
holds.  How a model and its thresholds are chosen is ``earlyeval.fitting``, a layer above the runtime."""
