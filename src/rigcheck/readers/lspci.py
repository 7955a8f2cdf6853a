"""`lspci` output: the NVIDIA GPUs on the PCI bus and the kernel driver bound to each, as operators paste it to
show that the card is there (`lspci | grep -i nvidia`, `lspci -k`, `lspci -nnk`, `lspci -nn -d 10de:`, `lspci -v`,
`lspci -vv`, `lspci -n`).

The format (pciutils, lspci(8)): one line per PCI function, "[domain:]bus:dev.fn Class: Vendor Device (rev xx)";
-nn adds the class id ("[0302]") and vendor:device ids ("[10de:2330]"), -n prints the numbers alone
("00:04.0 0302: 10de:20b0 (rev a1)"). -k adds "Kernel driver in use: X" (the driver bound now; no such line: none
is) and "Kernel modules: a, b" (the modules that could drive it) under the function's line; -v turns -k on and
adds detail lines ("Flags:", "Memory at", "Capabilities:" ...). Detail lines are indented by a tab or spaces, or
not at all where a forum or a chat ate the indent. -vmm prints records of "Tag:<tab>value" lines instead ("Slot:",
older lspci "Device:", first; "Class:", "Vendor:", "Device:", with -k "Driver:" and one "Module:" per module;
-vmm does not turn -k on, so a record lacks "Driver:" meaning none is bound only where the listing shows drivers).

An NVIDIA function is one whose vendor is "NVIDIA Corporation" (older pci.ids: "nVidia Corporation") or 10de;
a GPU is one of PCI base class 03h, display controller (PCI Code and ID Assignment Specification: 0300 VGA
compatible, 0302 3D controller, 0380 other), as rigcheck.probe.sysfs counts them: the card's audio (0403), USB
(0c03) and UCSI (0c80) functions and NVSwitches (0680) are not GPUs.

Whether the driver is known: a function with a "Kernel ..." line or -v detail lines shows it (-v implies -k);
one with other detail lines shows it when the listing shows drivers elsewhere; a bare function line (plain
`lspci`, -nn, -n) does not, and is ``driver_known=False``. What is pasted around the output is skipped: shell
prompts, grep's "--" separators, the "IOMMU Group N" prefix of the usual group-listing script, a function line
wrapped by a mail or a forum (its next line is read as its continuation). A text that ends without a newline may
be cut inside its last line: a driver name there that is not a whole known name, or a function whose kernel
lines may follow the cut, is not known, and a diagnostic says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rigcheck.errors import ParseError
from rigcheck.model.snapshot import Diagnostic, DriverState, Missing, PciGpu, Snapshot, Source

NVIDIA_VENDOR = "10de"  # PCI-SIG vendor id of NVIDIA (rigcheck.probe.sysfs.NVIDIA_VENDOR_ID)
_CLASS_IDS = {"vga compatible controller": 0x0300, "3d controller": 0x0302, "display controller": 0x0380}
# Drivers a GPU is bound to whose names are whole: a cut last line ending in one of them still names it.
_WHOLE_DRIVERS = frozenset({"nvidia", "nouveau", "nova_core", "vfio-pci", "pci-stub", "nvgrace_gpu_vfio_pci"})

_HEADER = re.compile(
    r"^\s*(?:IOMMU [Gg]roup \d+:?\s+)?"
    r"(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<cls>[A-Za-z0-9][^:\[\]\n]{0,80}?)(?:\s\[(?P<clsid>[0-9a-fA-F]{4})\])?:\s*(?P<rest>.*)$"
)
_NUMERIC = re.compile(r"^(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\b")
_IDS = re.compile(r"\[10de:(?P<device>[0-9a-fA-F]{4})\]", re.IGNORECASE)
# -k's lines; -vmm -k prints them as "Driver:" and one "Module:" line per module.
_DRIVER = re.compile(r"^\s*(?:Kernel driver in use|Driver):[ \t]*(?P<driver>\S*)")
_MODULES = re.compile(r"^\s*(?:Kernel modules|Module):(?P<modules>.*)$")
# -vmm: records of "Tag:<tab>value" lines, the first "Slot:" (older lspci: "Device:") with the bus address.
_SLOT = re.compile(r"^\s*(?:Slot|Device):\s+(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s*$")
_TAG = re.compile(r"^\s*(?P<tag>Class|Vendor|Device):(?P<value>.*)$")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
# -v detail lines: lspci turns -k on with -v, so a block holding one shows its driver.
_VERBOSE = re.compile(
    r"^\s*(?:Flags:|Control:|Status:|Capabilities:|Region \d+:|Memory at |I/O ports at |Interrupt:|Latency:"
    r"|Physical Slot:|NUMA node:|Expansion ROM at |IOMMU group:)"
)
_DETAIL = re.compile(r"^(?:[ \t]+\S|[A-Z][A-Za-z0-9 /-]{0,40}:\s)")
# Lines that end a function's block: blank, grep's separator, a code fence, a shell prompt ("$ lspci -k",
# "root@host:~# lspci -nnk").
_CLOSER = re.compile(r"^\s*(?:$|--\s*$|```|[$#%>]\s|\S*[$#%]\s+\S)")
_NAME_NOISE = re.compile(r"\[10de:[0-9a-fA-F]{4}\]|\(rev [0-9a-fA-F]+\)|\(prog-if [^)]*\)\)?", re.IGNORECASE)
_VENDOR_NAME = re.compile(r"^nvidia corporation\s*", re.IGNORECASE)
NO_MODULE_NOTE = "no nvidia module for the running kernel"
# lspci's name for a device its pci.ids lacks: "Device 1db6", the device id itself.
_UNNAMED = re.compile(r"Device ([0-9a-fA-F]{4})")


@dataclass
class PciFunction:
    """One PCI function as lspci lists it."""

    bdf: str  # "0000:01:00.0"
    class_name: str | None  # "3D controller"; None in -n output
    class_id: int | None  # 0x0302; None where neither -nn nor -n printed it and the name is not a GPU's
    nvidia: bool
    device_id: str | None = None  # "0x2330", from -nn or -n
    name: str | None = None  # "GA100 [A100 SXM4 80GB]", as printed (without vendor, ids and revision)
    driver: str | None = None  # "Kernel driver in use"
    modules: list[str] | None = None  # "Kernel modules", None where not printed
    kernel_lines: bool = False  # a "Kernel ..." line was printed for it
    verbose: bool = False  # a -v detail line was printed for it
    details: bool = False  # any detail line was printed for it
    cut: bool = False  # the text ends inside its lines where its driver would be
    raw: str = ""  # its function line (with a wrapped continuation)
    machine: bool = False  # a -vmm record

    @property
    def is_gpu(self) -> bool:
        return self.nvidia and self.class_id is not None and self.class_id >> 8 == 0x03


@dataclass
class LspciRead:
    functions: list[PciFunction] = field(default_factory=list)
    shows_drivers: bool = False  # some function has a "Kernel ..." line: the listing is -k or -v
    cut_message: str | None = None


def _bdf(text: str) -> str:
    parts = text.lower().split(":")
    if len(parts) == 2:
        return f"0000:{text.lower()}"
    return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"


def _function(m: re.Match[str]) -> PciFunction:
    cls, clsid, rest = m.group("cls").strip(), m.group("clsid"), m.group("rest").strip()
    numeric = _NUMERIC.match(rest) if re.fullmatch(r"[0-9a-fA-F]{4}", cls) else None
    if numeric is not None:  # lspci -n: "00:04.0 0302: 10de:20b0 (rev a1)"
        return PciFunction(
            bdf=_bdf(m.group("bdf")),
            class_name=None,
            class_id=int(cls, 16),
            nvidia=numeric.group("vendor").lower() == NVIDIA_VENDOR,
            device_id=f"0x{numeric.group('device').lower()}",
            raw=m.group(0).strip(),
        )
    function = PciFunction(
        bdf=_bdf(m.group("bdf")),
        class_name=cls,
        class_id=int(clsid, 16) if clsid else _CLASS_IDS.get(cls.lower()),
        nvidia=False,
        raw=m.group(0).strip(),
    )
    _read_rest(function, rest)
    return function


def _read_rest(function: PciFunction, rest: str) -> None:
    """Vendor, device id and name from what follows the class (again, when a wrapped line continues it)."""
    ids = _IDS.search(rest)
    function.nvidia = _VENDOR_NAME.match(rest) is not None or ids is not None
    if ids is not None:
        function.device_id = f"0x{ids.group('device').lower()}"
    if function.nvidia:
        name = " ".join(_NAME_NOISE.sub(" ", _VENDOR_NAME.sub("", rest, count=1)).split())
        function.name = name or None
        if function.device_id is None and (unnamed := _UNNAMED.fullmatch(name)) is not None:
            function.device_id = f"0x{unnamed.group(1).lower()}"  # a device pci.ids does not name yet


def _read_tag(function: PciFunction, tag: str, value: str) -> None:
    """A -vmm record's Class, Vendor or Device (names, names with -nn's "[id]", or -n's bare ids)."""
    value = value.strip()
    ident: str | None = None
    name = value
    if _HEX4.fullmatch(value):  # -n: the number alone
        ident, name = value.lower(), ""
    elif value.endswith("]") and value[-6:-5] == "[" and _HEX4.fullmatch(value[-5:-1]):  # -nn: "Name [1d10]"
        ident, name = value[-5:-1].lower(), value[:-6].strip()
    if tag == "Class":
        function.class_name = name or None
        function.class_id = int(ident, 16) if ident else _CLASS_IDS.get(name.lower())
    elif tag == "Vendor":
        function.nvidia = ident == NVIDIA_VENDOR or _VENDOR_NAME.match(value) is not None
    else:
        function.device_id = f"0x{ident}" if ident else None
        function.name = name or None


def read_lspci(text: str) -> LspciRead:
    """Every PCI function the text lists, with its kernel lines; see the module docstring."""
    out = LspciRead()
    current: PciFunction | None = None
    rest_of_current = ""
    lines = text.splitlines()
    last_line_of: PciFunction | None = None  # the function the text's last line belongs to
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if (slot := _SLOT.match(line)) is not None:
            current = PciFunction(bdf=_bdf(slot.group("bdf")), class_name=None, class_id=None, nvidia=False,
                                  raw=line.strip(), machine=True)  # fmt: skip
            out.functions.append(current)
            last_line_of = current if last else None
            continue
        m = _HEADER.match(line) if current is None or not current.machine else None
        if m is not None:
            current = _function(m)
            rest_of_current = m.group("rest")
            out.functions.append(current)
            last_line_of = current if last else None
            continue
        if current is None:
            continue
        if _CLOSER.match(line):
            current = None
            continue
        if (d := _DRIVER.match(line)) is not None:
            current.driver = d.group("driver") or None
            current.kernel_lines = current.details = True
        elif (mods := _MODULES.match(line)) is not None:
            named = [x.strip() for x in mods.group("modules").split(",") if x.strip()]
            current.modules = (current.modules or []) + named
            current.kernel_lines = current.details = True
        elif current.machine:
            if (tag := _TAG.match(line)) is not None:
                _read_tag(current, tag.group("tag"), tag.group("value"))
        elif _DETAIL.match(line):
            current.details = True
            current.verbose = current.verbose or _VERBOSE.match(line) is not None
        elif not current.details:  # a function line wrapped by a mail or a forum: read on
            rest_of_current = f"{rest_of_current} {line.strip()}"
            current.raw = f"{current.raw} {line.strip()}"
            if current.class_name is not None:
                _read_rest(current, rest_of_current.strip())
        if last:
            last_line_of = current
    out.shows_drivers = any(f.kernel_lines or f.verbose for f in out.functions)
    if text and not text.endswith(("\n", "\r")) and last_line_of is not None:
        _mark_cut(out, last_line_of, lines[-1])
    return out


def _mark_cut(out: LspciRead, function: PciFunction, line: str) -> None:
    """The text ends without a newline inside ``function``'s lines: its driver is unknown unless the last line
    is its modules line (printed after the driver's) or a driver line that names a whole known driver."""
    if _MODULES.match(line) is not None:
        return
    if (d := _DRIVER.match(line)) is not None and d.group("driver") in _WHOLE_DRIVERS:
        return
    if not out.shows_drivers and not function.verbose:
        return  # a listing without drivers: nothing more is unknown than before
    function.cut = True
    out.cut_message = (
        f"the input ends inside the lines of {function.bdf} ({line.strip()[:80]!r}): the driver bound to it is "
        "not known (the output may be cut)"
    )


def driver_known(function: PciFunction, read: LspciRead) -> bool:
    if function.cut:
        return False
    return function.kernel_lines or function.verbose or (function.details and read.shows_drivers)


def pci_gpus(read: LspciRead) -> list[PciGpu]:
    """The NVIDIA GPUs, each once (a paste that lists one twice keeps the listing that shows its driver)."""
    found: dict[str, PciGpu] = {}
    for f in read.functions:
        if not f.is_gpu:
            continue
        assert f.class_id is not None
        gpu = PciGpu(
            bdf=f.bdf,
            device_id=f.device_id,
            pci_class=f"0x{f.class_id:04x}00",
            driver=f.driver if driver_known(f, read) else None,
            driver_known=driver_known(f, read),
        )
        kept = found.get(f.bdf)
        if kept is None or (gpu.driver_known and not kept.driver_known):
            found[f.bdf] = gpu
    return sorted(found.values(), key=lambda g: g.bdf)


def looks_like_lspci(text: str) -> bool:
    """Whether some line of the text is an lspci function line (or a -vmm record's first line)."""
    return any(_HEADER.match(line) is not None or _SLOT.match(line) is not None for line in text.splitlines())


def _nvidia_module(name: str) -> bool:
    """nvidia, nvidia_drm, Debian's nvidia-current ...: a module of the NVIDIA driver (nvidiafb is the kernel's
    old framebuffer driver, not NVIDIA's)."""
    return name.replace("-", "_").startswith("nvidia") and name != "nvidiafb"


def _module_notes(read: LspciRead, gpus: list[PciGpu]) -> list[Diagnostic]:
    """A GPU without a driver whose "Kernel modules" line lacks nvidia: no NVIDIA module for this kernel."""
    unbound = {g.bdf for g in gpus if g.driver_known and g.driver is None}
    notes: list[Diagnostic] = []
    for f in read.functions:
        if f.bdf in unbound and f.modules is not None and not any(_nvidia_module(m) for m in f.modules):
            notes.append(
                Diagnostic(
                    source="lspci",
                    message=f"{f.bdf}: {NO_MODULE_NOTE} (Kernel modules: "
                    f"{', '.join(f.modules) or 'none'}): the NVIDIA driver is not installed for this kernel",
                )
            )
            unbound.discard(f.bdf)
    return notes


def driver_state_from_lspci(text: str) -> tuple[DriverState, list[Diagnostic]] | None:
    """The PCI bus as the text's lspci lines show it (every other driver fact not in the source), and what the
    reader noticed; None when the text holds no lspci function line."""
    if not looks_like_lspci(text):
        return None
    read = read_lspci(text)
    gpus = pci_gpus(read)
    state = DriverState(pci_gpus=gpus)
    state.mark_unset_missing(Missing.NOT_IN_SOURCE, ("nvml", "kernel_module_version", "library_version"))
    notes = _module_notes(read, gpus)
    if read.cut_message is not None:
        notes.append(Diagnostic(source="lspci", message=read.cut_message))
    return state, notes


def snapshot_from_lspci(text: str, path: str | None) -> Snapshot:
    """A snapshot of the PCI bus: no GPU NVML listed (lspci does not ask the driver), ``driver.pci_gpus`` the
    NVIDIA GPUs with their bound drivers; ParseError when no line is an lspci function line."""
    found = driver_state_from_lspci(text)
    if found is None:
        raise ParseError("no lspci device line (like '01:00.0 3D controller: NVIDIA Corporation ...')", path=path)
    state, notes = found
    return Snapshot(
        source=Source(kind="lspci", path=path),
        gpus=[],
        driver=state,
        diagnostics=notes,
        gpu_absent_reason=None if state.pci_gpus else "lspci lists no NVIDIA display or 3D controller",
    )
