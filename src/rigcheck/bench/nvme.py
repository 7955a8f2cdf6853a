"""`rigcheck bench nvme`: sequential write and read throughput of the filesystem under a directory, direct
(O_DIRECT, the page cache bypassed) over a sweep of block sizes with several requests in flight, beside
buffered I/O — what DeepSpeed ZeRO-Infinity's NVMe offload streams its swap files through.

Method: one file of ``size_bytes`` under the directory, created here and removed on every way out (an error,
Ctrl-C, SIGTERM as the CLI turns it into KeyboardInterrupt). First the passes ``dd`` makes: 1 MiB requests one
at a time with O_DIRECT, a write that fills a new file (truncated to zero before each pass, so the allocation of
its blocks is inside the timing, as ``dd oflag=direct`` into a file) and a read of it (``dd iflag=direct``):
``nvme_write`` / ``nvme_read``, the figures a plan reads and the ones to hold against dd. Then the sweep: for each
block size, ``queue_depth`` threads, each with its own page-aligned buffer (an anonymous mmap) and issuing
``os.pwritev`` / ``os.preadv`` at the next free offset of the file (the calls release the GIL, so that many
requests are in flight, as fio's ``iodepth`` or DeepSpeed's aio queue); a pass covers the whole file once and
the sweep's writes overwrite the laid-out file, as fio does and as swap files are reused. Buffered passes: one
thread, 1 MiB requests (the kernel's write-back and read-ahead bring the parallelism); a write pass ends with
``fsync`` inside the timing; each read pass is preceded by ``posix_fadvise(DONTNEED)`` over the file, which
drops its clean cached pages, but what it keeps is read from memory. Each figure is the median of ``repeats``
passes timed with ``time.perf_counter``; GB/s = 1e9 bytes per second.

Where the filesystem refuses O_DIRECT (EINVAL: tmpfs before Linux 6.6, some FUSE and network filesystems),
the direct rows are absent, ``direct_io_error`` says why, and the buffered rows are still measured.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import platform
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rigcheck import __version__
from rigcheck.errors import BenchError, UsageError, interrupted_text, signal_of
from rigcheck.model.bench import Method, NvmeDocument, NvmeRow, StorageDevice, Versions, reasons, row_head

METHOD_VERSION = "nvme-1"
KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
DEFAULT_SIZE = 4 * GIB
DEFAULT_BLOCK_SIZES = (128 * KIB, MIB, 4 * MIB)
DEFAULT_QUEUE_DEPTH = 4
DEFAULT_REPEATS = 3
BUFFERED_BLOCK = MIB
ALIGN = 4096  # O_DIRECT wants offsets, lengths and buffers aligned to the logical block size (512 or 4096)
MIN_SIZE = MIB
# Free space asked for beyond the file: the filesystem's own metadata for it, and room left for others.
MARGIN_BYTES = 64 * MIB
MARGIN_FRACTION = 0.05

BUFFERED_READ_NOTE = (
    "buffered read: posix_fadvise(DONTNEED) drops the file's cached pages before each pass, but a kernel may "
    "keep some (and tmpfs holds the file in memory): a figure above the drive's is the page cache"
)
BUFFERED_WRITE_NOTE = "buffered write: the fsync at the end is inside the timing"
DD_BLOCK = MIB
NEW_FILE_NOTE = (
    "as dd oflag=direct bs=1M: one request at a time into a new file (truncated before each pass), block "
    "allocation inside the timing"
)
DD_READ_NOTE = "as dd iflag=direct bs=1M: one request at a time"


def block_label(nbytes: int) -> str:
    """131072 -> "128k", 1048576 -> "1m": the suffix of a sweep row's name."""
    for unit, factor in (("g", GIB), ("m", MIB), ("k", KIB)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return str(nbytes)


def needed_bytes(size_bytes: int) -> int:
    """Free space a run of ``size_bytes`` asks for: the file and a margin."""
    return size_bytes + max(MARGIN_BYTES, int(size_bytes * MARGIN_FRACTION))


def check_directory(directory: Path, size_bytes: int) -> None:
    """Refuse, in one line (UsageError), a directory that is absent, not a directory, not writable, or without
    room for the file and a margin."""
    if not directory.exists():
        raise UsageError(f"--path {directory}: no such directory")
    if not directory.is_dir():
        raise UsageError(f"--path {directory}: not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"--path {directory}: not writable by this user")
    if size_bytes < MIN_SIZE:
        raise UsageError(f"--size must be at least {MIN_SIZE // MIB} MiB")
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    need = needed_bytes(size_bytes)
    if free < need:
        raise UsageError(
            f"--path {directory}: {free / GIB:.2f} GiB free, a {size_bytes / GIB:.2f} GiB run needs "
            f"{need / GIB:.2f} GiB (the file and a margin); use a smaller --size or another --path"
        )


@dataclass(frozen=True)
class Pass:
    """What one timed sweep point measures."""

    direction: str  # "read" | "write"
    mode: str  # "direct" | "buffered"
    block_size: int
    queue_depth: int
    dd: bool = False  # dd's pass: 1 MiB, one request; its write truncates first, so it allocates the blocks

    @property
    def new_file(self) -> bool:
        return self.dd and self.direction == "write"


def _new_buffer(nbytes: int) -> mmap.mmap:
    """A page-aligned buffer (an anonymous mapping starts on a page) filled with random bytes, so that a
    compressing or deduplicating filesystem cannot shortcut the writes."""
    buf = mmap.mmap(-1, nbytes)
    chunk = os.urandom(min(nbytes, MIB))
    for start in range(0, nbytes, len(chunk)):
        buf[start : start + len(chunk)] = chunk[: nbytes - start]
    return buf


def io_pass(fd: int, *, write: bool, size_bytes: int, block_size: int, buffers: Sequence[mmap.mmap]) -> float:
    """Write or read the first ``size_bytes`` of ``fd`` once, ``len(buffers)`` requests in flight (one thread
    per buffer, each taking the next free offset); the seconds it took. Raises BenchError on an I/O error."""
    blocks = -(-size_bytes // block_size)
    lock = threading.Lock()
    next_block = [0]
    stop = threading.Event()
    failures: list[OSError] = []

    def worker(buf: mmap.mmap) -> None:
        view = memoryview(buf)
        try:
            while not stop.is_set():
                with lock:
                    index = next_block[0]
                    next_block[0] += 1
                if index >= blocks:
                    return
                offset = index * block_size
                length = min(block_size, size_bytes - offset)
                done = 0
                while done < length:  # a short transfer goes on where it stopped
                    part = view[done:length]
                    n = os.pwritev(fd, [part], offset + done) if write else os.preadv(fd, [part], offset + done)
                    if n <= 0:
                        raise OSError(errno.EIO, f"{'write' if write else 'read'} of 0 bytes at {offset + done}")
                    done += n
        except OSError as exc:  # handed to the caller, which says what failed
            failures.append(exc)
            stop.set()
        finally:
            view.release()

    threads = [threading.Thread(target=worker, args=(b,), daemon=True) for b in buffers]
    start = time.perf_counter()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
    finally:
        # Ctrl-C lands here in the join: the threads finish the request they are in and stop.
        stop.set()
        for t in threads:
            if t.is_alive():
                t.join()
    if failures:
        raise failures[0]
    return elapsed


def _open_direct(path: Path) -> tuple[int | None, str | None]:
    """The file opened for direct I/O, or None and why O_DIRECT was refused."""
    try:
        return os.open(path, os.O_RDWR | os.O_DIRECT), None
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        return None, f"O_DIRECT refused ({exc.strerror or exc}): this filesystem does not do direct I/O"


def _row(
    p: Pass, times: list[float], *, size_bytes: int, storage: StorageDevice, method: Method, note: str | None
) -> NvmeRow:
    name = f"nvme_{p.direction}_{p.mode}" + (f"_{block_label(p.block_size)}" if p.mode == "direct" else "")
    if p.dd:
        name += "_dd"
    head = row_head(
        name=name,
        unit="GB/s",
        samples=[size_bytes / t / 1e9 for t in times],
        method=method,
        backend="posix",
        world_size=1,
        sizes=[size_bytes],
    )
    ceiling = storage.pcie_theoretical_gbps
    fraction = head["median"] / ceiling if ceiling else None
    why = storage.missing.get("pcie_theoretical_gbps", "the drive's PCIe link is not known")
    return NvmeRow(
        **head,
        direction="read" if p.direction == "read" else "write",
        mode="direct" if p.mode == "direct" else "buffered",
        summary=False,
        block_size_bytes=p.block_size,
        queue_depth=p.queue_depth,
        file_bytes=size_bytes,
        time_s_median=statistics.median(times),
        gbps=head["median"],
        pcie_link=storage.pcie_link,
        pcie_theoretical_gbps=ceiling,
        fraction_of_pcie=fraction,
        note=note,
        missing=reasons(why, pcie_theoretical_gbps=ceiling, fraction_of_pcie=fraction),
    )


def summary_rows(rows: Sequence[NvmeRow]) -> list[NvmeRow]:
    """``nvme_read`` / ``nvme_write``: the dd-like row of each direction (1 MiB, one request at a time, the write
    into a new file), under the name a plan reads; the best direct row where there is no dd-like one."""
    out = []
    for direction in ("read", "write"):
        direct = [r for r in rows if r.direction == direction and r.mode == "direct" and not r.summary]
        dd_like = [r for r in direct if r.name.endswith("_dd")]
        if dd_like or direct:
            pick = dd_like[0] if dd_like else max(direct, key=lambda r: r.value)
            out.append(pick.model_copy(update={"name": f"nvme_{direction}", "summary": True}))
    return out


def run_nvme(
    directory: Path,
    *,
    storage: StorageDevice,
    size_bytes: int = DEFAULT_SIZE,
    block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES,
    queue_depth: int = DEFAULT_QUEUE_DEPTH,
    repeats: int = DEFAULT_REPEATS,
    on_progress: Callable[[str], None] | None = None,
) -> NvmeDocument:
    """Direct and buffered sequential throughput of one file under ``directory``; the file is removed on every
    way out. ``storage``: what holds the directory, as the caller probed it (rigcheck.probe.storage_path).

    A KeyboardInterrupt (Ctrl-C, or SIGTERM through the CLI) ends the run with the rows measured so far,
    ``partial`` and ``error`` "interrupted (SIGINT)"."""
    if repeats < 1 or queue_depth < 1:
        raise UsageError("--repeats and the queue depth must be at least 1")
    size_bytes -= size_bytes % ALIGN
    check_directory(directory, size_bytes)
    bad = [b for b in block_sizes if b <= 0 or b % ALIGN]
    if bad:
        raise UsageError(f"a block size must be a positive multiple of {ALIGN} bytes, not {bad[0]}")
    progress = on_progress or (lambda _m: None)
    method = Method(method_version=METHOD_VERSION, warmup=1, repeats=repeats, timer="perf_counter")
    notes: list[str] = []
    sweep = sorted({b for b in block_sizes if b <= size_bytes})
    if len(sweep) < len(set(block_sizes)):
        notes.append(f"block sizes above the file size ({size_bytes} bytes) left out")
    rows: list[NvmeRow] = []
    direct_error: str | None = None
    error: str | None = None
    target = directory / f".rigcheck-nvme-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    fds: list[int] = []
    created = False
    started = time.perf_counter()

    def measure(p: Pass, fd: int, buffers: Sequence[mmap.mmap], before: Callable[[], None] | None = None) -> None:
        times = []
        for n in range(repeats):
            progress(f"{p.mode} {p.direction} {block_label(p.block_size)} × QD {p.queue_depth}, pass {n + 1}/{repeats}")
            if before is not None:
                before()
            if p.new_file:
                os.ftruncate(fd, 0)
            times.append(
                io_pass(
                    fd, write=p.direction == "write", size_bytes=size_bytes, block_size=p.block_size, buffers=buffers
                )
            )
            if p.mode == "buffered" and p.direction == "write":
                t0 = time.perf_counter()
                os.fsync(fd)
                times[-1] += time.perf_counter() - t0
        note = (NEW_FILE_NOTE if p.new_file else DD_READ_NOTE) if p.dd else None
        if p.mode == "buffered":
            note = BUFFERED_READ_NOTE if p.direction == "read" else BUFFERED_WRITE_NOTE
        rows.append(_row(p, times, size_bytes=size_bytes, storage=storage, method=method, note=note))

    try:
        try:
            # Created apart from the O_DIRECT open: a filesystem that refuses O_DIRECT may do so after creating.
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            created = True
        except PermissionError as exc:
            raise UsageError(f"--path {directory}: cannot create a file there ({exc.strerror})") from None
        direct_fd, direct_error = _open_direct(target)
        if direct_fd is not None:
            fds.append(direct_fd)
            buffers = [_new_buffer(max(sweep)) for _ in range(queue_depth)]
            try:
                # dd's passes first: the write fills a new file each pass, and the last one lays it out for the rest.
                measure(Pass("write", "direct", DD_BLOCK, 1, dd=True), direct_fd, buffers[:1])
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                # Accepted at open, refused at the first request (some FUSE and network filesystems).
                direct_error = f"O_DIRECT write refused ({exc.strerror or exc}): no direct I/O on this filesystem"
            if direct_error is None:
                measure(Pass("read", "direct", DD_BLOCK, 1, dd=True), direct_fd, buffers[:1])
                for bs in sweep:  # the buffers are of the largest size; a request uses its first bs bytes
                    measure(Pass("write", "direct", bs, queue_depth), direct_fd, buffers)
                    measure(Pass("read", "direct", bs, queue_depth), direct_fd, buffers)
        buffered_fd = os.open(target, os.O_RDWR)
        fds.append(buffered_fd)
        one = [_new_buffer(BUFFERED_BLOCK)]

        def drop_cache() -> None:
            os.fsync(buffered_fd)  # dirty pages cannot be dropped
            os.posix_fadvise(buffered_fd, 0, 0, os.POSIX_FADV_DONTNEED)

        measure(Pass("write", "buffered", BUFFERED_BLOCK, 1), buffered_fd, one)
        measure(Pass("read", "buffered", BUFFERED_BLOCK, 1), buffered_fd, one, before=drop_cache)
    except KeyboardInterrupt as exc:
        error = interrupted_text(signal_of(exc))
    except OSError as exc:
        raise BenchError(f"{target}: {exc.strerror or exc}") from None
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if created:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
    if direct_error is not None:
        notes.append(f"{direct_error}; the direct rows (and nvme_read / nvme_write) are absent")
    notes += _method_notes(size_bytes, queue_depth, repeats, storage)
    return NvmeDocument(
        partial=error is not None,
        error=error,
        method=method,
        backend="posix",
        world_size=1,
        versions=Versions(rigcheck=__version__, python=platform.python_version(), torch=None, cuda=None, nccl=None),
        snapshot=None,
        results=[*summary_rows(rows), *rows],
        notes=notes,
        storage=storage,
        size_bytes=size_bytes,
        direct_io_error=direct_error,
        wall_s=time.perf_counter() - started,
    )


def _method_notes(size_bytes: int, queue_depth: int, repeats: int, storage: StorageDevice) -> list[str]:
    where = ", ".join(
        str(x)
        for x in (
            storage.fs_type,
            storage.device and f"on {storage.device}",
            storage.model,
            storage.pcie_link and f"PCIe {storage.pcie_link}",
        )
        if x
    )
    out = [
        f"one file of {size_bytes} bytes under {storage.path} ({where or 'device unknown'}), removed afterwards; "
        f"each figure the median of {repeats} passes over the whole file, GB/s = 1e9 bytes/s",
        "nvme_read / nvme_write: as dd iflag=direct / oflag=direct with 1 MiB blocks: one request at a time, the "
        "write into a new file (truncated before each pass: block allocation inside the timing)",
        f"direct sweep: O_DIRECT, {queue_depth} requests in flight (one thread each, the next free offset), "
        "page-aligned buffers; its writes overwrite the laid-out file, as fio does and as swap files are reused",
        "buffered: one thread, 1 MiB requests through the page cache, the write's fsync inside the timing; "
        "a buffered read may be served from the page cache (posix_fadvise DONTNEED drops the file's pages "
        "first, but a kernel may keep some, and tmpfs holds the file in memory)",
    ]
    if storage.pcie_theoretical_gbps is not None:
        out.append(
            f"ceiling: the drive's PCIe link as trained ({storage.pcie_link}), "
            f"{storage.pcie_theoretical_gbps:.2f} GB/s per direction after line encoding ({storage.pcie_source}); "
            "the drive's own limit is usually lower"
        )
    return out
