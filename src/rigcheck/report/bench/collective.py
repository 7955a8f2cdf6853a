"""A collective document's lines beside its table, the same in every format: where an imported output came
from, its link's ceiling and the band's verdict, and nccl-tests' two closing lines. Drawn by render.py (terminal,
Markdown) and html.py (the page), which import this module and not each other's.
"""

from __future__ import annotations

from rigcheck.model.bench import CollectiveDocument
from rigcheck.units import plural


def collective_context(doc: CollectiveDocument) -> list[str]:
    """The lines above an imported document's table: where it came from, its link's ceiling, the band's verdict."""
    out = []
    s = doc.source
    if s is not None:
        hosts = ", ".join(s.hosts[:4]) + (f" and {len(s.hosts) - 4} more" if len(s.hosts) > 4 else "")
        version = f" (version {s.version})" if s.version else ""
        ranks = plural(s.ranks, "rank") if s.ranks else "ranks not listed"
        where = f" on {hosts}" if hosts else ""
        out.append(f"read from {s.tool} output {s.file}{version}: {ranks}{where}; nothing run")
    if doc.ceiling is not None:
        c = doc.ceiling
        out.append(f"ceiling {c.gbps:g} GB/s: {c.link} ({c.source})")
    if doc.judgement is not None:
        j = doc.judgement
        out.append(f"verdict {j.verdict}: {j.reason}" + (f" ({j.source})" if j.source else ""))
    return out


def collective_summary(doc: CollectiveDocument) -> list[str]:
    """nccl-tests' two closing lines for every collective report: the file's own footer for an imported output,
    else rigcheck's figures (sizes whose data check failed; the mean busbw of the sizes measured)."""
    s = doc.source
    rows = doc.results
    if s is not None and s.tool == "nccl-tests":
        wrong, basis = s.out_of_bounds, "nccl-tests' footer"
        avg = s.avg_busbw_gbps
        if avg is None:  # no footer: nccl-tests' mean over every figure, out-of-place and in-place
            figures = [f for r in rows for f in (r.busbw_gbps, r.in_place_busbw_gbps) if f is not None]
            avg, basis = (sum(figures) / len(figures) if figures else None), "computed from the rows: no footer"
    else:
        wrong = sum(1 for r in rows if not r.correct)
        avg = sum(r.busbw_gbps for r in rows) / len(rows) if rows else None
        basis = (
            f"rigcheck: the mean busbw of its {plural(len(rows), 'size')}; nccl-tests also averages its in-place runs"
        )
    oob = "not in the file" if wrong is None else f"{wrong} {'OK' if wrong == 0 else 'FAILED'}"
    mean = "-" if avg is None else f"{avg:g} GB/s"
    return [f"Out of bounds values: {oob}", f"Avg bus bandwidth: {mean} ({basis})"]
