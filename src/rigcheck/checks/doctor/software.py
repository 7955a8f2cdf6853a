"""Software: do the driver, the CUDA it supports, torch's CUDA and the GPUs' architectures fit together?

Finding ids: software.ok, software.driver-unknown, software.driver-too-old-for-torch,
software.cuda-driver-too-old, software.torch-cuda-unknown, software.arch-too-new-for-driver,
software.arch-dropped-by-driver, software.nccl.
"""

from __future__ import annotations

from rigcheck.checks.common import gpu_finding, has_problem, host_finding, readable_gpus, why_missing
from rigcheck.facts.software import (
    ARCH_DRIVERS,
    MINOR_COMPAT_SOURCE,
    RELEASE_NOTES,
    SM86_MIN_DRIVER,
    arch_from_compute_capability,
    minor_compat_driver,
    normalize_arch,
    parse_version,
    required_driver,
    toolkit_driver,
    version_lt,
)
from rigcheck.model import Finding, Gpu, Severity, Snapshot

FINDING_IDS: tuple[str, ...] = (
    "software.ok",
    "software.driver-unknown",
    "software.driver-too-old-for-torch",
    "software.cuda-driver-too-old",
    "software.torch-cuda-unknown",
    "software.arch-too-new-for-driver",
    "software.arch-dropped-by-driver",
    "software.nccl",
)


UPGRADE = "upgrade the NVIDIA driver (a production branch from nvidia.com or your distribution's packages)"


def _cuda(text: str | None) -> tuple[int, int] | None:
    v = parse_version(text)
    if v is None or len(v) < 2:
        return None
    return (v[0], v[1])


def _arch(gpu: Gpu) -> str | None:
    return normalize_arch(gpu.architecture) or arch_from_compute_capability(gpu.compute_capability)


def check_software(snapshot: Snapshot) -> list[Finding]:
    sw = snapshot.software
    windows = "windows" in (snapshot.host.os or "").lower()
    out: list[Finding] = []
    checked: list[str] = []

    driver = parse_version(sw.driver_version)
    if driver is None and not snapshot.gpus and snapshot.gpu_absent_reason:
        # No driver at all: health.no-gpu already says so; a second "driver unknown" adds nothing.
        pass
    elif driver is None:
        why = (
            why_missing(sw, "driver_version")
            if sw.driver_version is None
            else f"{sw.driver_version!r} is not a version number"
        )
        out.append(
            host_finding(
                "software.driver-unknown",
                Severity.UNKNOWN,
                f"NVIDIA driver version not available ({why}): cannot check it against torch or the GPUs",
                measured=why,
                advice="check `nvidia-smi` (the header shows the driver version)",
                source=RELEASE_NOTES,
            )
        )

    torch_cuda = _cuda(sw.torch_cuda_version)
    driver_judged = False
    if driver is not None and torch_cuda is not None:
        tk = toolkit_driver(torch_cuda)
        compat = minor_compat_driver(torch_cuda[0], windows=windows)
        need = required_driver(tk, windows=windows) if tk is not None else None
        compat_v = parse_version(compat)
        need_v = parse_version(need)
        cuda_text = f"CUDA {torch_cuda[0]}.{torch_cuda[1]}"
        torch_text = f"torch {sw.torch_version or '?'} ({cuda_text})"
        if need_v is None and compat_v is None:
            out.append(
                host_finding(
                    "software.torch-cuda-unknown",
                    Severity.UNKNOWN,
                    f"{torch_text}: rigcheck's driver table has no entry for {cuda_text}",
                    measured=cuda_text,
                    advice="check the CUDA Toolkit release notes' driver table for this CUDA version",
                    source=RELEASE_NOTES,
                )
            )
        elif compat_v is not None and version_lt(driver, compat_v):
            driver_judged = True
            out.append(
                host_finding(
                    "software.driver-too-old-for-torch",
                    Severity.FAIL,
                    f"driver {sw.driver_version} is older than {compat}, the minimum for any CUDA "
                    f"{torch_cuda[0]}.x program: {torch_text} will not initialise CUDA",
                    measured=sw.driver_version,
                    expected=f">= {need or compat}" + (f" ({compat} with minor version compatibility)" if need else ""),
                    advice=f"{UPGRADE}, or install a torch build for an older CUDA",
                    source=f"{MINOR_COMPAT_SOURCE}; {RELEASE_NOTES}",
                )
            )
        elif need_v is not None and version_lt(driver, need_v):
            driver_judged = True
            # No minor version compatibility before CUDA 11: below the toolkit's driver it does not run.
            severity = Severity.WARN if compat_v is not None else Severity.FAIL
            out.append(
                host_finding(
                    "software.driver-too-old-for-torch",
                    severity,
                    f"driver {sw.driver_version} is older than {need}, the driver of {cuda_text} that {torch_text} "
                    "was built with"
                    + (
                        f"; it runs through CUDA minor version compatibility (>= {compat}), without PTX JIT of newer "
                        "kernels"
                        if compat_v is not None
                        else ""
                    ),
                    measured=sw.driver_version,
                    expected=f">= {need}",
                    advice=f"{UPGRADE} to {need} or newer so every feature of torch's CUDA works",
                    source=f"{RELEASE_NOTES}; {MINOR_COMPAT_SOURCE}",
                )
            )
        else:
            driver_judged = True
            checked.append(f"driver {sw.driver_version} supports {torch_text}")

    # The CUDA version the driver reports, against torch's; only when the driver number could not decide it.
    cuda_driver = _cuda(sw.cuda_driver_version)
    if not driver_judged and cuda_driver is not None and torch_cuda is not None:
        if cuda_driver < torch_cuda:
            same_major = cuda_driver[0] == torch_cuda[0] and cuda_driver[0] >= 11
            out.append(
                host_finding(
                    "software.cuda-driver-too-old",
                    Severity.WARN if same_major else Severity.FAIL,
                    f"the driver supports CUDA {sw.cuda_driver_version}, older than torch's CUDA "
                    f"{sw.torch_cuda_version}"
                    + ("; it runs through CUDA minor version compatibility" if same_major else ""),
                    measured=f"CUDA {sw.cuda_driver_version}",
                    expected=f">= CUDA {sw.torch_cuda_version}",
                    advice=f"{UPGRADE}, or install a torch build for CUDA {sw.cuda_driver_version} or older",
                    source=f"{MINOR_COMPAT_SOURCE}; {RELEASE_NOTES}",
                )
            )
        else:
            checked.append(f"driver CUDA {sw.cuda_driver_version} >= torch's CUDA {sw.torch_cuda_version}")

    # Architectures against the driver.
    if driver is not None:
        seen: set[str] = set()
        for gpu in readable_gpus(snapshot):
            arch = _arch(gpu)
            if arch is None:
                continue
            spec = ARCH_DRIVERS[arch]
            minimum = spec.min_driver
            if arch == "ampere" and parse_version(gpu.compute_capability) == (8, 6):
                minimum = SM86_MIN_DRIVER
            min_v = parse_version(minimum)
            if min_v is not None and version_lt(driver, min_v):
                out.append(
                    gpu_finding(
                        gpu,
                        "software.arch-too-new-for-driver",
                        Severity.FAIL,
                        f"{gpu.name or 'this GPU'} ({spec.display}) needs driver {minimum} or newer "
                        f"(first supported in {spec.first_cuda}); this driver is {sw.driver_version}",
                        measured=sw.driver_version,
                        expected=f">= {minimum}",
                        advice=UPGRADE,
                        source=spec.source,
                    )
                )
            elif spec.last_branch is not None and driver[0] > spec.last_branch:
                out.append(
                    gpu_finding(
                        gpu,
                        "software.arch-dropped-by-driver",
                        Severity.FAIL,
                        f"{gpu.name or 'this GPU'} ({spec.display}) is supported up to the R{spec.last_branch} driver "
                        f"branch; this driver is {sw.driver_version}",
                        measured=sw.driver_version,
                        expected=f"an R{spec.last_branch} driver or older",
                        advice=f"install an R{spec.last_branch} driver for this card, or retire the card",
                        source=spec.source,
                    )
                )
            else:
                seen.add(spec.display)
        if seen:
            checked.append(f"driver supports {', '.join(sorted(seen))}")

    nccl = sw.nccl_version
    if nccl:
        out.append(
            host_finding(
                "software.nccl",
                Severity.INFO,
                f"NCCL {nccl}" + (f" (torch {sw.torch_version})" if sw.torch_version else ""),
                measured=nccl,
                advice="set NCCL_DEBUG=INFO on a run to see which transport (P2P, SHM, NET) each pair uses",
                source="torch.cuda.nccl.version() / NCCL_DEBUG=INFO log",
            )
        )

    if not has_problem(out) and checked:
        out.append(
            host_finding(
                "software.ok",
                Severity.OK,
                "; ".join(checked),
                measured=f"driver {sw.driver_version}"
                + (f", CUDA {sw.cuda_driver_version}" if sw.cuda_driver_version else ""),
                source=RELEASE_NOTES,
            )
        )
    return out
