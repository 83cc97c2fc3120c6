"""mmlat on LAVA: job definitions for mmlat's boots (job), device
dictionaries rendered from lava-server's device types (device), the
results block of a guest's console (console), LAVA's job logs (joblog),
a finished job into a boot's folder (collect), and the executors that
submit, poll, cancel and collect jobs (executor). README.md in lava/."""
