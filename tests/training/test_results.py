"""Run records and the Table-1 README built from them."""

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from planetrl.cli import main
from planetrl.training.results import PUBLISHED, RECORD_FILES, write_results

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    assert main(["train", "--logdir", str(root / "runs"), "--preset", "debug", "--no-progress"]) == 0
    out = root / "cpu" / "mock" / "seed-0"
    assert main(["results", "export", "--run", str(root / "runs" / "run-00"), "--out", str(out)]) == 0
    return root / "cpu", out


def test_export_writes_the_compact_record_and_nothing_heavy(record):
    _, out = record
    assert sorted(p.name for p in out.iterdir()) == sorted([*RECORD_FILES, "random.json"])
    random = json.loads((out / "random.json").read_text())
    assert len(random["returns"]) == 2 and random["start_time"] > 0  # the debug preset's 2 seed episodes


def test_export_refreshes_its_own_record_and_refuses_to_overwrite_another_runs(record, tmp_path, capsys):
    _, out = record
    run = out.parents[2] / "runs" / "run-00"
    beside = out / "notes.jsonl"  # a measurement kept beside the record survives a refresh
    beside.write_text("{}\n")
    assert main(["results", "export", "--run", str(run), "--out", str(out)]) == 0
    assert beside.read_text() == "{}\n"
    beside.unlink()
    other = tmp_path / "other"
    assert main(["train", "--logdir", str(other), "--preset", "debug", "--seed", "1", "--no-progress"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    assert main(["results", "export", "--run", str(other / "run-00"), "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "holds the record of another run" in err
    assert re.search(r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC, where .* started \d{4}-", err), err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main(["results", "export", "--run", str(other / "run-00"), "--out", str(other / "run-00")]) != 0
    assert "is the run directory itself" in capsys.readouterr().err


def test_table_has_the_tasks_as_columns_and_each_phase_with_its_counts(record, capsys):
    directory, _ = record
    assert main(["results", "table", "--dir", str(directory)]) == 0
    text = (directory / "README.md").read_text()
    assert "| | mock |" in text
    assert "test return at the end" in text and "(12 upd, 5 ep," in text
    assert "Minutes are measured wall-clock." in text
    assert (directory / "mock.png").read_bytes()[:4] == b"\x89PNG"


def test_curves_draw_labelled_records_and_refuse_a_directory_that_is_not_one(record, tmp_path, capsys):
    from planetrl.training.results import load_record, phase_lengths

    _, out = record
    png = tmp_path / "curves.png"
    assert main(["results", "curves", "--record", f"{out}=with", "--record", f"{out}=again", "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    for name, magic in (("curves.pdf", b"%PDF"), ("curves.svg", b"<?xml")):  # by the suffix, not PNG bytes in all
        assert main(["results", "curves", "--record", str(out), "--out", str(tmp_path / name)]) == 0
        assert (tmp_path / name).read_bytes().startswith(magic)
    for bad, message in (("--out", "curves.txt: a figure file ends in .png, .pdf, .svg"),
                         ("--record", "=x: names no directory")):
        argv = {"--record": str(out), "--out": str(tmp_path / "c.png"), bad: str(tmp_path / "curves.txt")
                if bad == "--out" else "=x"}
        assert main(["results", "curves", *[a for pair in argv.items() for a in pair]]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "curves.txt").exists()
    loaded = load_record(out)
    assert phase_lengths(loaded) == [12.0, 12.0]  # the debug task's episodes are 12 decisions
    older = {**loaded, "tests": [{k: v for k, v in t.items() if k != "lengths"} for t in loaded["tests"]],
             "metrics": [{**row, "test/length": 7.0} if "test/return" in row else row for row in loaded["metrics"]]}
    assert phase_lengths(older) == [7.0, 7.0]  # records from before tests.jsonl held lengths: metrics.jsonl's
    assert main(["results", "curves", "--record", str(tmp_path), "--out", str(png)]) == 2
    assert "is not a record (no tests.jsonl)" in capsys.readouterr().err
    # Records of two tasks drew one random-policy line (the mean of both) on one scale.
    other = tmp_path / "other-task"
    shutil.copytree(out, other)
    config = yaml.safe_load((other / "config.yaml").read_text())
    config["env"]["task"] = "mock-3d"
    (other / "config.yaml").write_text(yaml.safe_dump(config))
    png.unlink()
    assert main(["results", "curves", "--record", str(out), "--record", str(other), "--out", str(png)]) == 2
    assert "the records are of 2 tasks (mock, mock-3d); curves compares records of one task" in \
        capsys.readouterr().err
    assert not png.exists()


def test_a_variant_sits_beside_the_preset_record_of_its_seed_with_what_it_changed(record, tmp_path):
    import yaml

    from planetrl.training.results import largest_fall, load_record, load_variants, variants_table

    _, out = record
    directory = tmp_path / "cpu"
    shutil.copytree(out, directory / "mock" / "seed-0")
    assert variants_table(load_variants(directory), [load_record(directory / "mock" / "seed-0")]) == ""
    variant = directory / "mock" / "lr-half" / "seed-0"
    shutil.copytree(out, variant)
    saved = yaml.safe_load((variant / "config.yaml").read_text())
    saved["optim"]["lr"] = saved["optim"]["lr"] / 2
    saved["run"]["stale_seconds"] = 60.0  # how a run was supervised is not a lever
    del saved["model"]["init"]  # a key older code lacked counts at the value that code ran with: torch's
    (variant / "config.yaml").write_text(yaml.safe_dump(saved))
    tests = [json.loads(line) for line in (variant / "tests.jsonl").read_text().splitlines()]
    tests[-1]["returns"] = [100.0] * len(tests[-1]["returns"])
    (variant / "tests.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tests))
    base = load_record(directory / "mock" / "seed-0")
    row = variants_table(load_variants(directory), [base]).splitlines()[-1]
    lr = yaml.safe_load((out / "config.yaml").read_text())["optim"]["lr"]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:5] == ["mock", "lr-half", "0", "the preset",
                         f"`model.init` tf -> torch, `optim.lr` {lr} -> {lr / 2}"]
    assert cells[6].split(", ")[-1] == "100"
    for cell, phases in ((cells[7], tests), (cells[8], base["tests"])):
        means = [sum(t["returns"]) / len(t["returns"]) for t in phases][-3:]
        assert cell.startswith(f"{sum(means) / len(means):.0f} (")
    assert cells[7] != cells[8]
    assert cells[9] == f"{largest_fall(load_record(variant)):.0f}; {largest_fall(base):.0f}"
    assert main(["results", "table", "--dir", str(directory)]) == 0
    assert "## Variants" in (directory / "README.md").read_text()


def _record_as(source, out, task, seed, phase_returns, start=1.0, **changes):
    """A copy of `source` as a record of `task` and `seed` whose test phases, at updates 4, 8, ..., return
    `phase_returns` (five episodes each), the first at time `start`; `changes` ("section.key": value) edit
    its config."""
    import yaml

    shutil.copytree(source, out)
    saved = yaml.safe_load((out / "config.yaml").read_text())
    for key, value in {"env.task": task, "run.seed": seed, "train.total_updates": 12, **changes}.items():
        section, name = key.split(".")
        saved[section][name] = value
    (out / "config.yaml").write_text(yaml.safe_dump(saved))
    (out / "tests.jsonl").write_text("".join(
        json.dumps({"updates": 4 * (n + 1), "returns": [float(r)] * 5, "lengths": [10] * 5, "time": start + n,
                    "train_episodes": 2 + n, "env_steps": 20 * (n + 1)}) + "\n"
        for n, r in enumerate(phase_returns)))
    return out


def test_each_lever_is_one_row_against_the_preset_on_every_task_and_only_finished_runs_count(record, tmp_path):
    from planetrl.training.results import levers_table, load_record, load_variants

    _, out = record
    cpu = tmp_path / "cpu"
    bases = [_record_as(out, cpu / "cartpole-swingup" / "seed-0", "cartpole-swingup", 0, [250, 250, 250]),
             _record_as(out, cpu / "cheetah-run" / "seed-0", "cheetah-run", 0, [150, 150, 150]),
             _record_as(out, cpu / "walker-walk" / "seed-0", "walker-walk", 0, [200, 200, 200])]
    records = [load_record(path) for path in bases]
    assert levers_table(load_variants(cpu), records) == ""
    _record_as(out, cpu / "cartpole-swingup" / "lr-half" / "seed-0", "cartpole-swingup", 0, [300, 400, 500],
               **{"optim.lr": 5e-4})
    _record_as(out, cpu / "cheetah-run" / "lr-half" / "seed-0", "cheetah-run", 0, [100, 100],
               **{"optim.lr": 5e-4})
    _record_as(out, cpu / "walker-walk" / "lr-half" / "seed-0", "walker-walk", 0, [200, 200, 201],
               **{"optim.lr": 5e-4})
    _record_as(out, cpu / "walker-walk" / "lr-half" / "seed-1", "walker-walk", 1, [300, 300, 300],
               **{"optim.lr": 5e-4})
    _record_as(out, cpu / "cheetah-run" / "before-fixes" / "seed-0", "cheetah-run", 0, [0, 0, 0],
               **{"data.prefetch": 2})
    lines = levers_table(load_variants(cpu), records).splitlines()
    assert len(lines) == 3, "the header, its rule and one lever: before-fixes is other code, not a lever"
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header[3:6] == ["cartpole-swingup", "cheetah-run", "walker-walk"]
    assert cells[:3] == ["lr-half", "the preset", "`optim.lr` 0.001 -> 0.0005"]
    assert cells[3] == "s0: **400** vs 250"  # 400 meets cartpole-swingup's 300; 250 does not
    assert cells[4] == "s0: unfinished (8 of 12) vs **150**"
    assert cells[5] == "s0: 200.3 vs 200.0; s1: **300** vs no preset record"  # 200.3: whole numbers read alike
    assert cells[6:] == ["2 of 2", "1 of 2; 0 of 2"]  # neither the unfinished run nor seed 1 counts
    assert main(["results", "table", "--dir", str(cpu)]) == 0
    assert "## Levers, at a glance" in (cpu / "README.md").read_text()


def test_once_the_preset_takes_a_lever_the_old_setting_is_a_variant_and_levers_on_it_are_read_beside_it(
        record, tmp_path):
    """The preset moved from batch 8 to 16: batch 8's record is now a variant, and a lever tried at batch 8
    (half the learning rate) is judged against batch 8, not against the new preset two keys away."""
    from planetrl.training.results import base_of, levers_table, load_record, load_variants, variants_table

    _, out = record
    cpu = tmp_path / "cpu"
    preset = load_record(_record_as(out, cpu / "cheetah-run" / "seed-0", "cheetah-run", 0, [150, 150, 150],
                                    **{"data.batch_size": 16}))
    _record_as(out, cpu / "cheetah-run" / "batch-8" / "seed-0", "cheetah-run", 0, [100, 100, 100],
               **{"data.batch_size": 8})
    _record_as(out, cpu / "cheetah-run" / "lr-half" / "seed-0", "cheetah-run", 0, [120, 120, 120],
               **{"data.batch_size": 8, "optim.lr": 5e-4})
    _record_as(out, cpu / "cheetah-run" / "before-fixes" / "seed-0", "cheetah-run", 0, [90, 90, 90],
               **{"data.batch_size": 8})
    _record_as(out, cpu / "cheetah-run" / "fp32-avx2" / "seed-0", "cheetah-run", 0, [95, 95, 95],
               **{"data.batch_size": 8})  # batch 8 again on another machine: no one's base, batch 8's neither
    _record_as(out, cpu / "cheetah-run" / "batch-8" / "seed-1", "cheetah-run", 1, [100, 100, 100],
               **{"data.batch_size": 8})  # the new preset has not run seed 1
    _record_as(out, cpu / "cheetah-run" / "lr-half" / "seed-1", "cheetah-run", 1, [120, 120, 120],
               **{"data.batch_size": 8, "optim.lr": 5e-4})
    variants = load_variants(cpu)
    seed_one = {Path(v["path"]).parent.name: v for v in variants if v["seed"] == 1}
    assert base_of(seed_one["lr-half"], [preset], variants) is seed_one["batch-8"]
    assert base_of(seed_one["batch-8"], [preset], variants) is None  # lr-half is farther from the preset
    variants = [v for v in variants if v["seed"] == 0]
    names = {Path(v["path"]).parent.name: v for v in variants}
    assert base_of(names["batch-8"], [preset], variants) is preset  # a tie with lr-half (one key each): the preset
    assert base_of(names["lr-half"], [preset], variants) is names["batch-8"]
    assert base_of(names["before-fixes"], [preset], variants) is names["batch-8"]  # same config, older code
    assert base_of(names["fp32-avx2"], [preset], variants) is names["batch-8"]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in levers_table(variants, [preset]).splitlines()[2:]}
    assert sorted(rows) == ["batch-8", "lr-half"]
    assert rows["batch-8"][1:4] == ["the preset", "`data.batch_size` 16 -> 8", "s0: 100 vs **150**"]
    assert rows["lr-half"][1:4] == ["batch-8", "`optim.lr` 0.001 -> 0.0005", "s0: 120 vs 100"]
    assert rows["lr-half"][4:] == ["1 of 1", "0 of 1; 0 of 1"]
    table_rows = {line.split("|")[2].strip(): [c.strip() for c in line.strip("|").split("|")]
                  for line in variants_table(variants, [preset]).splitlines()[2:]}
    assert table_rows["before-fixes"][3:5] == ["batch-8", "nothing"]


def test_a_lever_read_beside_different_records_by_seed_says_what_it_changes_against_each(record, tmp_path):
    """Seed 0 of a lever stands beside the preset's record and seed 1, which the preset has not run, beside the
    old setting's: the row names both changes, so the seed-1 pair is not described by seed 0's one key."""
    from planetrl.training.results import levers_table, load_record, load_variants

    _, out = record
    cpu = tmp_path / "cpu"
    preset = load_record(_record_as(out, cpu / "cheetah-run" / "seed-0", "cheetah-run", 0, [150, 150, 150],
                                    **{"data.batch_size": 16}))
    for seed in (0, 1):
        _record_as(out, cpu / "cheetah-run" / "batch-8" / f"seed-{seed}", "cheetah-run", seed, [100, 100, 100],
                   **{"data.batch_size": 8})
        _record_as(out, cpu / "cheetah-run" / "lr-half" / f"seed-{seed}", "cheetah-run", seed, [120, 120, 120],
                   start=10.0, **{"data.batch_size": 16, "optim.lr": 5e-4})
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in levers_table(load_variants(cpu), [preset]).splitlines()[2:]}
    lr = preset["config"]["optim"]["lr"]
    assert rows["lr-half"][1:4] == [
        "batch-8, the preset",
        f"against the preset: `optim.lr` {lr} -> {lr / 2}; "
        f"against batch-8: `data.batch_size` 8 -> 16, `optim.lr` {lr} -> {lr / 2}",
        "s0: 120 vs **150**; s1: 120 vs 100"]
    assert rows["batch-8"][2].startswith("against the preset: `data.batch_size` 16 -> 8; against lr-half: ")


def test_a_new_run_one_lever_from_an_old_variant_does_not_take_its_base(record, tmp_path):
    """An old variant (batch 16, half the learning rate) is one key from two records: the learning-rate
    variant it was read against and a later run of batch 16 alone. On that tie the record that ran first is
    its base, so adding a run never changes what an old row measures; the name does not decide."""
    from planetrl.training.results import base_of, load_record, load_variants

    _, out = record
    preset = load_record(_record_as(out, tmp_path / "cpu" / "walker-walk" / "seed-0", "walker-walk", 0,
                                    [200, 200, 200]))

    def variants_started(lr_half: float, batch_16: float) -> dict[str, dict]:
        cpu = tmp_path / f"cpu-{lr_half:g}-{batch_16:g}"
        for name, changes, start in [("lr-half", {"optim.lr": 5e-4}, lr_half),
                                     ("both", {"optim.lr": 5e-4, "data.batch_size": 16}, 50.0),
                                     ("a-batch-16", {"data.batch_size": 16}, batch_16)]:
            _record_as(out, cpu / "walker-walk" / name / "seed-0", "walker-walk", 0, [100] * 3, start=start,
                       **changes)
        return {Path(v["path"]).parent.name: v for v in load_variants(cpu)}

    old_first = variants_started(lr_half=60.0, batch_16=90.0)  # "both" ran first, then lr-half, then batch 16
    assert base_of(old_first["both"], [preset], list(old_first.values())) is old_first["lr-half"]
    assert base_of(old_first["a-batch-16"], [preset], list(old_first.values())) is preset
    batch_first = variants_started(lr_half=90.0, batch_16=60.0)
    assert base_of(batch_first["both"], [preset], list(batch_first.values())) is batch_first["a-batch-16"]


def test_idle_rates_turn_counts_into_minutes(record):
    directory, _ = record
    (directory / "rates.json").write_text(json.dumps({"mock": {"seed_s": 60, "update_s": 10, "decision_s": 5,
                                                               "test_phase_s": 30}}))
    try:
        main(["results", "table", "--dir", str(directory)])
        text = (directory / "README.md").read_text()
        # 12 updates x 10 s + 3 collected episodes x 12 decisions x 5 s + 2 test phases x 30 s + 60 s = 7 min
        assert "(12 upd, 5 ep, 0k steps, 7 min)" in text
        assert "since the runs shared the machine." in text  # rates that do not say their CPU: no clause
        for native, clause in [(True, "measured on a 2-core CPU with native bf16,"),
                               (False, "measured on a 2-core CPU without native bf16 (fp32).")]:
            (directory / "rates.json").write_text(json.dumps({"mock": {
                "seed_s": 60, "update_s": 10, "decision_s": 5, "test_phase_s": 30, "cpu_bf16_native": native}}))
            main(["results", "table", "--dir", str(directory)])
            assert clause in (directory / "README.md").read_text()
    finally:
        (directory / "rates.json").unlink()


def test_phase_minutes_prices_records_at_the_rates_hour_budget_printed(record, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import phase_minutes

    _, out = record
    budget = tmp_path / "budget.jsonl"
    budget.write_text(json.dumps({"task": "mock", "preset": "debug", "seed_s": 60, "update_s": 10, "decision_s": 5,
                                  "test_phase_s": 30, "share_planning": 0.5}) + "\n")
    monkeypatch.setattr(sys, "argv", ["phase_minutes.py", str(out), "--hour-budget", str(budget), "--within", "6.5"])
    phase_minutes.main()
    line = json.loads(capsys.readouterr().out)
    assert [p["minutes"] for p in line["phases"]][-1] == 7.0  # as the table prices it above
    assert [p["length"] for p in line["phases"]] == [12.0, 12.0]  # the debug task's episodes are 12 decisions
    assert line["length_within_6.5_min"] == 12.0
    assert line["phases_within"] == len(line["phases"]) - 1 and line["mean_within_6.5_min"] is not None
    budget.write_text(json.dumps({"task": "other", "seed_s": 1, "update_s": 1, "decision_s": 1,
                                  "test_phase_s": 1}) + "\n")
    with pytest.raises(SystemExit, match="no rates for task 'mock'"):
        phase_minutes.main()
    rates = tmp_path / "rates.json"  # a results folder's rates, the updates priced at twice their rate
    rates.write_text(json.dumps({"mock": {"seed_s": 60, "update_s": 10, "decision_s": 5, "test_phase_s": 30}}))
    monkeypatch.setattr(sys, "argv", ["phase_minutes.py", str(out), "--rates", str(rates), "--update-scale", "2"])
    phase_minutes.main()
    line = json.loads(capsys.readouterr().out)
    assert line["phases"][-1]["minutes"] == 7.0 + 12 * 10 / 60  # 12 updates, each 10 s dearer
    rates.write_text(json.dumps({"mock": {"seed_s": 60}}))
    with pytest.raises(SystemExit):
        phase_minutes.main()
    assert f"--rates {rates}: 'mock' must hold seed_s, update_s, decision_s, test_phase_s" in capsys.readouterr().err


def test_a_damaged_rates_file_is_named_and_stops_the_table_where_a_damaged_run_info_costs_only_its_commit(
        record, tmp_path, caplog):
    """Every minute in the table rests on rates.json, so a torn one stops it, naming the file; run_info.json
    gives a variant's commit alone, and a torn one shows as '?' with a warning naming it. Both stopped the
    table with a bare JSONDecodeError that named no file."""
    from planetrl.training.results import _commit, read_rates

    rates = tmp_path / "rates.json"
    assert read_rates(rates) == {}
    good = {"seed_s": 60, "update_s": 10, "decision_s": 5, "test_phase_s": 30}
    for damage, says in [('{"mock": {"seed_s": 6', "cannot be read"),
                         ("[1, 2]", "must map each task to {seed_s, update_s, decision_s, test_phase_s}, got list"),
                         (json.dumps({"mock": {**good, "update_s": None}}), "'mock' must hold seed_s"),
                         (json.dumps({"mock": {**good, "decision_s": -1}}), "numbers of at least 0"),
                         (json.dumps({"mock": {**good, "test_phase_s": True}}), "'mock' must hold")]:
        rates.write_text(damage)
        with pytest.raises(ValueError, match=rf"{re.escape(str(rates))}.*{re.escape(says)}"):
            read_rates(rates)
    rates.write_text(json.dumps({"mock": good}))
    assert read_rates(rates) == {"mock": good}
    run = tmp_path / "run"
    run.mkdir()
    (run / "run_info.json").write_text('{"git_commit": "0123456789ab"}')
    assert _commit({"path": run}) == "0123456"
    (run / "run_info.json").write_text('{"git_com')
    with caplog.at_level("WARNING"):
        assert _commit({"path": run}) == "?"
    assert str(run / "run_info.json") in caplog.text
    directory, _ = record
    (directory / "rates.json").write_text("{")
    try:
        with pytest.raises(ValueError, match=r"rates\.json cannot be read"):
            write_results(directory)
    finally:
        (directory / "rates.json").unlink()


def test_published_figures_cover_the_six_paper_tasks():
    assert set(PUBLISHED) == {"cartpole-swingup", "reacher-easy", "cheetah-run", "finger-spin", "cup-catch",
                              "walker-walk"}
    assert PUBLISHED["cheetah-run"]["planet_100k"] == 138 and PUBLISHED["walker-walk"]["planet_paper"] == 951


def test_minutes_leave_out_the_time_a_resumed_run_was_not_running():
    from planetrl.training.results import active_seconds

    record = {"random": {"start_time": 0.0, "claims": [{"time": 0.0}, {"time": 1000.0}]},
              "metrics": [{"time": 10.0}, {"time": 100.0}, {"time": 1010.0}, {"time": 1100.0}],
              "tests": [{"time": 100.0}, {"time": 1100.0}]}
    assert active_seconds(record, 100.0) == 100.0  # before the resume: plain wall-clock
    assert active_seconds(record, 1100.0) == 200.0  # 900 s between the last log and the resume left out
    record["random"]["claims"] = [{"time": 0.0}]  # never resumed: nothing left out
    assert active_seconds(record, 1100.0) == 1100.0


def _fake(task, phases, random=(10.0, 20.0), total=None):
    """A record with one test phase per list of returns, at updates 1, 2, ...; finished unless `total` is later."""
    return {"task": task, "random": {"returns": list(random)},
            "config": {"train": {"total_updates": total or len(phases)}},
            "tests": [{"returns": list(r), "updates": n} for n, r in enumerate(phases, 1)]}


def test_the_goal_counts_only_three_phases_of_five_episodes_each():
    from planetrl.training.results import _last_three, goal

    assert goal(_fake("cheetah-run", [])) == 140
    assert goal(_fake("cup-catch", [], random=(10.0, 20.0))) == 30  # twice the random policy's 15
    assert goal(_fake("mock", [])) is None
    five = [[150.0] * 5] * 3
    assert _last_three(_fake("cheetah-run", [[0.0] * 5, *five])) == "150 (15 episodes; goal met)"
    assert _last_three(_fake("cheetah-run", [[130.0] * 5] * 3)).endswith("goal not met)")
    assert _last_three(_fake("cheetah-run", [[139.96] * 5] * 3)) == "139.96 (15 episodes; goal not met)"
    # the same returns from two-episode phases do not count, however high they are
    assert "not the goal's measure" in _last_three(_fake("cheetah-run", [[500.0] * 2] * 3))
    assert "not the goal's measure" in _last_three(_fake("cheetah-run", [[500.0] * 5] * 2))
    assert _last_three(_fake("mock", [[1.0] * 2])) == "1 (2 episodes)"
    # a run that has not reached its last update has no end to measure yet
    assert ("unfinished at 3 of 7 updates: not the goal's measure"
            in _last_three(_fake("cheetah-run", five, total=7)))
    assert _last_three(_fake("cheetah-run", [])) == "-"


def test_the_mean_over_seeds_counts_only_runs_measured_by_the_goal_and_says_how_it_stands():
    from planetrl.training.results import seeds_mean

    high, low = _fake("cheetah-run", [[150.0] * 5] * 3), _fake("cheetah-run", [[120.0] * 5] * 3)
    unfinished = _fake("cheetah-run", [[900.0] * 5] * 3, total=7)
    assert seeds_mean([high, low, unfinished]) == "135.0 +- 15.0 (1 of 2 seeds at the goal; the mean misses 140)"
    assert seeds_mean([high]) == "150.0 (1 of 1 seed at the goal; the mean meets 140)"
    # a mean that would print as the goal while under it keeps its second decimal
    assert seeds_mean([_fake("walker-walk", [[224.96] * 5] * 3)]).startswith("224.96 (")
    assert seeds_mean([unfinished, _fake("cheetah-run", [[500.0] * 2] * 3)]) == "-"
    # 2x-random goals that differ between seeds give no single verdict for the mean
    cups = [_fake("cup-catch", [[100.0] * 5] * 3, random=(10.0, 20.0)),
            _fake("cup-catch", [[100.0] * 5] * 3, random=(40.0, 60.0))]
    assert seeds_mean(cups) == "100.0 +- 0.0 (2 of 2 seeds at the goal)"


def test_a_2x_random_goal_reads_the_folders_random_policy_measurement_and_its_damage_fails(tmp_path):
    from planetrl.training.results import _goal_cell, _with_random_policy, goal, load_random_policy

    seed_episodes = _fake("reacher-easy", [], random=(11.0, 201.0, 12.0, 253.0, 244.0))
    assert goal(seed_episodes) == pytest.approx(2 * 144.2)  # no measurement: the run's own 5 seed episodes
    assert _goal_cell(seed_episodes) == "288 (2x random, its seed episodes)"
    lines = [{"task": "reacher-easy", "mean": 999.0, "returns": [0.0, 40.0, 80.0, 120.0]},  # mean recomputed: 60
             {"task": "cheetah-run", "returns": [5.0, 7.0]}]
    (tmp_path / "random-policy.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    measured = load_random_policy(tmp_path)
    assert measured["reacher-easy"]["mean"] == 60.0 and measured["reacher-easy"]["episodes"] == 4
    other_seed = _fake("reacher-easy", [], random=(33.0, 34.0))
    cheetah = _fake("cheetah-run", [])
    _with_random_policy([seed_episodes, other_seed, cheetah], tmp_path)
    assert goal(seed_episodes) == goal(other_seed) == 120.0  # one yardstick per task, whatever a seed drew
    assert _goal_cell(other_seed) == "120 (2x random, 4 episodes)"
    assert goal(cheetah) == 140  # a fixed goal stays fixed
    assert load_random_policy(tmp_path / "elsewhere") == {}
    for damage, says in [('{"task": "reacher-easy", "returns": [1.0, 2.0]}\n{"task": "reach', "line 2"),
                         ('{"task": "reacher-easy", "returns": [1.0]}\n', "at least 2 episodes"),
                         ('{"task": "reacher-easy", "returns": [1.0, NaN]}\n', "finite returns"),
                         ('{"task": "reacher-easy", "returns": [1.0, true]}\n', "finite returns"),
                         ('{"task": "cup-catch", "returns": [1, 2]}\n{"task": "cup-catch", "returns": [3, 4]}\n',
                          "measured twice")]:
        (tmp_path / "random-policy.jsonl").write_text(damage)
        with pytest.raises(ValueError, match=says):
            load_random_policy(tmp_path)


def test_the_largest_fall_is_how_far_a_phase_fell_below_the_best_one_before_it():
    from planetrl.training.results import largest_fall

    # cheetah-run's issue run: best 170 then 72, best 275 then 86: the fall that counts is 189
    issue_run = [[r] * 5 for r in (92.0, 121.0, 170.0, 72.0, 275.0, 86.0, 104.0)]
    assert largest_fall(_fake("cheetah-run", issue_run)) == pytest.approx(189.0)
    assert largest_fall(_fake("cheetah-run", [[10.0] * 5, [20.0] * 5, [30.0] * 5])) == 0.0  # held every gain
    assert largest_fall(_fake("cheetah-run", [[10.0, 30.0], [15.0] * 2])) == pytest.approx(5.0)  # phase means
    assert largest_fall(_fake("cheetah-run", [[10.0] * 5])) is None


def test_each_shortfall_names_its_cause_and_a_typo_in_the_causes_fails(tmp_path):
    from planetrl.training.results import _cause_cell, load_causes, variant_causes

    short = {**_fake("cheetah-run", [[100.0] * 5] * 3), "seed": 0, "path": tmp_path / "cheetah-run" / "seed-0"}
    met = {**_fake("cheetah-run", [[200.0] * 5] * 3), "seed": 1, "path": tmp_path / "cheetah-run" / "seed-1"}
    assert [_cause_cell(r, {}) for r in (short, met)] == ["not yet found", "-"]  # a shortfall says it is unexplained
    (tmp_path / "causes.json").write_text(json.dumps({"cheetah-run/seed-0": {"part": "planner", "why": "flips"}}))
    causes = load_causes(tmp_path, [short, met])
    assert [_cause_cell(r, causes) for r in (short, met)] == ["planner: flips", "-"]
    (tmp_path / "causes.json").write_text(json.dumps({"cheetah-run/seed-7": {"part": "planner", "why": "x"}}))
    with pytest.raises(ValueError, match="'cheetah-run/seed-7' names no record here; records: cheetah-run/seed-0"):
        load_causes(tmp_path, [short, met])
    (tmp_path / "causes.json").write_text(json.dumps({"cheetah-run/seed-0": {"part": "luck", "why": "x"}}))
    with pytest.raises(ValueError, match="one of model, planner, schedule"):
        load_causes(tmp_path, [short, met])
    (tmp_path / "causes.json").write_text(json.dumps({"cheetah-run/seed-1": {"part": "planner", "why": "x"}}))
    with pytest.raises(ValueError, match="'cheetah-run/seed-1' meets its goal; remove its cause"):
        load_causes(tmp_path, [short, met])
    old = {**short, "path": tmp_path / "cheetah-run" / "batch-8" / "seed-0"}  # was the preset's, now a variant
    (tmp_path / "causes.json").write_text(json.dumps({"cheetah-run/batch-8/seed-0": {"part": "model", "why": "y"}}))
    causes = load_causes(tmp_path, [short, met], [old])
    assert [_cause_cell(r, causes) for r in (short, old)] == ["not yet found", "model: y"]
    assert variant_causes([old], causes) == ("- **cheetah-run/batch-8/seed-0**, last three phases 100 (15 episodes; "
                                             "goal not met). model: y\n")
    with pytest.raises(ValueError, match="'cheetah-run/batch-8/seed-0' names no record here"):
        load_causes(tmp_path, [short, met])
    (tmp_path / "causes.json").write_text("[]")
    with pytest.raises(ValueError, match="must hold an object keyed by TASK/seed-N, got list"):
        load_causes(tmp_path, [short, met])
    (tmp_path / "causes.json").write_text("{")
    with pytest.raises(ValueError, match="is not valid JSON"):
        load_causes(tmp_path, [short, met])


def test_the_hours_goal_reads_the_last_phase_within_60_minutes_and_each_shortfall_names_its_cause(tmp_path):
    from planetrl.training.results import _hour_cause_cell, hour_mean, hour_short, load_causes

    # idle rates that put phase n at 20n minutes: phases 1-3 fall within the hour, phase 4 does not
    rates = {"cup-catch": {"seed_s": 0.0, "update_s": 1200.0, "decision_s": 0.0, "test_phase_s": 0.0}}

    def run(seed, phase_means):
        record = _fake("cup-catch", [[m] * 5 for m in phase_means], random=(10.0, 20.0))  # 2x random: 30
        return {**record, "seed": seed, "decisions_at": [], "path": tmp_path / "cup-catch" / f"seed-{seed}"}

    late = run(0, [0.0, 0.0, 29.0, 900.0])  # rises only after the hour: its 60-minute phase is the third
    early = run(1, [0.0, 40.0, 0.0, 900.0])  # passed 30 at 40 minutes, then fell: the last phase counts
    on_time = run(2, [0.0, 0.0, 30.0, 0.0])
    assert [hour_short(r, rates) for r in (late, early, on_time)] == [True, True, False]
    assert hour_mean([late, on_time], rates) == "29.5 +- 0.5 (1 of 2 seeds at 2x random; the mean misses 30.0)"
    assert hour_mean([on_time], rates) == "30.0 (1 of 1 seed at 2x random; the mean meets 30.0)"
    slow = {**run(3, [500.0]), "tests": [{"returns": [500.0] * 5, "updates": 4}]}  # first tests at 80 minutes
    assert hour_short(slow, rates) and hour_mean([slow], rates) == "-"
    assert hour_mean([on_time, slow], rates) == "30.0 (1 of 2 seeds at 2x random)"  # no mean claimed for both
    (tmp_path / "causes.json").write_text(json.dumps({"cup-catch/seed-0/60-min": {"part": "schedule", "why": "late"}}))
    causes = load_causes(tmp_path, [late, on_time], rates=rates)
    assert [_hour_cause_cell(r, causes, rates) for r in (late, early, on_time)] == \
        ["schedule: late", "not yet found", "-"]
    for key, says in [("cup-catch/seed-2/60-min", "tests at least 2x random within 60 minutes; remove its cause"),
                      ("cup-catch/seed-9/60-min", "names no record here"),
                      ("cup-catch/batch-8/seed-0/60-min", "names no record here")]:  # the table shows no variant's hour
        (tmp_path / "causes.json").write_text(json.dumps({key: {"part": "model", "why": "x"}}))
        with pytest.raises(ValueError, match=says):
            load_causes(tmp_path, [late, on_time], [{**late, "path": tmp_path / "cup-catch" / "batch-8" / "seed-0"}],
                        rates=rates)


def test_the_committed_cpu_table_is_what_its_records_and_notes_make(tmp_path, monkeypatch):
    # The published table must not go stale: NOTES.md or a record edited without regenerating shows here.
    committed = Path(__file__).resolve().parents[2] / "results" / "cpu"
    shutil.copytree(committed, tmp_path / "results" / "cpu")
    monkeypatch.chdir(tmp_path)
    assert main(["results", "table", "--dir", "results/cpu"]) == 0
    assert (tmp_path / "results" / "cpu" / "README.md").read_text() == (committed / "README.md").read_text()


@pytest.mark.parametrize(("name", "damage", "says"), [
    ("config.yaml", '{"env": [', "config.yaml is not a run's config (ParserError"),
    ("config.yaml", "just text", "config.yaml is not a run's config (no env.task or run.seed)"),
    ("config.yaml", "env: {}\nrun: {seed: 0}\n", "config.yaml is not a run's config (no env.task or run.seed)"),
    ("config.yaml", None, "config.yaml is not a run's config (FileNotFoundError"),
    ("random.json", "[1, 2]", "random.json lacks the seed episodes' returns"),
    ("random.json", '{"returns": [1', "random.json lacks the seed episodes' returns"),
    ("random.json", None, "random.json lacks the seed episodes' returns"),
    ("metrics.jsonl", "cut", "metrics.jsonl ends at update"),
])
def test_a_damaged_record_stops_the_table_naming_its_file(record, tmp_path, capsys, name, damage, says):
    """A table built from half a run's log would publish wrong minutes and counts, so it is refused."""
    _, out = record
    copy = tmp_path / "cpu" / "mock" / "seed-0"
    shutil.copytree(out, copy)
    if damage is None:
        (copy / name).unlink()
    elif damage == "cut":
        lines = (copy / name).read_text().splitlines()
        (copy / name).write_text("\n".join(lines[:len(lines) // 2]) + "\n")
    else:
        (copy / name).write_text(damage)
    assert main(["results", "table", "--dir", str(tmp_path / "cpu")]) == 2
    err = capsys.readouterr().err
    assert str(copy / name) in err and says in err and f"--out {copy}`" in err
    assert not (tmp_path / "cpu" / "README.md").exists()


def test_a_torn_random_policy_measurement_stops_the_table_naming_its_line(record, tmp_path, capsys):
    """Skipping the torn line would quietly hand a task's goal back to its runs' few seed episodes."""
    _, out = record
    shutil.copytree(out, tmp_path / "cpu" / "mock" / "seed-0")
    measured = tmp_path / "cpu" / "random-policy.jsonl"
    measured.write_text('{"task": "mock", "returns": [1.0, 2.0, 3.0]}\n{"task": "mo')
    assert main(["results", "table", "--dir", str(tmp_path / "cpu")]) == 2
    err = capsys.readouterr().err
    assert str(measured) in err and "line 2" in err and "random_policy.py" in err
    assert not (tmp_path / "cpu" / "README.md").exists()
    measured.write_text('{"task": "mock", "returns": [1.0, 2.0, 3.0]}\n')
    assert main(["results", "table", "--dir", str(tmp_path / "cpu")]) == 0
    assert "| 2.0 +- 0.6 (3 episodes) |" in (tmp_path / "cpu" / "README.md").read_text()

def test_the_readme_summary_shows_what_the_committed_records_hold():
    """The project README's results table quotes each main record; a record replaced without it shows here."""
    from planetrl.training.results import GOALS, goal, last_three_figure, load_records, random_return, seeds_mean

    root = Path(__file__).resolve().parents[2]
    text = (root / "README.md").read_text()
    header = ("| task | random policy | `cpu` preset | mean over seeds | goal | PlaNet at 100k steps "
              "| Dreamer at 100k steps |")
    assert header in text
    rows = text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    shown = {cells[0]: cells[1:] for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)}
    assert sorted(shown) == sorted(GOALS)
    by_task: dict[str, list] = {}
    for record in load_records(root / "results" / "cpu"):
        by_task.setdefault(record["task"], []).append(record)
    for task, (random, preset, mean, target, planet, dreamer) in shown.items():
        records = by_task[task]
        assert preset == "; ".join(last_three_figure(r) for r in records), task
        assert mean == seeds_mean(records).split(" ")[0], task
        assert random == f"{random_return(records[0])[0]:.1f}", task
        assert target.split(" (")[0] == f"{goal(records[0]):.0f}", task
        assert (planet, dreamer) == (str(PUBLISHED[task]["planet_100k"]), str(PUBLISHED[task]["dreamer_100k"]))


def test_hour_budget_prices_the_preset_with_the_overrides_it_is_given(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import hour_budget

    built = []
    real_build = hour_budget.C.build
    monkeypatch.setattr(hour_budget.C, "build", lambda preset, overrides: built.append(overrides)
                        or real_build(preset, overrides))
    result = hour_budget.measure("mock", "debug", 4, ("data.batch_size=2",))
    assert result["overrides"] == ["data.batch_size=2"] and result["update_s"] > 0
    assert len(built) == 2 and all("data.batch_size=2" in overrides for overrides in built)  # trained and priced
    out = capsys.readouterr()
    assert out.out == "" and "run-00 update 4/4" in out.err  # progress to stderr, so stdout stays JSON lines
    with pytest.raises(ValueError, match=r"optim\.lrr"):
        hour_budget.measure("mock", "debug", 4, ("optim.lrr=1",))
    monkeypatch.setattr(sys, "argv", ["hour_budget.py", "--tasks", "mock", "--set", "data.batch_size=2",
                                      "--rates", "rates.json"])
    builds = len(built)
    with pytest.raises(SystemExit):  # refused before any measuring: no config was built
        hour_budget.main()
    assert len(built) == builds


def test_lever_goals_counts_the_tasks_each_group_meets_and_prices_only_the_levers_updates(
        record, tmp_path, monkeypatch, capsys):
    """The preset decision of issue 13 weighs tasks at the goal at the end against tasks at 2x random within
    the hour; the lever's updates cost more, so only its phases move later, and only finished runs count."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import lever_goals

    _, out = record
    cpu = tmp_path / "cpu"
    _record_as(out, cpu / "cartpole-swingup" / "seed-0", "cartpole-swingup", 0, [250, 250, 250])
    _record_as(out, cpu / "cartpole-swingup" / "lever" / "seed-0", "cartpole-swingup", 0, [300, 400, 500],
               **{"loss.overshooting": 3})
    _record_as(out, cpu / "walker-walk" / "seed-0", "walker-walk", 0, [200, 200, 200])
    _record_as(out, cpu / "walker-walk" / "seed-1", "walker-walk", 1, [260, 260, 260])
    _record_as(out, cpu / "walker-walk" / "lever" / "seed-0", "walker-walk", 0, [200, 200, 201],
               **{"loss.overshooting": 3})
    _record_as(out, cpu / "walker-walk" / "lever" / "seed-2", "walker-walk", 2, [300, 300, 300],
               **{"loss.overshooting": 3})
    _record_as(out, cpu / "cheetah-run" / "seed-0", "cheetah-run", 0, [150, 150, 150])
    _record_as(out, cpu / "cheetah-run" / "lever" / "seed-0", "cheetah-run", 0, [500, 500],  # unfinished
               **{"loss.overshooting": 3})
    (cpu / "random-policy.jsonl").write_text("".join(
        json.dumps({"task": task, "returns": [mean - 1, mean + 1]}) + "\n"
        for task, mean in [("cartpole-swingup", 140), ("walker-walk", 110), ("cheetah-run", 10)]))
    # test phases at 4, 8 and 12 updates: 20, 40 and 60 idle minutes; at twice the update, 40, 80 and 120
    rates = {task: {"seed_s": 0, "update_s": 300, "decision_s": 0, "test_phase_s": 0}
             for task in ("cartpole-swingup", "walker-walk", "cheetah-run")}
    (cpu / "rates.json").write_text(json.dumps(rates))
    monkeypatch.setattr(sys, "argv", ["lever_goals.py", str(cpu), "lever", "--update-scale", "2"])
    lever_goals.main()
    *rows, summary = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_task = {row["task"]: row for row in rows}
    assert sorted(by_task) == ["cartpole-swingup", "walker-walk"]  # cheetah-run's lever run did not finish
    cartpole, walker = by_task["cartpole-swingup"], by_task["walker-walk"]
    assert cartpole["lever"] == {"seeds": [0], "end": 400.0, "end_goal": 300, "end_met": True,
                                 "hour": 300.0, "hour_goal": 280.0, "hour_met": True}
    assert cartpole["preset_same_seeds"]["end_met"] is False and cartpole["preset_same_seeds"]["hour"] == 250.0
    assert walker["lever"]["seeds"] == [0, 2] and walker["lever"]["end"] == round((200 + 200 + 201) / 6 + 150, 1)
    assert walker["lever"]["end_met"] and walker["lever"]["hour"] == 250.0 and walker["lever"]["hour_met"]
    assert walker["preset_same_seeds"]["seeds"] == [0] and not walker["preset_same_seeds"]["end_met"]
    assert walker["preset"]["seeds"] == [0, 1] and walker["preset"]["end"] == 230.0 and walker["preset"]["end_met"]
    assert summary == {"tasks": 2, "lever": {"end_met": 2, "hour_met": 2},
                       "preset_same_seeds": {"end_met": 0, "hour_met": 0}, "preset": {"end_met": 1, "hour_met": 1}}
    monkeypatch.setattr(sys, "argv", ["lever_goals.py", str(cpu), "levr"])
    with pytest.raises(SystemExit):
        lever_goals.main()
    assert "no finished run of variant 'levr'" in capsys.readouterr().err
