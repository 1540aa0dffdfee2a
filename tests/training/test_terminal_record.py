"""Episode files record `is_terminal` truthfully: a true end is terminal, a time limit is not.

The continuation head learns only from these flags, so each task family is collected through the same
path training uses (`planetrl collect`: batch env in its own process, driver, episode writer) and the files
are read back.
"""

from planetrl.cli import main
from planetrl.data.episodes import read_episode


def _collected(tmp_path, task: str, *overrides: str) -> list[dict]:
    outdir = tmp_path / "episodes"
    sets = [arg for value in ("env.image_size=16", "env.fast_render=true", *overrides) for arg in ("--set", value)]
    assert main(["collect", "--task", task, "--episodes", "3", "--outdir", str(outdir), *sets]) == 0
    episodes = [read_episode(path) for path in sorted(outdir.glob("*.npz"))]
    assert len(episodes) == 3
    for episode in episodes:
        assert episode["is_last"][-1] and not episode["is_last"][:-1].any()
        assert not episode["is_terminal"][:-1].any()  # only an episode's last step can be its end
    return episodes


def test_gymnasium_termination_is_terminal(tmp_path):
    # CartPole-v1 at random drops the pole within about 20 steps, far before its 500-step limit.
    for episode in _collected(tmp_path, "gym:CartPole-v1"):
        assert len(episode["reward"]) - 1 < 500
        assert episode["is_terminal"][-1]


def test_gymnasium_truncation_is_not_terminal(tmp_path):
    # Pendulum-v1 never terminates; its episodes end only at the limit, here cut to 20 steps.
    for episode in _collected(tmp_path, "gym:Pendulum-v1", "env.episode_steps=20"):
        assert len(episode["reward"]) - 1 == 20
        assert not episode["is_terminal"].any()


def test_dmc_episodes_are_never_terminal(tmp_path):
    for episode in _collected(tmp_path, "cartpole-swingup", "env.episode_steps=40"):
        assert len(episode["reward"]) - 1 == 40 // 8  # decisions at the paper's action repeat
        assert not episode["is_terminal"].any()


def test_highway_crash_is_terminal_and_its_time_limit_is_not(tmp_path):
    ends = set()
    for episode in _collected(tmp_path, "highway", "env.episode_steps=30"):
        steps = len(episode["reward"]) - 1
        # A drive that ended before its limit crashed or left the road; one that reached it did not.
        assert bool(episode["is_terminal"][-1]) == (steps < 30)
        ends.add(steps < 30)
    assert ends == {True, False}  # seed 0's three random drives: crashes and a drive to the limit
