"""The run's versions record (plan.model.Versions): the Debian package, and
its version, of each host file that goes into a boot: every file the guest
image is made of (guest/initramfs.sh files: busybox, cyclictest, stress-ng
and the libraries they load, the compiler, the C library and libgcc of the
static drivers), of the linker and cpio; and libelf (objtool rewrites the
kernel's objects with it) and the system's QEMU (kvm, tcg-mt boots).
The kernel source's package is in each kernel's build.json, the icount
QEMU's in meta.json's "qemu" line."""
import os
import subprocess

from plan import knobs
from plan.model import Versions

from .children import output
from .say import Refused

INITRAMFS = os.path.join(knobs.ROOT, "guest/initramfs.sh")
# what builds the kernels and the image, beside what goes into it
BUILD_TOOLS = ("gcc", "ld", "cpio")
# packages that own no file in the list but decide a boot all the same
ALSO = ("libelf1", "qemu-system-x86")


def _candidates(path):
    """The names dpkg may have recorded path under: resolved first (gcc is a
    symlink into gcc-12), and with merged /usr without or with /usr
    (dpkg has /bin/busybox, which is /usr/bin/busybox on disk)."""
    out = []
    for p in (os.path.realpath(path), path):
        bare = p.removeprefix("/usr")
        out += [p, bare, "/usr" + bare]
    return list(dict.fromkeys(out))


def _owners(paths):
    """{path: package} of the paths dpkg knows, in one dpkg-query (one
    costs half a second)."""
    if not paths:
        return {}
    proc = subprocess.run(["dpkg-query", "-S", *paths], capture_output=True, text=True)
    owners = {}
    for line in proc.stdout.splitlines():
        package, sep, path = line.partition(": ")
        if sep and not package.startswith("diversion by"):
            owners[path] = package.split(",")[0].split(":")[0].strip()
    return owners


def versions():
    """The Versions of this host."""
    files = output(["bash", INITRAMFS, "files", *BUILD_TOOLS]).split()
    candidates = {f: _candidates(f) for f in files}
    owners = _owners(sorted({c for cs in candidates.values() for c in cs}))
    packages = set()
    for f, cs in candidates.items():
        owner = next((owners[c] for c in cs if c in owners), None)
        if owner is None:
            raise Refused("no Debian package owns %s, which goes into every boot: mmlat "
                          "records the version of each (run make deps)" % f)
        packages.add(owner)
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n",
                           *sorted(packages), *ALSO], capture_output=True, text=True)
    found = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    missing = packages - set(found)
    if missing:
        raise Refused("dpkg-query knows no version of %s" % ", ".join(sorted(missing)))
    return Versions(packages=dict(sorted(found.items())))
