"""The files generated from the registries:

  knobs_mk()          build/knobs.mk, which the Makefile includes: every
                      knob's default (NAME ?= VALUE), exported, and the
                      knob lines of `make help`
  guest_config(DIR)   DIR/knobs.conf and DIR/workloads.conf, installed as
                      /etc/mmlat/ in the guest image: the job keys the
                      runner allows, their defaults and allowed values,
                      the calibration kinds' letters, and each workload's
                      kind, needs and stress-ng recipe
  drivers()           the workload drivers workloads/Makefile builds"""
import os
import re
import textwrap

from . import calib, instruments, knobs, model, workloads

HEADER = "# Generated from bench/plan/ by bench/plan/render.py: do not edit.\n"
HELP_WIDTH = 78
HELP_INDENT = " " * 17


def _make_value(template):
    """A knob's default in make's syntax: other knobs as $(NAME), the root
    as $(CURDIR)."""
    return re.sub(r"\{(\w+)\}", lambda m: "$(CURDIR)" if m.group(1) == "ROOT"
                  else "$(%s)" % m.group(1), template.replace("$", "$$"))


def _echo(text):
    return "\t@echo '%s'" % text.replace("'", "'\"'\"'")


def _help(k, values):
    """NAME=<its value> (what it takes) its help, wrapped."""
    if isinstance(k.allowed, knobs.Choice) and k.allowed.values_of:
        takes = " (one of: $(%s_VALUES))" % k.name
    elif k.allowed in (knobs.ANY, knobs.PATH):
        takes = ""
    else:
        takes = " (%s)" % k.takes(values).replace("$", "$$")
    shown = '"$(%s)"' % k.name if " " in k.default else "$(%s)" % k.name
    lines = textwrap.wrap("%s=%s%s %s" % (k.name, shown, takes, k.help), HELP_WIDTH - 2,
                          subsequent_indent=HELP_INDENT[2:], break_on_hyphens=False)
    return "\n".join(_echo("  " + line) for line in lines)


def knobs_mk():
    values = knobs.read({})
    out = [HEADER]
    for k in knobs.KNOBS:
        if not k.make or k.scope == knobs.GUEST:
            continue
        if "{NOW}" in k.default:
            out.append("ifeq ($(origin %s),undefined)\n%s := %s\nendif\n" % (
                k.name, k.name, k.default.replace("{NOW}", "$(shell date +%Y%m%d-%H%M%S)")))
        else:
            out.append("%s ?= %s\n" % (k.name, _make_value(k.default)))
        out.append("export %s\n" % k.name)
    for k in knobs.KNOBS:
        if isinstance(k.allowed, knobs.Choice) and k.allowed.values_of:
            out.append("%s_VALUES := %s\n" % (k.name, " ".join(k.allowed.words(values))))
    # the instruments that record no windows, so read back no CALIB
    out.append("WINDOWLESS_TRACES := %s\n" % " ".join(i.name for i in instruments.INSTRUMENTS
                                                      if not i.windows_boot))
    out.append("\n.PHONY: help-knobs\nhelp-knobs:\n")
    out.append("\n".join(_help(k, values) for k in knobs.KNOBS if k.scope != knobs.GUEST))
    return "".join(out) + "\n"


def _range(allowed):
    if isinstance(allowed, knobs.Integer):
        return "_RANGE=%d %d" % (allowed.lo, allowed.hi)
    return "_VALUES=" + " ".join(allowed.values)


def guest_config(directory):
    os.makedirs(directory, exist_ok=True)
    lines = [HEADER, "JOB_KEYS=%s\n" % " ".join(model.KEYS)]
    keyed = [k for k in knobs.KNOBS if k.job_key]
    lines.append("KNOB_KEYS=%s\n" % " ".join(k.job_key for k in keyed))
    for k in keyed:
        default, allowed = k.guest_takes
        lines.append("%s_DEFAULT=%s\n%s%s\n" % (k.name, default, k.name, _range(allowed)))
    lines.append("WORKLOAD_NAMES=%s\n" % " ".join(workloads.NAMES))
    lines.append("CALIB_KINDS=%s\n" % " ".join(
        "%s:%s" % (letter, kind) for kind, letter in calib.KINDS.items()))
    with open(os.path.join(directory, "knobs.conf"), "w") as f:
        f.write("".join(lines))
    rows = [HEADER, "# NAME KIND NEEDS [STRESS-NG ARGUMENTS, %s: the CPUs]\n" % workloads.NCPU]
    rows += ["%s %s %s%s\n" % (w.name, w.kind, ",".join(w.needs) or "-",
                               " " + w.stress_ng if w.stress_ng else "")
             for w in workloads.WORKLOADS]
    with open(os.path.join(directory, "workloads.conf"), "w") as f:
        f.write("".join(rows))


def drivers():
    return " ".join(workloads.DRIVERS)
