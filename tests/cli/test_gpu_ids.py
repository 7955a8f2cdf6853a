"""GPUs chosen as users of nvidia-smi and docker choose them: `-i/--id` (an index, a UUID or a unique start of one,
a PCI bus id in any of its spellings, a comma list), `--gpus all`; and what a mistyped option is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import Rigcheck

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
H100 = str(SNAPSHOTS / "healthy-8x-h100.json")  # GPU i: UUID GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d000i
RTX3090 = str(SNAPSHOTS / "2x-3090-phb-throttling.json")  # buses 0B and 0C, UUIDs with nothing in common
SELECTING = (["doctor"], ["power"], ["thermal"], ["topo"], ["snapshot"])


def _selected(rigcheck: Rigcheck, snapshot: str, *selection: str) -> list[int]:
    result = rigcheck("snapshot", "--from", snapshot, *selection)
    assert result.code == 0, result.stderr
    selection_seen: list[int] = result.json["gpu_selection"]
    return selection_seen


# --- -i/--id --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        ("3", [3]),
        ("GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d0005", [5]),
        ("gpu-5B0F6A3E-91C2-4D7E-8A10-3C2F7E9D0005", [5]),  # nvidia-smi ignores the case of a UUID
        ("00000000:3A:00.0", [2]),  # NVML's spelling
        ("0000:3a:00.0", [2]),  # sysfs'
        ("3a:00.0", [2]),  # lspci's, no domain
        ("7,GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d0001,9a:00.0", [1, 4, 7]),  # mixed forms, sorted
        ("2, 2", [2]),  # one GPU named twice is that GPU
    ],
)
def test_id_forms_choose_the_gpu(ids: str, expected: list[int], rigcheck: Rigcheck) -> None:
    assert _selected(rigcheck, H100, "-i", ids) == expected
    assert _selected(rigcheck, H100, "--id", ids) == expected


def test_a_unique_start_of_a_uuid_is_enough(rigcheck: Rigcheck) -> None:
    assert _selected(rigcheck, RTX3090, "-i", "GPU-9f04") == [1]
    assert _selected(rigcheck, H100, "-i", "GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d0006") == [6]


@pytest.mark.parametrize("command", SELECTING)
def test_every_snapshot_command_takes_i(command: list[str], rigcheck: Rigcheck) -> None:
    args = [*command, "--from", H100, "-i", "00000000:5D:00.0"]
    result = rigcheck(*args, *([] if command == ["snapshot"] else ["--json"]))
    assert result.code == 0, result.stderr
    doc = result.json
    gpus = doc["snapshot"]["gpus"] if command == ["doctor"] else doc["gpus"]
    assert [g["index"] for g in gpus] == [3]


def test_doctor_i_0_reads_as_nvidia_smi_i_0(rigcheck: Rigcheck) -> None:
    code, out, err = rigcheck("doctor", "--from", RTX3090, "-i", "0")
    assert code in (0, 1), err
    assert "(only these: --gpus 0)" in out


def test_an_ambiguous_uuid_start_names_the_gpus_it_matches(rigcheck: Rigcheck) -> None:
    message = rigcheck("topo", "--from", H100, "-i", "GPU-5b0f").error()
    assert message == "-i: 'GPU-5b0f' matches GPUs 0, 1, 2, 3, 4, 5, 6, 7; give more of the UUID"


@pytest.mark.parametrize(
    ("ids", "says"),
    [
        ("9", "no GPU here has the id '9'"),
        ("GPU-ffff", "no GPU here has the id 'GPU-ffff'"),
        ("00000000:01:00.0", "no GPU here has the id '00000000:01:00.0'"),
        ("1,bogus", "'bogus' is not a GPU index, UUID (GPU-...) or PCI bus id (00000000:3B:00.0)"),
        ("zz:00.0", "'zz:00.0' is not a GPU index, UUID"),
        (",", "-i/--id takes a GPU index, UUID or PCI bus id"),
    ],
)
def test_an_id_of_no_gpu_is_one_usage_line(ids: str, says: str, rigcheck: Rigcheck) -> None:
    for command in SELECTING:
        message = rigcheck(*command, "--from", RTX3090, "-i", ids).error()
        assert says in message, message
        if ids == ",":
            continue
        # what it could have been: each GPU with its UUID and bus id
        assert message.endswith(
            "the GPUs here are 0 (GPU-3b1d9c47-2e8f-6a05-d41b-97c0e5f2a810, 00000000:0B:00.0); "
            "1 (GPU-9f04a2c6-71be-3d58-0e2a-4c8b6d1f7e23, 00000000:0C:00.0)"
        ), message


def test_a_long_listing_stops_after_four(rigcheck: Rigcheck) -> None:
    message = rigcheck("topo", "--from", H100, "-i", "12").error()
    assert message.endswith("3 (GPU-5b0f6a3e-91c2-4d7e-8a10-3c2f7e9d0003, 00000000:5D:00.0); and 4 more"), message


def test_i_and_gpus_together_are_refused(rigcheck: Rigcheck) -> None:
    message = rigcheck("doctor", "--from", H100, "-i", "0", "--gpus", "0").error()
    assert message == "-i/--id and --gpus both choose GPUs: give one of them"


# --- --gpus all -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["all", "ALL"])
def test_gpus_all_is_every_gpu(word: str, rigcheck: Rigcheck) -> None:
    whole = rigcheck("doctor", "--from", H100, "--json")
    every = rigcheck("doctor", "--from", H100, "--gpus", word, "--json")
    assert every.code == whole.code == 0, every.stderr
    assert every.json == whole.json  # no selection recorded: the same document as without --gpus


def test_gpus_indices_as_before_and_a_bad_word_still_refused(rigcheck: Rigcheck) -> None:
    assert _selected(rigcheck, H100, "--gpus", "0,1") == [0, 1]
    message = rigcheck("doctor", "--from", H100, "--gpus", "most").error()
    assert message == "--gpus takes GPU indices separated by commas (e.g. 0,1) or all, not 'most'"


# --- a mistyped option --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("--gpu", "--gpus"),  # 0.86: bare names, difflib's ratio (cli/app.SUGGEST_RATIO = 0.75)
        ("--jsn", "--json"),  # 0.86
        ("--strcit", "--strict"),  # 0.83
        ("--sohw-unknown", "--show-unknown"),
    ],
)
def test_a_close_typo_is_told_the_option(typed: str, suggested: str, rigcheck: Rigcheck) -> None:
    message = rigcheck("doctor", "--from", H100, typed).error()
    assert message == f"No such option: {typed} (did you mean {suggested}?) (see rigcheck doctor --help)"


@pytest.mark.parametrize("typed", ["--bogus", "--gpuz-all-of-them", "--xyz"])
def test_a_far_typo_is_told_no_option(typed: str, rigcheck: Rigcheck) -> None:
    # --bogus and --gpus are 0.67 alike without their dashes (0.77 with them: click's 0.6 suggested it)
    message = rigcheck("doctor", "--from", H100, typed).error()
    assert message == f"No such option: {typed} (see rigcheck doctor --help)"


def test_the_threshold_is_the_documented_figure() -> None:
    import difflib

    from rigcheck.cli.app import SUGGEST_RATIO

    assert SUGGEST_RATIO == 0.75
    assert difflib.SequenceMatcher(None, "bogus", "gpus").ratio() < SUGGEST_RATIO
    assert difflib.SequenceMatcher(None, "--bogus", "--gpus").ratio() >= 0.6  # what click's cutoff let through


# --- --from DIR -----------------------------------------------------------------------------------------------

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus"


def _machine_dir(tmp_path: Path) -> Path:
    """One machine's saved outputs, as a user keeps them: -q -x and topo -m beside notes and a report."""
    (tmp_path / "q.xml").write_bytes((CORPUS / "h100-vm" / "q.xml").read_bytes())
    (tmp_path / "topo-m.txt").write_bytes((CORPUS / "h100-vm" / "topo-m.txt").read_bytes())
    (tmp_path / "notes.md").write_text("rack 4, bought 2024\n")
    (tmp_path / "report.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "sub").mkdir()  # a folder inside is not read
    return tmp_path


@pytest.mark.parametrize("command", [["doctor"], ["power"], ["thermal"], ["topo"], ["snapshot"]])
def test_from_a_directory_reads_its_machine_files_as_repeated_from(
    command: list[str], tmp_path: Path, rigcheck: Rigcheck
) -> None:
    folder = _machine_dir(tmp_path)
    by_dir = rigcheck(*command, "--from", folder, *([] if command == ["snapshot"] else ["--json"]))
    by_files = rigcheck(
        *command,
        "--from",
        folder / "q.xml",
        "--from",
        folder / "topo-m.txt",
        *([] if command == ["snapshot"] else ["--json"]),
    )
    assert by_dir.code == by_files.code, by_dir.stderr
    assert by_dir.stdout.replace(str(folder), "") == by_files.stdout.replace(str(folder), "")
    assert by_dir.stderr.splitlines() == [
        f"rigcheck: --from {folder}: left out 2 files this command does not read: notes.md, report.png"
    ]


def test_a_directory_snapshot_holds_both_files(tmp_path: Path, rigcheck: Rigcheck) -> None:
    snap = rigcheck("snapshot", "--from", _machine_dir(tmp_path)).json
    assert snap["topology"]["labels"] == ["GPU0"]  # topo-m.txt
    assert snap["gpus"][0]["power_limit_w"] == 700.0  # q.xml


def test_a_directory_and_a_file_combine(tmp_path: Path, rigcheck: Rigcheck) -> None:
    folder = tmp_path / "xml"
    folder.mkdir()
    (folder / "q.xml").write_bytes((CORPUS / "h100-vm" / "q.xml").read_bytes())
    result = rigcheck("snapshot", "--from", folder, "--from", CORPUS / "h100-vm" / "topo-m.txt")
    assert result.code == 0, result.stderr
    assert result.json["topology"]["labels"] == ["GPU0"]
    assert result.stderr == ""  # nothing left out, nothing in conflict


def test_a_directory_of_nothing_readable_is_one_error(tmp_path: Path, rigcheck: Rigcheck) -> None:
    (tmp_path / "notes.md").write_text("rack 4\n")
    message = rigcheck("doctor", "--from", tmp_path).error()
    assert message == f"{tmp_path}: no file in this directory is nvidia-smi output or a rigcheck snapshot (notes.md)"
    empty = tmp_path / "empty"
    empty.mkdir()
    message = rigcheck("topo", "--from", empty).error()
    assert message.endswith("no file in this directory is nvidia-smi output or a rigcheck snapshot (it is empty)")


def test_a_cut_machine_file_in_a_directory_is_still_its_error(tmp_path: Path, rigcheck: Rigcheck) -> None:
    (tmp_path / "rig.json").write_text('{"schema": "rigcheck.snapshot/1", "gpus": [')  # a snapshot cut short
    message = rigcheck("doctor", "--from", tmp_path).error()
    assert message == f"{tmp_path / 'rig.json'}:1: not valid JSON: Expecting value", message


@pytest.mark.parametrize(
    ("command", "holding"), [("verify", "the saved documents"), ("fleet", "one document per node")]
)
def test_verify_and_fleet_say_to_pass_a_directory(command: str, holding: str, rigcheck: Rigcheck) -> None:
    message = rigcheck(command, "--from", H100).error()
    assert message == f"{H100}: not a directory (--from takes the directory holding {holding})"


# --- --model, and --gpu its former name -----------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["--model", "--gpu"])
def test_power_plan_takes_model_and_its_former_name(spelling: str, rigcheck: Rigcheck) -> None:
    result = rigcheck("power", "plan", spelling, "TITAN RTX", "--count", "2", "--json")
    assert result.code == 0, result.stderr
    assert (result.json["gpu"]["name"], result.json["gpu"]["count"]) == ("TITAN RTX", 2)


@pytest.mark.parametrize("spelling", ["--model", "--gpu"])
def test_verify_explain_takes_model_and_its_former_name(spelling: str, rigcheck: Rigcheck) -> None:
    result = rigcheck("verify", "--explain", spelling, "H100 SXM5", spelling, "RTX 4090", "--json")
    assert result.code == 0, result.stderr
    assert [g["name"] for g in result.json["gpus"]] == ["H100 SXM5", "GeForce RTX 4090"]


@pytest.mark.parametrize("command", [["power", "plan", "--count", "2"], ["verify", "--explain"]])
def test_model_and_gpu_together_are_refused_and_gpu_is_hidden(command: list[str], rigcheck: Rigcheck) -> None:
    message = rigcheck(*command, "--model", "RTX 4090", "--gpu", "RTX 4090").error()
    assert message == "--gpu is the former name of --model: give --model only"
    shown = rigcheck(*command[:2] if command[0] == "power" else command[:1], "--help", env={"COLUMNS": "200"})
    assert "--model" in shown.stdout
    assert "--gpu " not in shown.stdout
    assert "--gpu\n" not in shown.stdout


def test_power_plan_without_a_model_says_which_option(rigcheck: Rigcheck) -> None:
    message = rigcheck("power", "plan", "--count", "2").error()
    assert message == "Missing option '--model' (the GPU model, e.g. \"RTX 4090\")"


def test_an_unknown_model_names_the_option(rigcheck: Rigcheck) -> None:
    message = rigcheck("verify", "--explain", "--gpu", "Voodoo 5").error()
    assert message.startswith("--model 'Voodoo 5': not a GPU rigcheck knows"), message
