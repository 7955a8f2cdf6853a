"""The four profiles a coverage figure is given for, replayed on an incident's saved outputs through the real CLI
(in-process, as tests/calibration/runner.py runs it).

- **doctor**: the passive checks, `rigcheck doctor --from FILE ...` on the machine descriptions (nvidia-smi -q/-x
  and its table, topo, nvlink, kernel log, Fabric Manager log, driver errors).
- **prolog**: what a 10-s job-start check sees: the passive files, plus a short all-reduce, matmul or memory-bandwidth
  result where the incident has one. Until `verify --level prolog` reads saved documents it is replayed as the doctor
  run plus the bench readers (`bench allreduce|matmul|membw --from FILE`); set PROLOG_THROUGH_VERIFY to replay it as
  `rigcheck verify --level prolog --from DIR` instead (one line).
- **quick** / **full**: `rigcheck verify --from DIR` on the documents the level measures: a snapshot of the passive
  files, the bench documents, a burn analysis of a load trace (`burn --analyze`), a DCGM diagnostic of the level
  that fits the budget (r1/r2 in quick's 180 s, r3 in full's 900 s), scoped with `--only` to the stages the incident
  holds. Collectives verify does not read (all-gather ...) run through their bench reader beside it, and an incident
  with no machine description (no snapshot to judge against) runs each reader on its own.

An incident is **flagged** when a command of the profile exits non-zero with a failure that names the thread's
culprit (the GPU by bus id or index, or its words); a failure elsewhere is **wrong subject**; anything else is
**missed** (a verify that ends `incomplete` for want of a measurement included). A healthy-by-design incident is
**left alone** when every command exits 0 (warnings allowed), a **false alarm** when one fails, and **n/a** when
the profile has nothing of it to read, or only verify's `incomplete` for want of any saved measurement: a replay
claims only what the saved outputs show.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from rigcheck.checks.burn.problems import is_problem
from rigcheck.model.burn import GpuBurnAnalysis
from tests.calibration.runner import _verdicts as bench_verdicts  # the calibration judge's reading of bench output
from tests.calibration.runner import run_cli
from tests.incidents.corpus import ROLES, TESTS, Culprit, Incident, Role, SavedFile

Profile = Literal["doctor", "prolog", "quick", "full"]
PROFILES: tuple[Profile, ...] = ("doctor", "prolog", "quick", "full")

# `verify --level prolog --from DIR` replays the prolog once the level reads saved documents: set this to True.
PROLOG_THROUGH_VERIFY = False

# Which profiles see a file of each role, unless the file names its own (a DCGM r3 run: full only).
DEFAULT_PROFILES: dict[Role, tuple[Profile, ...]] = {
    "passive": PROFILES,
    "allreduce": ("prolog", "quick", "full"),
    "matmul": ("prolog", "quick", "full"),
    "membw": ("prolog", "quick", "full"),
    "allgather": ("quick", "full"),
    "reducescatter": ("quick", "full"),
    "broadcast": ("quick", "full"),
    "hostlink": ("quick", "full"),
    "p2p": ("quick", "full"),
    "dcgm": ("quick", "full"),
    "trace": ("quick", "full"),
}
BENCH_ROLES: tuple[Role, ...] = tuple(r for r in ROLES if r not in ("passive", "dcgm", "trace"))  # bench results
# The bench documents `verify --from DIR` reads (its stages); the other collectives run through their reader.
VERIFY_STAGES: tuple[Role, ...] = ("matmul", "membw", "hostlink", "p2p", "allreduce")

State = Literal["fail", "pass", "incomplete", "error"]
Status = Literal["flagged", "wrong subject", "missed", "unread", "left alone", "false alarm", "n/a"]


@dataclass(frozen=True)
class Failing:
    """One failing finding, check or GPU of a command's output."""

    index: int | None
    bus_id: str | None
    text: str


@dataclass(frozen=True)
class Run:
    command: str  # rigcheck's argv with file names only
    exit_code: int
    state: State
    failing: tuple[Failing, ...]
    detail: str  # what failed (ids), or why nothing did


@dataclass(frozen=True)
class Replay:
    incident: Incident
    profile: Profile
    status: Status
    detail: str
    runs: tuple[Run, ...]


def files_for(incident: Incident, profile: Profile) -> tuple[SavedFile, ...]:
    return tuple(f for f in incident.files if profile in (f.profiles or DEFAULT_PROFILES[f.role]))


# --- reading one command's output --------------------------------------------------------------------------------


def _bus(text: str | None) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI bus id in any spelling nvidia-smi, the kernel or lspci prints."""
    if not text:
        return None
    found = re.search(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})", text)
    if found is None:
        return None
    return int(found.group(1) or "0", 16), int(found.group(2), 16), int(found.group(3), 16)


def matches(item: Failing, culprit: Culprit) -> bool:
    if culprit.bus_id is not None and (item.bus_id is None or _bus(item.bus_id) != _bus(culprit.bus_id)):
        return False
    if culprit.index is not None and item.index != culprit.index:
        return False
    return culprit.text is None or culprit.text.lower() in item.text.lower()


def _clean(text: str, tmp: str = "") -> str:
    text = text.replace(f"{TESTS}/", "")
    return text.replace(f"{tmp}/", "") if tmp else text


def _document(out: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _first_error(err: str) -> str:
    return next((line for line in err.splitlines() if line.startswith("rigcheck: error:")), "") or next(
        (line for line in err.splitlines() if line.strip()), ""
    )


def _doctor_failing(doc: dict[str, Any]) -> tuple[Failing, ...]:
    buses = {g.get("index"): g.get("pci_bus_id") for g in (doc.get("snapshot") or {}).get("gpus") or []}
    return tuple(
        Failing(f.get("gpu"), buses.get(f.get("gpu")), f"{f['id']} {f.get('subject') or ''} {f.get('message') or ''}")
        for f in doc.get("findings") or []
        if f.get("severity") == "fail"
    )


def _verify_failing(doc: dict[str, Any]) -> tuple[Failing, ...]:
    def said(checks: list[dict[str, Any]]) -> str:
        words = [str(j.get("text") or j.get("reason") or "") for c in checks for j in c.get("judgements") or []]
        return " ".join([str(c.get("id")) for c in checks] + [str(c.get("detail") or "") for c in checks] + words)

    found: list[Failing] = []
    for gpu in doc.get("gpus") or []:
        if gpu.get("verdict") == "fail":
            failed = [c for c in gpu.get("checks") or [] if c.get("verdict") == "fail"]
            found.append(Failing(gpu.get("index"), gpu.get("pci_bus_id"), said(failed)))
    failed_node = [c for c in doc.get("node") or [] if c.get("verdict") == "fail"]
    if failed_node:
        found.append(Failing(None, None, said(failed_node)))
    return tuple(found)


def _burn_failing(doc: dict[str, Any]) -> tuple[Failing, ...]:
    found: list[Failing] = []
    for raw in doc.get("gpus") or []:
        analysis = GpuBurnAnalysis.model_validate(raw)
        if is_problem(analysis):
            ids = " ".join(str(f.get("id")) for f in raw.get("findings") or [])
            found.append(Failing(analysis.index, None, f"{ids or analysis.verdict.split(' ')[0]} {analysis.verdict}"))
    return tuple(found)


def _ids(failing: tuple[Failing, ...]) -> str:
    """A short account of what failed: each item's first word (its finding or check id) with its GPU."""
    words = sorted({(f"GPU{f.index} " if f.index is not None else "") + f.text.split(" ")[0] for f in failing})
    shown = ", ".join(words[:4])
    return shown + (f" (+{len(words) - 4})" if len(words) > 4 else "")


def _run(argv: list[str], shown: str, tmp: str = "") -> Run:
    """One rigcheck command, in-process; its state read from its JSON document."""
    code, out, err = run_cli(argv)
    doc = _document(out)
    schema = str((doc or {}).get("schema", ""))
    if doc is None:
        error = _clean(_first_error(err), tmp)
        failed = code == 1 and "the run failed" in error  # a bench reader's "the tool's run failed" line
        state: State = "fail" if failed else "error"
        return Run(shown, code, state, (Failing(None, None, error),) if failed else (), error or "no output")
    if schema.startswith("rigcheck.doctor/"):
        failing = _doctor_failing(doc)
    elif schema.startswith("rigcheck.verify/"):
        failing = _verify_failing(doc)
        if doc.get("verdict") == "incomplete":
            return Run(shown, code, "incomplete", (), _clean(str(doc.get("drain_reason") or "incomplete"), tmp))
    elif schema.startswith("rigcheck.burn/"):
        failing = _burn_failing(doc)
    else:  # a bench --from document
        what = str(doc.get("benchmark") or "bench")
        judged = bench_verdicts(doc)
        failing = tuple(Failing(None, None, f"{what} {why}") for verdict, why in judged if verdict == "fail")
    if code != 0 and failing:
        said = str(doc.get("drain_reason") or "").removeprefix("rigcheck verify: fail ") or _ids(failing)
        if not schema.startswith(("rigcheck.doctor/", "rigcheck.verify/", "rigcheck.burn/")):
            said = failing[0].text[:120]  # a bench reader: its first failing judgement
        return Run(shown, code, "fail", failing, _clean(said, tmp))
    if code == 0:
        unsaid = f", fails without exiting 1: {_ids(failing)}" if failing else ""
        return Run(shown, code, "pass", failing, "exit 0" + unsaid)
    return Run(shown, code, "error", (), _clean(_first_error(err) or f"exit {code}", tmp))


# --- the commands of each profile ----------------------------------------------------------------------------------


def _names(files: tuple[SavedFile, ...]) -> str:
    return " ".join(f"--from {Path(f.path).name}" for f in files)


def _model(incident: Incident) -> list[str]:
    return ["--model", incident.model] if incident.model else []


@cache
def _doctor(files: tuple[SavedFile, ...]) -> Run:
    argv = ["doctor", *[a for f in files for a in ("--from", str(f.full_path))], "--json"]
    return _run(argv, f"doctor {_names(files)}")


def _machine(files: tuple[SavedFile, ...]) -> list[SavedFile]:
    """The descriptions a bench reader takes beside its measurement (the link and the slot it was on)."""
    return [f for f in files if f.role == "passive" and f.output.startswith(("nvidia-smi -q", "nvidia-smi topo -m"))]


@cache
def _bench(measurement: SavedFile, machine: tuple[SavedFile, ...], model: tuple[str, ...]) -> Run:
    argv = ["bench", measurement.role, "--from", str(measurement.full_path)]
    argv += [a for f in machine for a in ("--from", str(f.full_path))] + [*model, "--json"]
    return _run(argv, f"bench {measurement.role} --from {Path(measurement.path).name}")


@cache
def _burn(trace: SavedFile) -> Run:
    return _run(["burn", "--analyze", str(trace.full_path), "--json"], f"burn --analyze {Path(trace.path).name}")


def _passive_and_readers(incident: Incident, files: tuple[SavedFile, ...]) -> Iterator[Run]:
    passive = tuple(f for f in files if f.role == "passive")
    if passive:
        yield _doctor(passive)
    machine = tuple(_machine(files))
    for f in files:
        if f.role in BENCH_ROLES:
            yield _bench(f, machine, tuple(_model(incident)))
        elif f.role == "trace":
            yield _burn(f)
        elif f.role == "dcgm":
            yield _verify_dir(incident, (f,), ())


@cache
def _verify_dir(incident: Incident, files: tuple[SavedFile, ...], extra: tuple[str, ...]) -> Run:
    """`verify --from DIR` on a directory assembled from the files: a snapshot of the machine descriptions, a bench
    document per measurement, a burn analysis per trace, the DCGM diagnostic as saved."""
    with tempfile.TemporaryDirectory(prefix="rigcheck-incident-") as tmp:
        out = Path(tmp)
        shown: list[str] = []
        stages: list[str] = []
        passive = [f for f in files if f.role == "passive"]
        if passive:
            froms = [a for f in passive for a in ("--from", str(f.full_path))]
            code, _, err = run_cli(["snapshot", *froms, "-o", str(out / "snap.json")])
            if code != 0:
                return Run(f"snapshot {_names(tuple(passive))}", code, "error", (), _clean(_first_error(err), tmp))
            shown.append(f"snapshot {_names(tuple(passive))}")
        for f in files:
            if f.role in VERIFY_STAGES and f.role not in stages:
                argv = ["bench", f.role, "--from", str(f.full_path), *_model(incident), "--json"]
                _, text, _ = run_cli(argv)
                if _document(text) is None:  # the reader refused it, or the tool's run failed: no document
                    return _run(argv, f"bench {f.role} --from {Path(f.path).name}", tmp)
                (out / f"{f.role}.json").write_text(text, encoding="utf-8")
                stages.append(f.role)
            elif f.role == "trace" and "burn" not in stages:
                _, text, _ = run_cli(["burn", "--analyze", str(f.full_path), "--json"])
                if _document(text) is None:
                    return _run(
                        ["burn", "--analyze", str(f.full_path), "--json"], f"burn --analyze {Path(f.path).name}", tmp
                    )
                (out / "burn.json").write_text(text, encoding="utf-8")
                stages.append("burn")
            elif f.role == "dcgm":
                shutil.copyfile(f.full_path, out / Path(f.path).name)
                stages.append("dcgm")
        only = ["--only", ",".join(stages)] if stages else []
        argv = ["verify", "--from", str(out), *only, *extra, "--json"]
        named = " ".join([*shown, *(f"+{s}" for s in stages)])
        return _run(argv, f"verify --from DIR [{named}] {' '.join(only + list(extra))}".strip(), tmp)


def _verify_profile(incident: Incident, files: tuple[SavedFile, ...], extra: tuple[str, ...]) -> Iterator[Run]:
    readable = tuple(f for f in files if f.role in (*VERIFY_STAGES, "passive", "trace", "dcgm"))
    others = tuple(f for f in files if f not in readable)
    if any(f.role in ("passive", "dcgm") for f in readable):
        yield _verify_dir(incident, readable, extra)
    else:  # no snapshot to judge against and no DCGM run: each reader on its own
        yield from _passive_and_readers(incident, readable)
    yield from _passive_and_readers(incident, others)


def runs(incident: Incident, profile: Profile) -> tuple[Run, ...]:
    files = files_for(incident, profile)
    if profile == "doctor":
        passive = tuple(f for f in files if f.role == "passive")
        return (_doctor(passive),) if passive else ()
    if profile == "prolog" and not PROLOG_THROUGH_VERIFY:
        return tuple(_passive_and_readers(incident, files))
    extra = ("--level", "prolog") if profile == "prolog" else ()
    return tuple(_verify_profile(incident, files, extra)) if files else ()


# --- the verdict of a profile on an incident -----------------------------------------------------------------------


def _said(all_runs: tuple[Run, ...]) -> str:
    return "; ".join(f"{r.command.split(' --')[0]}: {r.detail}" for r in all_runs)


def judge(incident: Incident, profile: Profile) -> Replay:
    done = runs(incident, profile)
    failed = [r for r in done if r.state == "fail"]
    if incident.verdict == "sick":
        if not done:
            return Replay(incident, profile, "missed", "no saved output this profile reads", done)
        named = [r for r in failed if any(matches(item, incident.culprit) for item in r.failing)]
        if named:
            return Replay(incident, profile, "flagged", _said(tuple(named)), done)
        if failed:
            return Replay(incident, profile, "wrong subject", _said(tuple(failed)), done)
        unread = tuple(r for r in done if r.state == "error")
        if unread:
            return Replay(incident, profile, "unread", _said(unread), done)
        return Replay(incident, profile, "missed", _said(done), done)
    if not done:
        return Replay(incident, profile, "n/a", "no saved output this profile reads", done)
    if failed:
        return Replay(incident, profile, "false alarm", _said(tuple(failed)), done)
    unread = tuple(r for r in done if r.state == "error")
    if unread:
        return Replay(incident, profile, "unread", _said(unread), done)
    if any(r.state == "incomplete" for r in done):
        return Replay(incident, profile, "n/a", _said(done), done)
    return Replay(incident, profile, "left alone", _said(done), done)


@cache
def replays() -> tuple[Replay, ...]:
    """Every incident under every profile, once per process (the test and the page generator share it)."""
    from tests.incidents.corpus import load_incidents

    return tuple(judge(i, p) for i in load_incidents() for p in PROFILES)


@dataclass(frozen=True)
class Share:
    profile: Profile
    flagged: int
    sick: int
    left_alone: int
    healthy_judged: int  # healthy incidents the profile judged: left alone or a false alarm
    healthy_na: int  # n/a or unread: nothing of it to read, or only a refusal of the saved output

    @property
    def flagged_share(self) -> float:
        return self.flagged / max(self.sick, 1)

    @property
    def left_alone_share(self) -> float:
        return self.left_alone / max(self.healthy_judged, 1)


def shares(rows: tuple[Replay, ...]) -> list[Share]:
    found: list[Share] = []
    for profile in PROFILES:
        mine = [r for r in rows if r.profile == profile]
        sick = [r for r in mine if r.incident.verdict == "sick"]
        healthy = [r for r in mine if r.incident.verdict == "healthy"]
        found.append(
            Share(
                profile,
                flagged=sum(r.status == "flagged" for r in sick),
                sick=len(sick),
                left_alone=sum(r.status == "left alone" for r in healthy),
                healthy_judged=sum(r.status in ("left alone", "false alarm") for r in healthy),
                healthy_na=sum(r.status in ("n/a", "unread") for r in healthy),
            )
        )
    return found
