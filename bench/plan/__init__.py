"""mmlat's run as data: the knob and workload registries, the calibration
grammar, and the plan and run records (dataclasses with to/from JSON) that
the orchestrator (bench/orchestrator) writes and the analysis reads."""
