"""Device dictionaries, rendered as a LAVA server renders them for a job:
the device's jinja2 dictionary (lava/devices/NAME.jinja2) extends a device
type's template (Debian's lava-server ships them), rendered with the job's
context, in lava-server's sandboxed environment. lava-run takes the
result as its --device file."""
import os
from pathlib import Path

import yaml
from jinja2 import FileSystemLoader, TemplateError
from jinja2.sandbox import SandboxedEnvironment
from plan import knobs

DEVICES_DIR = Path(knobs.ROOT) / "lava/devices"
# Where lava-server keeps device-type templates: the admin's first, then
# the packaged ones (lava_server/settings: DEVICE_TYPES_PATHS).
DEVICE_TYPE_DIRS = (
    "/etc/lava-server/dispatcher-config/device-types",
    "/usr/share/lava-server/device-types",
)


class DeviceError(ValueError):
    """A device dictionary that does not render; the message says why."""


def render(device, context=None, devices_dir=DEVICES_DIR, device_type_dirs=DEVICE_TYPE_DIRS):
    """The YAML device configuration of DEVICE (the name of a dictionary in
    DEVICES_DIR) for a job whose context is CONTEXT."""
    dirs = [str(devices_dir)] + [d for d in device_type_dirs if os.path.isdir(d)]
    if len(dirs) == 1:
        raise DeviceError("no LAVA device-type templates in %s: install Debian's lava-server package"
                          % " or ".join(device_type_dirs))
    env = SandboxedEnvironment(loader=FileSystemLoader(dirs), autoescape=False, trim_blocks=True)
    try:
        text = env.get_template("%s.jinja2" % device).render(**(context or {}))
    except TemplateError as exc:
        raise DeviceError("device %s does not render: %s" % (device, exc)) from None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DeviceError("device %s renders invalid YAML: %s" % (device, exc)) from None
    if not isinstance(config, dict) or "actions" not in config:
        raise DeviceError("device %s renders no device configuration (no actions)" % device)
    return text


def write(device, context, path, **kwargs):
    """Render DEVICE for CONTEXT into PATH; returns PATH."""
    text = render(device, context, **kwargs)
    Path(path).write_text(text)
    return path
