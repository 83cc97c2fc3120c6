"""Where things live under BUILD_DIR and a run's folder.

Build flavour (FLAVOR): "bench" is the measured kernel; "check" adds the
debug fragment (lockdep, atomic-sleep checks, DEBUG_VM) for the safety
boots; "hw" is the bench kernel for real x86-64 machines (a LAVA lab's
bare-metal devices): x86_64_defconfig rather than tinyconfig under the
same fragment, and lava/x86-hw.config. Each flavour has its own configs,
object folders and installed kernels, so building one never invalidates
the other."""
import os
from dataclasses import dataclass

from plan import knobs


@dataclass(frozen=True)
class Flavor:
    base: str                   # the make target the fragments are merged onto
    fragments: tuple            # after CONFIG_FRAGMENT, under the checkout
    kernels: str                # BUILD_DIR/<kernels>/<variant>
    obj: str                    # <tree>/<obj>


FLAVORS = {
    "bench": Flavor("tinyconfig", (), "kernels", "obj"),
    "check": Flavor("tinyconfig", ("bench/config/check.config",), "kernels-check", "obj-check"),
    "hw": Flavor("x86_64_defconfig", ("lava/x86-hw.config",), "kernels-hw", "obj-hw"),
}


@dataclass(frozen=True)
class Build:
    root: str                   # BUILD_DIR
    flavor: str
    fragment: str               # CONFIG_FRAGMENT

    @property
    def trees(self):
        return os.path.join(self.root, "trees")

    @property
    def steps(self):
        return os.path.join(self.root, "steps")

    @property
    def kernels(self):
        return os.path.join(self.root, FLAVORS[self.flavor].kernels)

    @property
    def obj_subdir(self):
        return FLAVORS[self.flavor].obj

    @property
    def base_config(self):
        """The make target kconfig.sh merges the fragments onto."""
        return FLAVORS[self.flavor].base

    @property
    def fragments(self):
        """The flavour's config fragments, each before its per-version
        ones (NAME-from-V.config)."""
        return [self.fragment] + [os.path.join(knobs.ROOT, f)
                                  for f in FLAVORS[self.flavor].fragments]

    @property
    def steps_record(self):
        """The kbuild steps of the last full build, per config (build.sh)."""
        return os.path.join(self.root, "kbuild-steps." + self.flavor)

    @property
    def lock(self):
        return os.path.join(self.root, ".build.lock")

    def source(self, source, version):
        """A variant source's unpacked or exported tree."""
        if source.startswith("git:"):
            return os.path.join(self.root, "git", source[len("git:"):])
        return os.path.join(self.root, "linux-source-" + version)

    def config(self, source, version):
        """The config folder of a source (kconfig.sh)."""
        name = ("git-" + source[len("git:"):][:12] if source.startswith("git:")
                else "linux-source-" + version)
        return os.path.join(self.root, "config", self.flavor, name)

    def tree(self, variant):
        return os.path.join(self.trees, variant)

    def obj(self, variant):
        return os.path.join(self.tree(variant), self.obj_subdir)

    def kernel(self, variant):
        return os.path.join(self.kernels, variant)

    def package(self, version):
        """kernel-source.sh's record of a packaged source."""
        return os.path.join(self.root, "debian", "linux-source-" + version, "package.json")


@dataclass(frozen=True)
class Run:
    dir: str

    @property
    def cells(self):
        return os.path.join(self.dir, "cells")

    @property
    def meta(self):
        return os.path.join(self.dir, "meta.json")

    @property
    def lock(self):
        return os.path.join(self.dir, ".lock")

    def kernel(self, variant):
        return os.path.join(self.dir, "kernels", variant)

    def boot(self, boot):
        return os.path.join(self.cells, boot.path)

    def staging(self, boot):
        """A boot in progress: renamed to boot() when complete."""
        return os.path.join(self.cells, boot.cell.variant, boot.cell.workload, boot.kind,
                            ".r%d.tmp" % boot.repeat)
