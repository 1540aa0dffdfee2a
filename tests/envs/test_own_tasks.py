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


def test_run_imports_set_as_a_key_registers_the_task_as_import_does(tmp_path):
    """`--set run.imports=[...]` reached only the run: collect never imported it (unknown task) and train made
    the run directory and then failed it on a module that does not exist."""
    (tmp_path / "my_tasks.py").write_text(TASK_MODULE)
    collected = _planetrl("collect", "--task", "my-task", "--set", "run.imports=[my_tasks]", "--episodes", "1",
                          "--outdir", str(tmp_path / "eps"), cwd=tmp_path)
    assert collected.returncode == 0, collected.stderr[-2000:]
    assert len(list((tmp_path / "eps").glob("*.npz"))) == 1
    missing = _planetrl("train", "--preset", "debug", "--set", "run.imports=[no_such_module_here]", "--logdir",
                        str(tmp_path / "exp"), cwd=tmp_path)
    assert missing.returncode == 2 and "cannot import task module 'no_such_module_here'" in missing.stderr
    assert not (tmp_path / "exp").exists()


def test_a_missing_import_module_is_one_line(tmp_path):
    result = _planetrl("tasks", "--import", "no_such_module_here", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "planetrl: error: cannot import task module 'no_such_module_here': No module named 'no_such_module_here' "
        "(run with -v for the traceback)"]


def test_a_task_module_with_its_own_bug_is_one_line_naming_it_and_a_traceback_with_v(tmp_path):
    """A syntax error or a raise in the user's module printed a full traceback with no word of which module."""
    (tmp_path / "broken_tasks.py").write_text("def (\n")
    (tmp_path / "raising_tasks.py").write_text("raise RuntimeError('no licence server')\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    broken = _planetrl("tasks", "--import", "broken_tasks", cwd=tmp_path, env=env)
    assert broken.returncode == 2
    assert broken.stderr.strip().splitlines() == [
        "planetrl: error: task module 'broken_tasks' failed while importing: SyntaxError: invalid syntax "
        "(broken_tasks.py, line 1) (run with -v for the traceback)"]
    raising = _planetrl("tasks", "--import", "raising_tasks", cwd=tmp_path, env=env)
    assert raising.stderr.strip().splitlines() == [
        "planetrl: error: task module 'raising_tasks' failed while importing: RuntimeError: no licence server "
        "(run with -v for the traceback)"]
    verbose = _planetrl("-v", "tasks", "--import", "raising_tasks", cwd=tmp_path, env=env)
    assert "Traceback" in verbose.stderr and "raising_tasks.py" in verbose.stderr


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


def test_a_broken_plugin_is_a_warning_naming_it_and_the_other_tasks_still_resolve(tmp_path):
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('needs a licence')\n")
    info = tmp_path / "broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[planetrl.tasks]\nbroken = broken_plugin\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    result = _planetrl("tasks", "no-such-task", "mock", "--no-spaces", cwd=tmp_path, env=env)
    assert ("task plugin 'broken' (broken_plugin) failed to load, so its tasks are not registered: "
            "RuntimeError: needs a licence") in result.stderr
    assert "unknown task 'no-such-task'" in result.stderr and "Traceback" not in result.stderr
    assert _planetrl("tasks", "mock", "--no-spaces", cwd=tmp_path, env=env).returncode == 0
