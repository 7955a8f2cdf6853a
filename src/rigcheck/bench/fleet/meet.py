"""The rendezvous of `rigcheck fleet` (rigcheck.bench.fleet.run): the job's store opened, the job's key settled
(rigcheck.bench.fleet.auth), every rank's sealed check-in, and the gloo process group.

Rank 0 trusts a check-in only once it opens under the job's key and names a place in the job: a stranger who
writes ``rank/1`` (or bumps the check-in counter) makes nothing happen, and rank 1 is named missing at the
deadline if the real one never comes. A rank that checked in and vanished before the process group formed is
named by what it did not write (``pg/<rank>``, written just before gloo's set-up), not by gloo's error, which
names whoever it waited on first.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Final

from rigcheck.bench.fleet.auth import Rejected, Sealer, job_id, key_from_credential, munge_payload, new_secret
from rigcheck.bench.fleet.state import FleetRun
from rigcheck.bench.fleet.store import Control, open_store, prefixed
from rigcheck.errors import BenchError

PG_MARGIN_S: Final = 2.0  # gloo's own timeout (the deadline) comes first; this bounds it where it does not


def _checkin(value: Any, world_size: int) -> dict[str, Any] | None:
    """A check-in's fields, or None when they are not what a rank writes (a sealed message is still read as
    untrusted data: nothing in it may crash rank 0)."""
    if not isinstance(value, dict):
        return None
    host, node, local = value.get("host"), value.get("node_rank"), value.get("local_rank")
    if not isinstance(host, str) or not isinstance(node, int) or not isinstance(local, int):
        return None
    if not 0 <= node < world_size:
        return None
    return {"host": host, "node_rank": node, "local_rank": local, "pid": value.get("pid")}


def _settle_key(run: FleetRun, ctl: Control, until: float) -> None:
    """The job's key into the sealer: known already (a key, or none on loopback / --insecure), or through MUNGE:
    rank 0 draws it and sends each rank its own credential (``key/<rank>``, raw: the credential is its own
    seal), each rank decodes its own (what does not decode is dropped and counted, and the rank waits on)."""
    plan, env = run.key, run.env
    if plan.mode != "munge":
        ctl.sealer.secret = plan.secret
        return
    assert plan.munge is not None
    job = ctl.sealer.job
    if run.lead:
        secret = new_secret()
        for rank in range(1, env.world_size):
            ctl.put_raw(f"key/{rank}", plan.munge.encode(munge_payload(job, rank, secret), os.getuid()))
        ctl.sealer.secret = secret
        return
    key = f"key/{env.rank}"
    tried: set[bytes] = set()  # MUNGE decodes a credential once: a failed one is not tried again
    while run.clock() < until:
        raw = ctl.get_raw(key)
        if raw is not None and raw not in tried:
            tried.add(raw)
            try:
                credential = raw.decode(errors="replace")
                ctl.sealer.secret = key_from_credential(plan.munge, credential, job=job, rank=env.rank)
                return
            except Rejected as why:
                ctl.reject(key, raw, str(why))
        run.sleep()
    raise BenchError(f"rank {env.rank}: no key from rank 0 through MUNGE within {run.deadline_s:g} s")


def rendezvous(run: FleetRun) -> bool:
    """Open the store, settle the key, check in, wait for every rank (rank 0 decides), join the gloo control
    group. False when not every rank met (rank 0 has named them)."""
    env = run.env
    since = run.clock()
    until = since + run.deadline_s
    store = open_store(env, run.deadline_s, run.bounded)
    base = prefixed(store, f"rigcheck.fleet/{env.attempt}/")
    sealer = Sealer(job=job_id(env, run.environ), sender=env.rank)
    run.ctl = Control(prefixed(base, "ctl"), sealer=sealer, bounded=run.bounded, clock=run.clock)
    ctl = run.control
    _settle_key(run, ctl, until)
    ctl.put(
        f"rank/{env.rank}",
        {"host": run.host, "node_rank": env.node_rank, "local_rank": env.local_rank, "pid": os.getpid()},
    )
    run.mark("rendezvous")
    ctl.bump("checked_in")
    if run.lead:
        keys = [f"rank/{r}" for r in range(env.world_size)]
        found = ctl.await_keys(keys, until, hint="checked_in")
        for rank, key in enumerate(keys):
            record = _checkin(found.get(key), env.world_size)
            if record is not None:
                run.checkins[rank] = record
                continue
            if key in found:
                ctl.reject(key, repr(found[key]).encode(), "a check-in without its fields")
            run.lost(rank, f"never reached the job's store within {run.deadline_s:g} s")
        complete = len(run.checkins) == env.world_size
        ctl.put("go/rendezvous", complete)
    else:
        complete = bool(run.await_lead("go/rendezvous", "the rendezvous", 2 * run.deadline_s))
    if not complete:
        reason = f"{len(run.missing)} rank(s) never checked in" if run.lead else None
        run.record("rendezvous", "timed_out", since, run.deadline_s, reason)
        return False
    return _process_group(run, base, since)


def _process_group(run: FleetRun, base: Any, since: float) -> bool:
    """Every rank joins gloo's control group, bounded by the deadline; rank 0 names who never came to it."""
    import torch.distributed as dist

    env, ctl = run.env, run.control
    ctl.put(f"pg/{env.rank}", "joining")
    try:
        run.bounded.call(
            lambda: dist.init_process_group(
                "gloo",
                store=prefixed(base, "pg"),
                rank=env.rank,
                world_size=env.world_size,
                timeout=timedelta(seconds=run.deadline_s),
            ),
            "gloo's set-up",
            run.deadline_s + PG_MARGIN_S,
        )
    except (RuntimeError, BenchError) as exc:  # gloo's timeout (DistStoreError), or ours
        if run.lead:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            try:
                found = ctl.await_keys([f"pg/{r}" for r in range(env.world_size)], run.clock())
            except BenchError:  # the store went with it: who was gone cannot be told
                found = {f"pg/{r}": True for r in range(env.world_size)}
            gone = [r for r in range(env.world_size) if f"pg/{r}" not in found]
            for rank in gone:
                run.lost(rank, "checked in, then never joined the process group", phase="rendezvous")
            run.record("rendezvous", "failed", since, run.deadline_s, f"the process group did not form: {first}")
        return False
    run.record("rendezvous", "done", since, run.deadline_s, None)
    where = "in this process" if env.master_port == 0 else f"at {env.master_addr}:{env.master_port}"
    run.say(f"fleet: {env.world_size} rank(s) met {where} ({env.launcher}, messages {_sealing(run)})")
    return True


def _sealing(run: FleetRun) -> str:
    return "unauthenticated" if run.key.secret is None and run.key.mode != "munge" else f"sealed ({run.key.source})"


def sealing_note(run: FleetRun) -> str:
    """How the ranks' messages were authenticated, for the report's notes."""
    if run.key.mode in ("key", "munge"):
        return f"the ranks' messages were sealed with the job's key ({run.key.source})"
    if run.key.mode == "loopback":
        return "the ranks' messages were not authenticated: no key, every rank on this host (loopback)"
    return "the ranks' messages were not authenticated (--insecure): anyone who reached the store could forge them"
