"""mmlat's orchestrator: runs a plan (bench/plan). It checks every knob at
its entry, builds the plan, takes the run's locks, runs the leaf commands
that make configs, trees, kernels and guest images, hands each boot to an
executor (local: bench/qemu.sh), and writes the run's records.

    PYTHONPATH=bench /usr/bin/python3 -m orchestrator run
"""
