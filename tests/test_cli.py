import argparse
import subprocess
import sys

import pytest
import yaml

from planetrl import config as C
from planetrl.cli import build_parser, main
from planetrl.data.episodes import list_episodes, read_episode


def test_collect_writes_episodes_through_processes(tmp_path, capsys):
    out = tmp_path / "eps"
    code = main(["collect", "--task", "mock", "--episodes", "3", "--processes", "2", "--outdir", str(out),
                 "--set", "env.image_size=24", "--gif"])
    assert code == 0
    files = list_episodes(out)
    assert len(files) == 3
    episode = read_episode(files[0])
    assert episode["image"].shape == (51, 24, 24, 3)
    assert (out / "episode.gif").read_bytes()[:6] == b"GIF89a"
    assert "wrote 3 episodes" in capsys.readouterr().out
    before = {f.name for f in files}
    assert main(["collect", "--task", "mock", "--episodes", "3", "--processes", "2", "--outdir", str(out),
                 "--set", "env.image_size=24"]) == 0
    assert "already held 3 episode files" in capsys.readouterr().out  # the same seed collects the same again
    images = sorted(read_episode(f)["image"].tobytes() for f in list_episodes(out) if f.name not in before)
    assert images == sorted(read_episode(f)["image"].tobytes() for f in files)


def test_bad_config_value_is_a_clear_error(tmp_path, capsys):
    code = main(["collect", "--task", "mock", "--outdir", str(tmp_path), "--set", "env.image_size=7"])
    assert code == 2
    assert "env.image_size" in capsys.readouterr().err


def _commands(parser, prefix=()):
    """Every (command path, parser), nested sub-commands included."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*prefix, name))


def test_every_command_and_option_has_help():
    paths = []
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            if action.dest != "help":
                assert action.help, f"planetrl {' '.join(path)}: option {action.dest} has no help"
        paths.append(path)
    assert ("ppo", "train") in paths and ("ppo", "visualize") in paths
    for path in paths:
        result = subprocess.run([sys.executable, "-m", "planetrl.cli", *path, "--help"], capture_output=True,
                                text=True, check=True)
        assert "usage: planetrl" in result.stdout


@pytest.mark.parametrize("args", [["tasks", "mock", "cartpole-swingup"], ["tasks", "--no-spaces"]])
def test_tasks_lists_defaults(args, capsys):
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "cartpole-swingup" in out and "mock" in out
    footer = out.strip().splitlines()[-1]  # the families resolved by name, not listed (carla:TOWN was missing)
    assert all(family in footer for family in ("gym:<Gymnasium id>", "dmc:<domain>-<task>", "carla:<town>"))


def test_tasks_reports_a_task_it_cannot_build_on_its_line_and_lists_the_rest(capsys):
    """`planetrl tasks carla:Town01` without the CARLA client ended in a traceback."""
    from planetrl.envs.registry import _REGISTRY, TaskSpec, make_mock, register

    def no_server(**_):
        raise ConnectionError("no simulator at localhost:2000")

    register(TaskSpec("needs-server", no_server, image_size=16))
    register(TaskSpec("needs-module", make_mock, image_size=16, requires=("planetrl_no_such_module",), extra="x"))
    try:
        assert main(["tasks", "needs-server", "needs-module", "mock"]) == 1
    finally:
        for name in ("needs-server", "needs-module"):
            _REGISTRY.pop(name)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("needs-server") and lines[1].endswith("cannot be built here: no simulator at "
                                                                    "localhost:2000")
    assert "cannot be built here: task 'needs-module' needs the 'planetrl_no_such_module' module" in lines[2]
    assert lines[3].startswith("mock") and "Box(" in lines[3]


def test_version(capsys):
    import planetrl

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"planetrl {planetrl.__version__}"


@pytest.mark.parametrize("command", [["train"], ["collect"], ["sweep"], ["config"], ["ppo", "train"], ["eval"]])
def test_every_help_fits_on_one_screen_and_points_to_the_keys(command, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 50
    assert "model.belief_size" not in out  # the keys are listed where asked for


def test_config_keys_by_section(capsys):
    assert main(["config", "--keys", "ppo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[ppo]") and "ppo.kl_target" in out and "model." not in out
    assert main(["config", "--keys", "planner"]) == 0
    assert "planner.candidates = 1000" in capsys.readouterr().out
    assert main(["config", "--keys", "nope"]) == 2


def test_config_keys_of_single_keys_and_the_close_names_of_a_typo(capsys):
    assert main(["config", "--keys", "planner.horizon"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[planner]", "  planner.horizon = 12",
                                                   "      Planning horizon in decisions."]
    assert main(["config", "--keys", "trian"]) == 2
    assert "Did you mean: train" in capsys.readouterr().err
    assert main(["config", "--keys", "planner.horizn"]) == 2
    assert "Did you mean: planner.horizon" in capsys.readouterr().err


def test_a_file_where_an_output_directory_goes_is_one_line_before_any_work(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("a file the user keeps")
    assert main(["collect", "--task", "mock", "--episodes", "1", "--outdir", str(taken)]) == 2
    assert f"--outdir {taken} is a file, not a directory" in capsys.readouterr().err
    run = tmp_path / "logdir" / "run-00"
    run.mkdir(parents=True)
    C.save(C.build("debug"), run / "config.yaml")
    assert main(["results", "export", "--run", str(run), "--out", str(taken)]) == 2
    assert f"--out {taken} is a file, not a directory" in capsys.readouterr().err
    assert taken.read_text() == "a file the user keeps"


@pytest.mark.parametrize(("command", "flag", "bad"), [
    (["collect", "--task", "mock"], "--episodes", "0"),
    (["collect", "--task", "mock", "--gif"], "--gif-scale", "0"),
    (["collect", "--task", "mock", "--gif"], "--fps", "0"),
    (["eval", "--run", "RUN"], "--episodes", "0"),
    (["visualize", "--run", "RUN", "--out", "OUT"], "--episodes", "-1"),
    (["ppo", "eval", "--run", "RUN"], "--episodes", "0"),
    (["ppo", "visualize", "--run", "RUN", "--out", "OUT"], "--episodes", "0"),
    (["sweep", "--tasks", "mock", "--logdir", "OUT"], "--parallel", "0"),
    (["sweep", "--tasks", "mock", "--logdir", "OUT", "--backend", "ray"], "--cpus-per-run", "-1"),
    (["sweep", "--tasks", "mock", "--logdir", "OUT", "--backend", "ray"], "--gpus-per-run", "-0.5"),
    (["status", "--logdir", "OUT"], "--stale-seconds", "-1"),  # every running run would read as stale
])
def test_a_count_below_its_least_is_refused_before_any_work(tmp_path, capsys, command, flag, bad):
    """0 frames a second was a ZeroDivisionError after the episodes were written; 0 episodes a remark about
    a batch of environments; --parallel 0 ran one at a time without a word."""
    out = tmp_path / "out"
    argv = [str(out) if a == "OUT" else str(tmp_path / "run-00") if a == "RUN" else a for a in command]
    with pytest.raises(SystemExit) as done:
        main([*argv, *(["--outdir", str(out)] if command[0] == "collect" else []), flag, bad])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: must be at least" in err and f"got {bad}" in err
    assert not out.exists()


def test_a_count_that_is_not_a_number_is_named(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--run", "r", "--episodes", "ten"])
    assert "argument --episodes: expected an integer, got 'ten'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["eval", "--run", "RUN", "--json", "BLOCKED/eval.json"],
    ["ppo", "eval", "--run", "RUN", "--json", "BLOCKED/eval.json"],
    ["visualize", "--run", "RUN", "--out", "BLOCKED/videos"],
    ["ppo", "visualize", "--run", "RUN", "--out", "BLOCKED/videos"],
    ["report", "--logdir", "RUN", "--out", "BLOCKED/report"],
    ["results", "curves", "--record", "RUN", "--out", "BLOCKED/curves.png"],
    ["collect", "--task", "mock", "--episodes", "1", "--outdir", "BLOCKED/episodes"],
])
def test_a_file_in_the_way_of_an_output_is_named_before_any_work(tmp_path, capsys, command):
    """These wrote at the end, so a file where their directory goes failed the finished work with an Errno
    naming a temporary file; the run given does not exist, so any work would fail on it first."""
    blocked = tmp_path / "notes.txt"
    blocked.write_text("a file the user keeps")
    argv = [a.replace("BLOCKED", str(blocked)).replace("RUN", str(tmp_path / "no-run")) for a in command]
    assert main(argv) == 2
    output = next(a for a in argv if a.startswith(str(blocked)))
    assert f"{output}: {blocked} is a file, not a directory" in capsys.readouterr().err  # names what was asked
    assert blocked.read_text() == "a file the user keeps"


def test_episodes_too_short_for_a_training_chunk_are_named_before_any_episode_is_collected(tmp_path, capsys):
    """The debug preset's 12 env steps are two cartpole decisions at action repeat 8: this once collected 22
    random episodes before failing on a chunk none of them could hold."""
    logdir = tmp_path / "logdir"
    assert main(["train", "--preset", "debug", "--task", "cartpole-swingup", "--logdir", str(logdir)]) == 2
    err = capsys.readouterr().err
    assert ("task 'cartpole-swingup' ends its episodes after 2 decisions (env.episode_steps 12 at action repeat 8), "
            "so none holds the 6 images of a training chunk") in err
    assert "lower data.chunk_length to at most 3 or raise env.episode_steps to at least 40" in err
    assert not logdir.exists()
    from planetrl.training.runner import check_chunk_fits

    check_chunk_fits(C.build("debug", ["env.task=cartpole-swingup", "env.episode_steps=40"]))  # 5 decisions, 6 images
    check_chunk_fits(C.build("debug", ["env.task=cartpole-swingup", "data.chunk_length=3"]))
    check_chunk_fits(C.build("debug", ["env.task=cartpole-swingup", "data.cross_episodes=true"]))
    with pytest.raises(C.ConfigError, match="after 4 decisions"):
        check_chunk_fits(C.build("debug", ["env.task=cartpole-swingup", "env.episode_steps=32"]))
    # The sweep and the Python API stop the same way before anything is made.
    assert main(["sweep", "--tasks", "mock,cartpole-swingup", "--seeds", "1", "--preset", "debug",
                 "--logdir", str(logdir)]) == 2
    assert "task 'cartpole-swingup' ends its episodes after 2 decisions" in capsys.readouterr().err
    assert not logdir.exists()
    from planetrl.api import PlaNet

    with pytest.raises(C.ConfigError, match="ends its episodes after 2 decisions"):
        PlaNet("cartpole-swingup", preset="debug", logdir=logdir).learn()
    assert not logdir.exists()


def test_an_image_size_the_model_has_no_layers_for_stops_before_anything_is_made(tmp_path, capsys):
    """env.image_size 33 passed the key's range (16-512) and failed in the model after the seed episodes."""
    from planetrl.api import PlaNet

    logdir = tmp_path / "logdir"
    expected = "env.image_size 33 has no encoder and decoder; PlaNet trains on 64 or 128 pixel images"
    assert main(["train", "--preset", "debug", "--set", "env.image_size=33", "--logdir", str(logdir)]) == 2
    assert expected in capsys.readouterr().err
    assert main(["sweep", "--tasks", "mock", "--seeds", "1", "--preset", "debug", "--set", "env.image_size=33",
                 "--logdir", str(logdir)]) == 2
    assert expected in capsys.readouterr().err
    with pytest.raises(C.ConfigError, match=expected):
        PlaNet("mock", preset="debug", logdir=logdir, overrides={"env.image_size": 33}).learn()
    assert not logdir.exists()
    # Collecting episodes is not training: it takes any size in the key's range.
    assert main(["collect", "--task", "mock", "--episodes", "1", "--processes", "0", "--outdir",
                 str(tmp_path / "episodes"), "--set", "env.image_size=33", "--set", "env.episode_steps=5"]) == 0
    assert len(list((tmp_path / "episodes").glob("*.npz"))) == 1


def test_a_directory_where_an_output_file_goes_is_named(tmp_path, capsys):
    assert main(["eval", "--run", str(tmp_path / "no-run"), "--json", str(tmp_path)]) == 2
    assert f"--json {tmp_path} is a directory; name the file to write" in capsys.readouterr().err


def test_config_refuses_a_task_that_does_not_exist(capsys):
    """It printed the config of a typo, which failed only when a run started from it."""
    assert main(["config", "--preset", "cpu", "--set", "env.task=cup_catch"]) == 2
    assert "unknown task 'cup_catch'. Did you mean: cup-catch?" in capsys.readouterr().err
    assert main(["config", "--preset", "cpu", "--set", "env.task=dmc:ball_in_cup-catch"]) == 0


def test_config_takes_a_task_and_says_what_its_zero_defaults_come_to(capsys):
    """`train --task` had no `config --task`, and the YAML's action_repeat 0 did not say it means the task's 4."""
    assert main(["config", "--preset", "cpu", "--task", "cup-catch"]) == 0
    out = capsys.readouterr().out
    env = yaml.safe_load(out)["env"]  # the comment line leaves the YAML loadable
    assert (env["task"], env["action_repeat"]) == ("cup-catch", 0)
    assert out.splitlines()[-1] == "# for task cup-catch: action_repeat 4, episode_steps 1000 (250 decisions)"
    assert main(["config", "--task", "dmc:walker-run", "--set", "env.action_repeat=1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "# for task dmc:walker-run: action_repeat 1, episode_steps 1000 (1000 decisions)")
    assert main(["config", "--task", "cup_catch"]) == 2
    assert "Did you mean: cup-catch?" in capsys.readouterr().err


def test_a_mistyped_ppo_config_is_refused_with_the_close_names_before_any_run(tmp_path, capsys):
    assert main(["ppo", "train", "--config", "pendulumm", "--logdir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "unknown PPO config 'pendulumm'. Did you mean: pendulum, pendulum-variant? Allowed: ant," in err
    assert not (tmp_path / "out").exists()


def test_the_tensorboard_command_a_finished_run_prints_runs_as_pasted_from_a_path_with_a_space(tmp_path, capsys,
                                                                                              monkeypatch):
    import os
    import shlex

    logdir = tmp_path / "my runs"
    monkeypatch.chdir(tmp_path)  # not the repository, and the environment not activated
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert main(["train", "--preset", "debug", "--logdir", str(logdir), "--no-progress"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "--logdir" in line)
    command = shlex.split(line.split("TensorBoard: ", 1)[1])
    assert os.access(command[0], os.X_OK) and command[0].endswith("tensorboard")
    assert command[1:] == ["--logdir", str(logdir / "run-00" / "events")]
    assert (logdir / "run-00" / "events").is_dir()


def test_a_printed_command_calls_the_installed_program_from_wherever_the_user_is(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from planetrl.programs import program

    beside = Path(sys.executable).parent / "tensorboard"
    assert beside.is_file()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.chdir(tmp_path)  # outside the environment: `.venv/bin/tensorboard` would not be found
    assert program("tensorboard") == str(beside)
    monkeypatch.chdir(beside.parent.parent)
    assert program("tensorboard") == os.path.join("bin", "tensorboard")
    monkeypatch.setenv("PATH", f"{beside.parent}:/usr/bin:/bin")  # an activated environment
    assert program("tensorboard") == "tensorboard"
    assert program("no-such-program") == "no-such-program"


EMPTY_PATHS = [
    ["train", "--preset", "debug", "--logdir", ""],
    ["ppo", "train", "--config", "debug", "--logdir", ""],
    ["sweep", "--tasks", "mock", "--logdir", ""],
    ["status", "--logdir", ""],
    ["report", "--logdir", "", "--out", "r"],
    ["collect", "--task", "mock", "--outdir", ""],
    ["eval", "--run", ""],
    ["eval", "--run", "r", "--json", ""],
    ["visualize", "--run", "r", "--out", ""],
    ["ppo", "eval", "--run", ""],
    ["results", "export", "--run", "r", "--out", ""],
    ["results", "table", "--dir", ""],
    ["results", "curves", "--record", "", "--out", "c.png"],
]


@pytest.mark.parametrize("argv", EMPTY_PATHS, ids=lambda argv: " ".join(a or "''" for a in argv))
def test_an_empty_path_is_refused_and_never_taken_for_the_current_directory(tmp_path, monkeypatch, capsys, argv):
    """`--logdir ""` (an unset shell variable) trained in the current directory, or found a run there."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert "an empty path (it would mean the current directory)" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_every_path_option_refuses_an_empty_path():
    from planetrl.cli import build_parser
    from planetrl.cli.common import path_arg

    paths = {"--logdir", "--run", "--out", "--outdir", "--dir", "--json", "--record"}
    options = [(command, action.option_strings[0], action.type) for command, parser in _commands(build_parser())
               for action in parser._actions if set(action.option_strings) & paths]
    assert len(options) >= 20 and all(kind is path_arg for _, _, kind in options), options


@pytest.mark.parametrize("argv, prog, hint", [
    (["train", "--presets", "cpu", "--logdir", "x"], "planetrl train", "--presets: did you mean --preset"),
    (["ppo", "train", "--config", "debug", "--logdir", "x", "--sed", "2"], "planetrl ppo train",
     "--sed: did you mean --seed"),
    (["status", "--logdir", "x", "extra"], "planetrl status", None),
])
def test_an_unknown_option_is_named_by_its_command_with_the_close_ones(tmp_path, monkeypatch, capsys, argv, prog,
                                                                        hint):
    """argparse said `planetrl: error: unrecognized arguments` at the top level, with no hint for a typo."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"{prog}: error: unrecognized arguments: ")
    assert (hint in error) if hint else "did you mean" not in error
    assert not (tmp_path / "x").exists()
