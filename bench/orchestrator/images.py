"""A run's guest images and kernels, private to the run: another run, with
other modules or kernels, must not swap them under booting guests. The
base initramfs (guest/initramfs.sh base: tools, drivers, the runner and
its configuration from the registries) is the same for every variant;
a variant whose boots load the guest modules gets them appended, built
against its kernel (the kernel unpacks concatenated archives in order)."""
import hashlib
import os
import shutil
import subprocess

from plan import knobs, render
from plan.model import Image

from .children import guarded, output

INITRAMFS = os.path.join(knobs.ROOT, "guest/initramfs.sh")
PLUGIN_BUILD = os.path.join(knobs.ROOT, "plugin/build.sh")
CLASSES = os.path.join(knobs.ROOT, "guest/classes.txt")
# guest/runner.sh writes tracing_on just before cyclictest's measurement and
# just after it, on every boot: the plugin records between the two calls.
PLUGIN_MARK = "rb_simple_write"


def qemu_option(path):
    """A path inside one of QEMU's option lists, which split at commas and
    read ",," as one."""
    return path.replace(",", ",,")


class Images:
    def __init__(self, build, run_id):
        self.dir = os.path.join(build.root, "guest", "run-%s.%d" % (run_id, os.getpid()))
        self.base = os.path.join(self.dir, "base.cpio")

    def kernel(self, variant):
        return os.path.join(self.dir, "kernel-" + variant, "bzImage")

    def initrd(self, variant):
        return os.path.join(self.dir, "initrd-%s.cpio" % variant)

    def make_base(self, build, variants):
        """The base image and each variant's kernel: what ACCEL=auto's probe
        boots, before TRACE (resolved with the accelerator) says whether
        the initramfs gets the modules."""
        os.makedirs(self.dir, exist_ok=True)
        etc = os.path.join(self.dir, "etc")
        render.guest_config(etc)
        guarded(["bash", INITRAMFS, "base", self.base, etc])
        for v in variants:
            os.makedirs(os.path.dirname(self.kernel(v)), exist_ok=True)
            shutil.copyfile(os.path.join(build.kernel(v), "bzImage"), self.kernel(v))

    def make_initrds(self, build, variants, modules):
        """Per variant its initramfs: the base image, with the guest
        modules when modules."""
        for v in variants:
            if modules:
                mods = os.path.join(self.dir, "module-%s.cpio" % v)
                guarded(["bash", INITRAMFS, "module", build.obj(v), mods])
                with open(self.initrd(v), "wb") as out:
                    for part in (self.base, mods):
                        with open(part, "rb") as f:
                            shutil.copyfileobj(f, out)
            else:
                shutil.copyfile(self.base, self.initrd(v))

    def plugin(self):
        return os.path.join(self.dir, "mmlat_plugin.so")

    def make_plugin(self, build, variants):
        """The QEMU plugin (plugin/build.sh, against its QEMU's own header)
        and beside each variant's kernel its System.map and the struct
        offsets of its tree (consts.txt), which the plugin reads."""
        built = output(["bash", PLUGIN_BUILD, "plugin"]).strip().splitlines()[-1]
        shutil.copyfile(built, self.plugin())
        for v in variants:
            kdir = os.path.dirname(self.kernel(v))
            shutil.copyfile(os.path.join(build.kernel(v), "System.map"),
                            os.path.join(kdir, "System.map"))
            guarded(["bash", PLUGIN_BUILD, "offsets", build.obj(v), kdir],
                    stdout=subprocess.DEVNULL)

    def plugin_argument(self, variant, icount_shift, log_us=0):
        """QEMU's -plugin argument for a boot of variant, but out= (the
        executor's): plugin/README.md. log_us: its event log's threshold,
        0 none."""
        kdir = os.path.dirname(self.kernel(variant))
        return ",".join([qemu_option(self.plugin()),
                         "map=" + qemu_option(os.path.join(kdir, "System.map")),
                         "consts=" + qemu_option(os.path.join(kdir, "consts.txt")),
                         "classes=" + qemu_option(CLASSES),
                         "shift=%s" % icount_shift, "mark=" + PLUGIN_MARK]
                        + (["log_us=%d" % log_us] if log_us else []))

    def base_sha256(self):
        return sha256(self.base)

    def booted(self, variants):
        """{variant: Image} of what its boots boot."""
        return {v: Image(bzimage_sha256=sha256(self.kernel(v)),
                         initrd_sha256=sha256(self.initrd(v))) for v in variants}

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def sha256(path):
    """The file's sha256, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
