"""CALIB, the calibration request, parsed once on the host: windows of
known length that guest/modules/mmlat_calib injects into a traced boot.

KIND[/KIND...]:US[/US...][xROUNDS], items comma-separated:
"preempt/irq:200/1000x3,ptl:50" is preempt and irq windows of 200 and
1000 us in 3 rounds, then one PTE-lock hold of 50 us. Within a round the
kinds alternate at each length, so that whatever drifts over the boot
reaches every kind and length alike.

The guest gets the windows expanded, one letter per kind and the length,
comma-separated (mmlat.calib=p200,i200,p1000,...): the runner only splits
it, and make calibrate's 135 windows fit the kernel command line (2048
bytes on x86)."""
import re

# Each kind and its letter on the guest's command line.
KINDS = {"preempt": "p", "irq": "i", "spin": "s", "ptl": "t", "ptl_nested": "n"}
GRAMMAR = "KIND[/KIND...]:US[/US...][xROUNDS],... of " + " ".join(KINDS)


class CalibError(ValueError):
    """A calibration request this grammar does not allow."""


def parse(request):
    """[(kind, us)] in injection order: the items in order, each in its
    rounds, each round length by length, each length kind by kind.
    Raises CalibError naming the item."""
    out = []
    for item in request.split(","):
        m = re.fullmatch(r"([a-z_/]+):([0-9/]+)(?:x([0-9]+))?", item)
        if not m:
            raise CalibError("bad calibration item '%s': want KIND[/KIND...]:US[/US...][xROUNDS]"
                             % item)
        kinds, lengths = m.group(1).split("/"), m.group(2).split("/")
        rounds = int(m.group(3) or 1)
        if [k for k in kinds if k not in KINDS] or "" in lengths or not rounds \
                or [u for u in lengths if not int(u)]:
            raise CalibError("bad calibration item '%s': kinds are %s, lengths and rounds "
                             "positive integers" % (item, ", ".join(KINDS)))
        for _ in range(rounds):
            out += [(k, int(us)) for us in lengths for k in kinds]
    return out


def guest_form(windows):
    """The windows as the guest runner takes them: p200,i200,..."""
    return ",".join("%s%d" % (KINDS[kind], us) for kind, us in windows)
