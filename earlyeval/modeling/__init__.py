"""The outcome model, its fast predictor and model directory, the halting policy and the metrics."""
