"""A task registered in the user's own module is known to every command: --import, saved with the run,
and Python entry points of installed packages."""

import subprocess
import sys
import textwrap

import yaml

TASK_MODULE = textwrap.dedent("""
    from planetrl.envs.mock import MockEnv
    from planetrl.envs.registry import TaskSpec, register

    def make_mine(size, seed, fast_render):
        return MockEnv(durations=(20,), image_size=size)

    register(TaskSpec("my-task", make_mine, action_repeat=1, episode_steps=0, image_size=16))
""")


def _planetrl(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "planetrl.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=600)


def test_import_option_registers_the_task_and_the_run_remembers_it(tmp_path):
    (tmp_path / "my_tasks.py").write_text(TASK_MODULE)
    logdir = tmp_path / "exp"
    result = _planetrl("train", "--task", "my-task", "--logdir", str(logdir), "--preset", "debug", "--no-progress",
                       "--import", "my_tasks", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    run = logdir / "run-00"
    assert yaml.safe_load((run / "config.yaml").read_text())["run"]["imports"] == ["my_tasks"]
    evaluated = _planetrl("eval", "--run", str(run), "--episodes", "2", cwd=tmp_path)  # no --import needed
    assert evaluated.returncode == 0 and "over 2 episodes" in evaluated.stdout, evaluated.stderr[-2000:]
    unknown = _planetrl("train", "--task", "my-task", "--logdir", str(tmp_path / "other"), "--preset", "debug",
                        cwd=tmp_path)
    assert unknown.returncode == 2 and "--import MODULE" in unknown.stderr


def test_a_missing_import_module_is_one_line(tmp_path):
    result = _planetrl("tasks", "--import", "no_such_module_here", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "planetrl: error: cannot import task module 'no_such_module_here': No module named 'no_such_module_here'"]


def test_entry_points_of_installed_packages_register_tasks(tmp_path):
    (tmp_path / "my_tasks.py").write_text(TASK_MODULE)
    info = tmp_path / "my_tasks_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-tasks-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[planetrl.tasks]\nmine = my_tasks\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    result = _planetrl("tasks", "my-task", "--no-spaces", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split()[0] == "my-task"
