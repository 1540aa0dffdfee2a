"""The facts the episode readers in benchmarks/ rest on, checked against the simulator."""

import ast
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cheetah_flips import flipped_share, nose_down_share, pitch_column, speed_column


def test_cheetah_flips_reads_the_root_pitch_from_the_flattened_state():
    from dm_control import suite

    env = suite.load("cheetah", "run", task_kwargs={"random": 0})
    env.reset()
    states = []
    for pitch in (0.0, 0.5, np.pi, -2.0):
        with env.physics.reset_context():
            env.physics.named.data.qpos["rooty"] = pitch
        observation = env.task.get_observation(env.physics)
        states.append(np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()]))
    states = np.array(states)
    np.testing.assert_allclose(states[:, pitch_column()], [0.0, 0.5, np.pi, -2.0])
    assert flipped_share({"state": states}, pitch_column()) == 0.5  # pi and -2 rad are on its back
    assert nose_down_share({"state": states}, pitch_column()) == 0.0  # 0.5 rad is under 45 degrees


def test_cheetah_flips_reads_the_forward_speed_and_which_pitch_lowers_the_front():
    from dm_control import suite

    env = suite.load("cheetah", "run", task_kwargs={"random": 0})
    env.reset()
    physics = env.physics
    with physics.reset_context():
        physics.named.data.qpos["rooty"] = 1.0
        physics.named.data.qvel["rootx"] = 2.5
    front, back = physics.named.data.xpos["fthigh"][2], physics.named.data.xpos["bthigh"][2]
    assert front < back  # a positive pitch tips the cheetah onto its front
    observation = env.task.get_observation(physics)
    state = np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()])[None]
    assert state[0, speed_column()] == 2.5
    assert nose_down_share({"state": state}, pitch_column()) == 1.0  # 57 degrees, front down
    assert nose_down_share({"state": -state}, pitch_column()) == 0.0  # the same tilt onto its back legs


def test_cheetah_reward_by_pose_splits_level_nose_down_and_flipped_steps():
    from cheetah_flips import poses
    from cheetah_reward_by_pose import by_pose

    pitch = np.array([0.0, 1.0, -1.0, np.pi, 2.0])  # level, front down, back legs down, on its back twice
    np.testing.assert_array_equal(poses(pitch), [0, 1, 0, 2, 2])
    split = by_pose(np.array([1.0, 0.1, 0.5, 0.2, 0.4]), np.array([0.8, 0.3, 0.6, 0.1, 0.1]), poses(pitch))
    assert split == {"level": {"steps": 2, "true": 0.75, "predicted": 0.7},
                     "nose_down": {"steps": 1, "true": 0.1, "predicted": 0.3},
                     "flipped": {"steps": 2, "true": 0.3, "predicted": 0.1}}
    assert set(by_pose(np.ones(2), np.ones(2), np.zeros(2, int))) == {"level"}


def _highway_episode(lateral_end: float, terminal: bool) -> dict:
    steps = 4
    state = np.zeros((steps, 5, 5), np.float32)
    state[:, 0, 3] = [0.1, 0.2, 0.3, 0.4]  # the ego car's speed after each step
    state[:, 0, 2] = 0.25
    state[-1, 0, 2] = lateral_end
    return {"state": state.reshape(steps, 25), "reward": np.array([0.0, 0.7, 0.8, 0.9], np.float32),
            "is_terminal": np.arange(steps) == steps - 1 if terminal else np.zeros(steps, bool)}


def test_highway_hazard_counts_a_collision_at_the_speed_of_the_decision_that_caused_it():
    from highway_hazard import decisions

    speed, crash, reward = decisions(_highway_episode(0.25, terminal=True))
    np.testing.assert_allclose(speed, [0.1, 0.2, 0.3])  # decision t is taken in state t-1
    np.testing.assert_array_equal(crash, [0, 0, 1])
    np.testing.assert_allclose(reward, [0.7, 0.8, 0.9])
    assert decisions(_highway_episode(0.95, terminal=True))[1].sum() == 0  # off the road: not a collision
    assert decisions(_highway_episode(0.25, terminal=False))[1].sum() == 0  # the time limit


def test_spinner_speed_reads_the_hinge_and_splits_a_mixed_run_by_its_noise(tmp_path):
    from dm_control import suite

    from planetrl import config as config_lib
    from spinner_speed import groups, hinge_column

    env = suite.load("finger", "spin", task_kwargs={"random": 0})
    env.reset()
    with env.physics.reset_context():
        env.physics.named.data.qvel["hinge"] = -17.0
    observation = env.task.get_observation(env.physics)
    assert np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()])[hinge_column()] == -17.0

    episodes = [{"id": n} for n in range(9)]  # two seed episodes, then seven collected
    config_lib.save(config_lib.build(overrides=["planner.mixed_noise=1.0", "planner.mixed_every=3"]),
                    tmp_path / "config.yaml")
    split = groups(tmp_path, episodes, seeds=2)
    assert [kind for kind, _ in split] == ["seed", "planner mixed_noise 1.0", "planner exploration_noise 0.3"]
    assert [[e["id"] for e in group] for _, group in split] == [[0, 1], [2, 5, 8], [3, 4, 6, 7]]
    config_lib.save(config_lib.build(), tmp_path / "config.yaml")
    assert [len(group) for _, group in groups(tmp_path, episodes, seeds=2)] == [2, 7]


def test_spinner_summary_counts_the_steps_that_pay_and_the_fastest_turn():
    from spinner_speed import summary

    state = np.zeros((5, 3))
    state[:, 2] = [0.0, -16.0, -20.0, -10.0, 4.0]  # the hinge's velocity; the reward counts minus it
    still = np.zeros((5, 3))
    episodes = [{"state": state, "reward": np.array([0, 1, 1, 0, 0])}, {"state": still, "reward": np.zeros(5)}]
    result = summary(episodes, column=2)
    assert result["share_over_15_rad_s"] == [0.4, 0.0]
    assert result["fastest_spin_rad_s"] == [20.0, 0.0]
    assert result["rewarded_decisions"] == 2 and result["episodes_spinner_under_1_rad_s"] == 1


def _cartpole_state(env) -> np.ndarray:
    observation = env.task.get_observation(env.physics)
    return np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()])


def test_cart_at_rail_reads_the_cart_position_and_calls_an_episode_pinned_only_at_one_end():
    from dm_control import suite

    from cart_at_rail import OUT_OF_VIEW, cart_column, episode_line

    env = suite.load("cartpole", "swingup", task_kwargs={"random": 0})
    env.reset()
    with env.physics.reset_context():
        env.physics.named.data.qpos["slider"] = 1.7
    assert _cartpole_state(env)[cart_column()] == 1.7

    physics = env.physics  # PlaNet's camera, at 64 x 64, with the cart painted red
    physics.model.geom_rgba[physics.model.name2id("cart", "geom")] = [1, 0, 0, 1]

    def cart_pixels(x: float) -> int:
        with physics.reset_context():
            physics.named.data.qpos["slider"] = x
        image = physics.render(64, 64, camera_id=0).astype(int)
        return int(((image[..., 0] > 150) & (image[..., 1] < 60) & (image[..., 2] < 60)).sum())

    whole = cart_pixels(0.0)
    assert whole > 0 and cart_pixels(1.4) == whole
    assert cart_pixels(OUT_OF_VIEW) <= whole / 2
    assert cart_pixels(1.8) == 0  # the rail's end

    def episode(x: list[float]) -> dict:
        state = np.zeros((len(x), 5))
        state[:, 0] = x
        return {"state": state, "reward": np.ones(len(x))}

    line = episode_line(episode([0.0, 0.5, 1.8, 1.8, 1.8]), 0, tail=3)
    assert line == {"out_of_view": 0.75, "pinned": True, "return": 5.0}  # the first state is before any decision
    assert not episode_line(episode([0.0, 1.8, -1.8, 1.8, 1.8]), 0, tail=3)["pinned"]  # both ends: swinging
    assert not episode_line(episode([0.0, 1.8, 1.8, 1.8, 1.0]), 0, tail=3)["pinned"]  # back in view at the end


def test_cartpole_simulator_is_set_from_a_stored_state_and_runs_past_the_time_limit():
    from dm_control import suite

    from plan_ranking import CartpoleSimulator

    env = suite.load("cartpole", "swingup", task_kwargs={"random": 0})
    env.reset()
    with env.physics.reset_context():
        env.physics.named.data.qpos[:] = [0.7, 2.5]
        env.physics.named.data.qvel[:] = [-0.3, 1.1]
    stored = _cartpole_state(env).astype(np.float32)  # the episode files keep float32
    sim = CartpoleSimulator(repeat=8)
    sim.set_state(stored)
    np.testing.assert_allclose(_cartpole_state(sim.env), stored, atol=1e-6)
    plan = np.random.default_rng(0).uniform(-1, 1, (1, 100, 1))
    twice = sim.returns(stored, np.concatenate([plan, plan]))  # 1600 steps: past dm_control's 1000-step limit
    assert twice[0].sum() > 0
    np.testing.assert_allclose(twice[1], twice[0])


def _flat_observation(env) -> np.ndarray:
    return np.concatenate([np.ravel(v) for v in env.task.get_observation(env.physics).values()])


def test_finger_simulator_is_set_from_a_stored_state_and_steps_as_the_task_does():
    from dm_control import suite

    from plan_ranking import FingerSimulator

    env = suite.load("finger", "spin", task_kwargs={"random": 0})
    env.reset()
    with env.physics.reset_context():
        env.physics.named.data.qpos[["proximal", "distal", "hinge"]] = [-1.0, 0.0, 2.0]  # finger clear of it
        env.physics.named.data.qvel[["proximal", "distal", "hinge"]] = [0.5, -1.0, -25.0]
    stored = _flat_observation(env).astype(np.float32)
    sim = FingerSimulator(repeat=1)
    sim.set_state(stored)
    np.testing.assert_allclose(_flat_observation(sim.env)[:7], stored[:7], atol=1e-5)  # joints, tip, velocities
    assert sim.describe(stored) == {"hinge_velocity": -25.0, "paying": True}
    action = np.array([0.2, -0.6])
    rewards = [env.step(action).reward for _ in range(3)]
    np.testing.assert_allclose(sim.returns(stored, np.tile(action, (1, 3, 1)))[0], rewards, atol=1e-6)
    assert rewards == [1.0, 1.0, 1.0]  # the free spinner still turns fast enough to pay


def test_model_drift_scores_the_horizon_after_each_start_with_the_actions_taken():
    import torch

    from model_drift import horizon_rewards, scores, step_scores
    from planetrl import config as config_lib
    from planetrl.training.updater import build_world_model

    cfg = config_lib.build("debug")
    model = build_world_model(cfg, 2).eval()
    steps, horizon = 9, 3
    data = {"image": torch.zeros(1, steps, 64, 64, 3), "action": torch.rand(1, steps, 2),
            "is_first": torch.arange(steps)[None] == 0, "reward": torch.arange(steps, dtype=torch.float32)}
    with torch.no_grad():
        posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
        predicted, true, starts = horizon_rewards(model, data, posterior, horizon, samples=2)
    np.testing.assert_array_equal(starts, np.arange(steps - horizon))
    np.testing.assert_allclose(true, [[s + 1, s + 2, s + 3] for s in starts])  # the rewards after each start
    assert predicted.shape == true.shape == (steps - horizon, horizon) and np.isfinite(predicted).all()
    assert scores(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 4.0])) == {
        "starts": 3, "return_mae": 0.333, "return_bias": -0.333, "return_corr": 0.929}
    by_step = step_scores(np.array([[1.0, 5.0], [2.0, 5.0], [4.0, 5.0]]),
                          np.array([[1.0, 0.0], [3.0, 1.0], [4.0, 2.0]]))
    assert by_step == {"reward_mae": [0.3333, 4.0], "reward_corr": [0.929, None]}  # a constant prediction: no corr


def test_model_drift_finds_the_first_reward_k_decisions_ahead_in_each_starts_horizon():
    from model_drift import first_reward_ahead

    rewards = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 3.0, 0.0])  # the first reward is decision 4
    starts, horizon = np.arange(len(rewards) - 3), 3
    true = np.stack([rewards[s + 1:s + 1 + horizon] for s in starts])
    predicted = true * 0.5 + np.arange(len(starts))[:, None] * 10  # tells which start each prediction is from
    ahead = first_reward_ahead(predicted, true, starts, rewards)
    assert ahead == {1: (31.0, 2.0), 2: (21.0, 2.0), 3: (11.0, 2.0)}  # starts 3, 2 and 1, columns 0, 1 and 2
    assert first_reward_ahead(predicted, true, starts, np.zeros(8)) == {}
    early = np.array([0.0, 5.0, 0.0, 0.0, 0.0, 0.0])  # decision 1: only start 0 sees it, one ahead
    starts = np.arange(3)
    true = np.stack([early[s + 1:s + 4] for s in starts])
    assert first_reward_ahead(true, true, starts, early) == {1: (5.0, 5.0)}


def test_run_episodes_groups_seed_episodes_then_phases_in_time_order(tmp_path):
    import argparse
    import datetime

    from _run_episodes import phase_paths, read_groups
    from planetrl.data.episodes import episode_name, list_episodes

    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    directory = tmp_path / "test_episodes"
    directory.mkdir()
    for index in range(12):  # 5 seed episodes, a phase of 5, and 2 of the next phase; each rewards its index
        episode = {"image": np.zeros((3, 4, 4, 3), np.uint8), "action": np.zeros((3, 1), np.float32),
                   "reward": np.full(3, index, np.float32), "is_first": np.array([True, False, False]),
                   "is_last": np.array([False, False, True]), "is_terminal": np.zeros(3, bool)}
        np.savez(directory / episode_name(2, start + datetime.timedelta(seconds=index)),
                 **episode)
    (directory / "not-an-episode.txt").write_text("ignored")
    args = argparse.Namespace(run_dir=tmp_path, which="test_episodes", seed_episodes=5, per_phase=5, group=10)
    groups = read_groups(args)
    assert [(name, [int(e["reward"][0]) for e in group]) for name, group in groups] == [
        ("seed", [0, 1, 2, 3, 4]), ("1", [5, 6, 7, 8, 9]), ("2", [10, 11])]
    paths = list_episodes(directory)
    assert phase_paths(paths, 2, args) == paths[10:12]
    assert phase_paths(paths, 1, args) == paths[5:10]
    directory.rename(tmp_path / "episodes")  # what `planetrl visualize --out` keeps: no seed episodes
    args = argparse.Namespace(run_dir=tmp_path, which="episodes", seed_episodes=0, per_phase=5, group=10)
    assert [(name, len(group)) for name, group in read_groups(args)] == [("1", 10), ("2", 2)]


def test_gradient_noise_recovers_a_known_signal_and_noise():
    from gradient_noise import noise_figures

    rng = np.random.default_rng(0)
    draws, size, batch = 4000, 50, 8
    mean = np.full(size, 0.2)  # |G|^2 = 50 * 0.04 = 2
    grads = mean + rng.normal(0.0, 0.4, (draws, size))  # tr(Cov) = 50 * 0.16 = 8
    figures = noise_figures(grads, batch)
    assert abs(figures["signal"] - 2.0) < 0.1 and abs(figures["noise"] - 8.0) < 0.2
    assert abs(figures["noise_to_signal"] - 4.0) < 0.3 and abs(figures["critical_batch"] - 32.0) < 2.5
    # one draw's cosine with the mean of the rest: |G|^2 / (|G| sqrt(|G|^2 + noise)) = 2 / sqrt(2 * 10)
    assert abs(figures["cosine"] - 2 / np.sqrt(20)) < 0.02
    assert abs(figures["coordinate_signal"] - 0.04 / (0.04 + 0.16)) < 0.01  # every parameter: 0.2 of its step
    pure_noise = noise_figures(rng.normal(0.0, 1.0, (draws, size)), batch)
    assert abs(pure_noise["signal"]) < 0.5 and abs(pure_noise["cosine"]) < 0.05
    assert pure_noise["coordinate_signal"] < 0.01


def test_gradient_noise_takes_the_episodes_the_run_held_at_an_update(tmp_path):
    import datetime

    from gradient_noise import held_episodes
    from planetrl.data.episodes import episode_name

    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    directory = tmp_path / "train_episodes"
    directory.mkdir()
    for index in range(9):
        (directory / episode_name(3, start + datetime.timedelta(seconds=index))).write_bytes(b"")
    held = held_episodes(tmp_path, 300, seed_episodes=5, collect_every=100)
    assert [p.name for p in held] == sorted(p.name for p in directory.iterdir())[:8]
    with pytest.raises(SystemExit, match="holds 9 episodes; update 500 needs 10"):
        held_episodes(tmp_path, 500, seed_episodes=5, collect_every=100)


def test_run_price_prices_a_whole_run_from_a_partial_runs_logged_rates():
    from planetrl import config as C
    from run_price import price

    cfg = C.build("cpu", ["env.task=cheetah-run"])  # 7000 updates, an episode every 100, 7 phases of 5
    metrics = [{"train/updates_per_s": 2.0}, {"train/updates_per_s": 10.0}, {"train/updates_per_s": 10.0},
               {"train/seconds_per_action": 0.05}, {"train/seconds_per_action": 0.07}]
    untested = price(metrics, cfg)  # the first rate is warm-up: 0.1 s an update
    assert untested["minutes"]["training"] == round(7000 * 0.1 / 60, 1)
    assert untested["minutes"]["collect"] == round(70 * 250 * 0.06 / 60, 1)  # 1000 steps at action repeat 4
    assert untested["minutes"]["testing"] == round(7 * 5 * 250 * 0.06 / 60, 1)
    assert "upper bound" in untested["test_phase_priced_as"]
    tested = price([*metrics, {"test/seconds_per_action": 0.08}], cfg)  # 5 episodes, one planning call
    assert tested["minutes"]["testing"] == round(7 * 250 * 0.08 / 60, 1)
    assert tested["test_phase_priced_as"] == "measured"


def test_perfect_model_objective_scores_each_plan_as_the_task_itself_rewards_it():
    import torch
    from dm_control import suite

    from perfect_model_mpc import physics_objective

    world = suite.load("cartpole", "swingup", task_kwargs={"random": 3})
    world.reset()
    for _ in range(5):
        world.step(np.array([0.5]))
    objective = physics_objective("cartpole", "swingup", 2, world.physics.get_state())
    plans = np.random.default_rng(0).uniform(-1, 1, (2, 4, 1))
    predicted = objective.imagine(torch.zeros(2, 1), torch.as_tensor(plans)).numpy()
    true = [sum(world.step(action).reward for _ in range(2)) for action in plans[1]]  # the world runs plan 1
    np.testing.assert_allclose(predicted[1], true, rtol=1e-6)  # plan 0's run did not leak into plan 1's
    assert predicted[0].sum() != predicted[1].sum()


def test_perfect_model_mpc_balances_an_upright_pole_at_the_most_it_can_earn():
    from perfect_model_mpc import run_episode
    from planetrl.planning.cem import CEMSettings

    line = run_episode("cartpole-balance", seed=0, decisions=25, settings=CEMSettings(
        horizon=3, iterations=2, candidates=16, elites=4))
    # balance starts near upright and pays up to 1 per step, 8 steps a decision at the paper's repeat: 200 at
    # most; the same 25 decisions of one random plan each (1 candidate, 1 iteration) earn 98.5
    assert line["decisions"] == 25 and line["rewarded_decisions"] == 25
    assert line["return"] > 0.9 * 25 * 8


def test_the_walker_readout_tells_standing_from_lying_and_reads_the_forward_speed():
    from dm_control import suite

    from perfect_model_mpc import run_episode, walker_pose
    from planetrl.planning.cem import CEMSettings

    physics = suite.load("walker", "walk", task_kwargs={"random": 0}).physics
    with physics.reset_context():  # the model's own pose: upright, torso at 1.3 m; rootz slides it down
        physics.data.qpos[:] = 0.0
        physics.data.qvel[:] = 0.0
        physics.data.qvel[1] = 0.7  # rootx: the whole walker moves forward
    standing, speed = walker_pose(physics)
    assert standing and speed == pytest.approx(0.7, abs=1e-6)
    with physics.reset_context():
        physics.data.qpos[0] = -1.0
    assert not walker_pose(physics)[0]
    line = run_episode("walker-walk", seed=0, decisions=3, settings=CEMSettings(
        horizon=2, iterations=1, candidates=4, elites=2))
    assert line["decisions"] == 3 and 0.0 <= line["standing_share"] <= 1.0 and "mean_speed" in line
    assert "standing_share" not in run_episode("cartpole-balance", seed=0, decisions=2, settings=CEMSettings(
        horizon=2, iterations=1, candidates=4, elites=2))
    # from the rest pose no plan can bring the torso down 0.3 m in 2 decisions (0.1 s: 5 cm in free fall)
    tall = run_episode("walker-walk", seed=0, decisions=2, settings=CEMSettings(
        horizon=2, iterations=1, candidates=4, elites=2), standing=True)
    assert tall["start"] == "standing" and tall["held_decisions"] == 2 and tall["standing_share"] == 1.0
    assert "start" not in line
    with pytest.raises(ValueError, match="'cartpole-balance' is not a walker task"):
        run_episode("cartpole-balance", seed=0, decisions=2, settings=CEMSettings(
            horizon=2, iterations=1, candidates=4, elites=2), standing=True)


def test_the_standing_start_puts_the_walker_upright_at_rest_and_counts_decisions_until_it_drops():
    from dm_control import suite

    from walker_standing_start import held_decisions, stand_up

    physics = suite.load("walker", "walk", task_kwargs={"random": 0}).physics
    with physics.reset_context():
        physics.data.qpos[3:] = 0.8  # bent joints, as the task's random start has them
        physics.data.qvel[:] = 0.5
    stand_up(physics)
    assert physics.torso_height() == pytest.approx(1.3) and physics.torso_upright() == pytest.approx(1.0)
    assert not physics.data.qvel.any()
    assert held_decisions([1.3, 1.1, 0.99, 1.2]) == 2 and held_decisions([1.3, 1.05]) == 2
    assert held_decisions([0.5]) == 0


def test_walker_standing_start_runs_an_agent_and_the_passive_baseline_from_both_starts(tmp_path, capsys):
    """The standing start reaches the env the policy steps: a passive walker stays at standing height from
    rest, where from the task's own start (joints at random) it is already folding."""
    import json

    import walker_standing_start
    from planetrl.cli import main

    assert main(["train", "--logdir", str(tmp_path), "--preset", "debug", "--task", "walker-walk", "--no-progress",
                 "--set", "train.total_updates=2", "--set", "train.test_every=2", "--set", "train.seed_episodes=1",
                 "--set", "train.test_episodes=1", "--set", "env.fast_render=true"]) == 0
    capsys.readouterr()
    walker_standing_start.main([str(tmp_path / "run-00"), "--episodes", "1", "--decisions", "6", "--baseline"])
    lines = [json.loads(text) for text in capsys.readouterr().out.strip().splitlines()]
    episodes = {(line["start"], line["policy"]): line for line in lines if "seed" in line}
    assert sorted(episodes) == [("standing", "agent"), ("standing", "zero"), ("task", "agent"), ("task", "zero")]
    assert len(lines) == 8 and all(line["updates"] == 2 for line in lines)
    assert episodes["standing", "zero"]["standing_share"] == 1.0
    assert episodes["standing", "zero"]["held_decisions"] == 6
    assert episodes["task", "zero"]["standing_share"] < 1.0
    for line in episodes.values():
        assert line["decisions"] == 6 and 0 <= line["held_decisions"] <= 6
    with pytest.raises(SystemExit):
        walker_standing_start.main([str(tmp_path / "run-00"), "--starts", "standing,sitting"])
    assert "--starts takes a comma list of standing, task; got 'standing,sitting'" in capsys.readouterr().err


def test_walker_standing_start_explores_only_when_asked_and_labels_the_scheme(tmp_path, capsys):
    """`--noise` makes the agent act as collection does (explore=True, at that noise and correlation) and puts
    the scheme on its lines; without it the agent acts as in a test phase; bad schemes are refused by name."""
    import json

    import walker_standing_start
    from planetrl.cli import main

    class Recorder:
        def __init__(self) -> None:
            self.explore: list[bool] = []

        def reset(self, indices) -> None:
            pass

        def act(self, obs, explore=False):
            self.explore.append(explore)
            return np.zeros((1, 6), np.float32)

    from planetrl.config import build
    from planetrl.envs.make import make_env

    env = make_env(build(preset="debug", overrides=["env.task=walker-walk"]).env, seed=0)
    for explore in (False, True):
        agent = Recorder()
        walker_standing_start.run_episode(env, agent, "task", seed=0, decisions=3, explore=explore)
        assert agent.explore == [explore] * 3
    env.close()

    assert main(["train", "--logdir", str(tmp_path), "--preset", "debug", "--task", "walker-walk", "--no-progress",
                 "--set", "train.total_updates=1", "--set", "train.test_every=1", "--set", "train.seed_episodes=1",
                 "--set", "train.test_episodes=1", "--set", "env.fast_render=true"]) == 0
    capsys.readouterr()
    walker_standing_start.main([str(tmp_path / "run-00"), "--starts", "task", "--episodes", "1", "--decisions", "3",
                                "--noise", "0.5", "--correlation", "0.9", "--baseline"])
    lines = [json.loads(text) for text in capsys.readouterr().out.strip().splitlines()]
    agent_lines = [line for line in lines if line["policy"] == "agent"]
    assert len(agent_lines) == 2 and all(line["noise"] == 0.5 and line["correlation"] == 0.9 for line in agent_lines)
    assert all("noise" not in line for line in lines if line["policy"] == "zero")
    for bad, message in ((["--noise", "0"], "--noise must be above 0; got 0.0"),
                         (["--noise", "0.3", "--correlation", "1"], "--correlation must be in [0, 1); got 1.0"),
                         (["--correlation", "0.5"], "--correlation needs --noise")):
        with pytest.raises(SystemExit):
            walker_standing_start.main([str(tmp_path / "run-00"), *bad])
        assert message in capsys.readouterr().err


def test_walker_demonstrations_extend_a_finished_run_with_and_without_added_episodes_alike(tmp_path, capsys):
    """`drive` writes perfect-model episodes the run's replay reads (each `--copies` times, rendered as the run
    renders); `extend` trains a copy of the finished run further, the original untouched, and the arm with
    the added episodes collects exactly the episodes the arm without them does, its replay holding both."""
    import json

    import walker_demonstrations
    from planetrl.cli import main
    from planetrl.data.episodes import list_episodes, read_episode

    run = tmp_path / "run" / "run-00"
    assert main(["train", "--logdir", str(run.parent), "--preset", "debug", "--task", "walker-walk", "--no-progress",
                 "--set", "train.total_updates=2", "--set", "train.test_every=2", "--set", "train.seed_episodes=1",
                 "--set", "train.test_episodes=1", "--set", "env.fast_render=true"]) == 0
    original = sorted(p.name for p in list_episodes(run / "train_episodes"))
    capsys.readouterr()
    walker_demonstrations.main(["drive", str(run), str(tmp_path / "demos"), "--episodes", "2", "--decisions", "3",
                                "--copies", "2"])
    lines = [json.loads(text) for text in capsys.readouterr().out.strip().splitlines()]
    assert [(line["seed"], line["decisions"], line["copies"]) for line in lines] == [(100, 3, 2), (101, 3, 2)]
    demos = list_episodes(tmp_path / "demos")
    assert len(demos) == 4
    episode = read_episode(demos[0])
    assert episode["image"].shape == (4, 64, 64, 3) and episode["action"].shape == (4, 6)
    assert episode["is_first"].tolist() == [True, False, False, False] and episode["is_last"][-1]
    returns = sorted(round(float(read_episode(path)["reward"].sum()), 2) for path in demos)
    assert returns == sorted(2 * [line["return"] for line in lines])

    arms = {}
    tested = {}
    for name, extra in (("control", []), ("demos", ["--add", str(tmp_path / "demos")])):
        walker_demonstrations.main(["extend", str(run), str(tmp_path / name), "--updates", "8", *extra])
        arms[name] = tmp_path / name / "run-00"
        tests = [json.loads(text) for text in (arms[name] / "tests.jsonl").read_text().splitlines()]
        tested[name] = [t["updates"] for t in tests]
    assert tested["control"] == tested["demos"] and tested["control"][0] == 2 and tested["control"][-1] == 10
    held = {name: sorted(p.name for p in list_episodes(path / "train_episodes")) for name, path in arms.items()}
    demo_names = {p.name for p in demos}
    assert set(original) <= set(held["control"]) and not demo_names & set(held["control"])
    assert demo_names <= set(held["demos"])
    collected = {name: len(names) - len(original) - (len(demos) if name == "demos" else 0)
                 for name, names in held.items()}
    assert collected["control"] == collected["demos"] == 2  # collect_every 4: at updates 4 and 8
    assert sorted(p.name for p in list_episodes(run / "train_episodes")) == original
    assert (run / "DONE").exists() and "total_updates: 2" in (run / "config.yaml").read_text()
    with pytest.raises(SystemExit, match="exists; extend into a new directory"):
        walker_demonstrations.main(["extend", str(run), str(tmp_path / "control")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="holds no episode files"):
        walker_demonstrations.main(["extend", str(run), str(tmp_path / "other"), "--add", str(tmp_path / "empty")])


def test_walker_valuation_scores_a_model_on_a_walking_episode_it_keeps_and_reads_back(tmp_path, capsys):
    """The walking episode starts upright (the perfect-model agent from the rest pose), its stored physics
    states reproduce its rewards on the simulator (checked inside), every scored decision has a whole horizon
    after it, the run's own test episode of the phase is found by its return, and the kept episode file gives
    the same scores as the episode driven afresh."""
    import json

    import numpy as np

    import walker_valuation
    from planetrl.cli import main

    assert main(["train", "--logdir", str(tmp_path), "--preset", "debug", "--task", "walker-walk", "--no-progress",
                 "--set", "train.total_updates=2", "--set", "train.test_every=2", "--set", "train.seed_episodes=1",
                 "--set", "train.test_episodes=1", "--set", "env.fast_render=true", "--set", "planner.horizon=3",
                 "--set", "planner.candidates=6", "--set", "planner.elites=2", "--set", "planner.iterations=1"]) == 0
    capsys.readouterr()
    kept = tmp_path / "walking.npz"
    argv = [str(tmp_path / "run-00"), "--decisions", "6", "--every", "2", "--candidates", "4", "--episode-file",
            str(kept)]
    walker_valuation.main(argv)
    first = [json.loads(text) for text in capsys.readouterr().out.strip().splitlines()]
    with np.load(kept) as episode:
        assert episode["image"].shape == (7, 64, 64, 3) and episode["physics"].shape[0] == 7
        assert episode["height"][0] == pytest.approx(1.3) and episode["is_first"].tolist() == [True] + [False] * 6
        walking = episode["reward"]
    # starts 0, 2 (start 3 leaves no whole horizon of 3 after it in 6 decisions)
    assert [line["decision"] for line in first[:-1]] == [0, 2]
    for line in first[:-1]:
        t = line["decision"]
        assert line["walking"]["true"] == pytest.approx(walking[t + 1:t + 4].sum(), abs=0.01)
        assert 0 <= line["agent"]["true"] <= 3 * 2 + 1e-6  # walker-walk pays at most 1 a step, 2 a decision
    summary = first[-1]["summary"]
    assert summary["decisions"] == 6 and summary["scored"] == 2
    assert summary["own_tests"]["episodes"] == 1  # the one test episode of the phase at update 2
    assert summary["walking_return"] == pytest.approx(walking[1:].sum(), abs=0.01)
    walker_valuation.main(argv)
    assert [json.loads(text) for text in capsys.readouterr().out.strip().splitlines()] == first
    with pytest.raises(SystemExit):
        walker_valuation.main([str(tmp_path / "run-00"), "--decisions", "3"])
    assert "--decisions 3 leaves no whole horizon of 3 to score" in capsys.readouterr().err
    with pytest.raises(SystemExit, match=r"holds a walking episode of .'seed': 0.*--seed: .'seed': 1"):
        walker_valuation.main([*argv, "--seed", "1"])


def test_random_policy_measures_the_policy_over_the_episodes_asked_and_repeats_with_its_seed():
    import random_policy

    first = random_policy.measure("mock", 6, seed=3, preset="debug", processes=2)
    again = random_policy.measure("mock", 6, seed=3, preset="debug", processes=2)
    other = random_policy.measure("mock", 6, seed=4, preset="debug", processes=2)
    assert first["episodes"] == len(first["returns"]) == 6
    assert first["mean"] == pytest.approx(np.mean(first["returns"]), abs=1e-3)
    assert first["min"] <= first["mean"] <= first["max"] and first["sd"] > 0
    assert first["returns"] == again["returns"] and first["returns"] != other["returns"]


def test_walker_gaits_reads_torso_height_tilt_and_forward_speed_and_counts_paying_decisions():
    from dm_control import suite

    from walker_gaits import gait, got_going, state_columns

    env = suite.load("walker", "walk", task_kwargs={"random": 0})
    env.reset()
    physics = env.physics
    columns = state_columns()
    states = []
    for rootz, tilt, speed in ((0.0, 0.0, 0.0), (-0.5, 1.0, 0.7)):
        with physics.reset_context():
            physics.data.qpos[:] = 0.0
            physics.data.qvel[:] = 0.0
            physics.named.data.qpos["rootz"] = rootz
            physics.named.data.qpos["rooty"] = tilt
            physics.named.data.qvel["rootx"] = speed
        observation = env.task.get_observation(physics)
        states.append(np.concatenate([np.asarray(v).reshape(-1) for v in observation.values()]))
        assert states[-1][columns["height"]] == pytest.approx(physics.torso_height())
    states = np.array(states)
    np.testing.assert_allclose(states[:, columns["height"]], [1.3, 0.8], atol=1e-6)
    np.testing.assert_allclose(states[:, columns["upright"]], [1.0, np.cos(1.0)], atol=1e-6)
    np.testing.assert_allclose(states[:, columns["speed"]], [0.0, 0.7])
    line = gait({"state": states, "reward": np.array([0.0, 0.31])}, columns)
    assert line == {"height": 1.05, "upright": round((1 + np.cos(1.0)) / 2, 2), "speed": 0.35,
                    "paying_share": 1.0, "return": 0.3}
    idle = gait({"state": states, "reward": np.array([0.0, 0.29])}, columns)
    assert idle["paying_share"] == 0.0
    assert got_going([line, idle, {**idle, "paying_share": 0.2}, {**idle, "paying_share": 0.19}]) == 2


def test_paired_retest_compares_start_by_start_and_refuses_unpaired_files():
    from paired_retest import compare

    average, trained = [0.0, 10.0, 200.0, 300.0], [100.0, 250.0, 180.0, 300.0]
    line = compare(average, trained, stuck=20)
    diffs = np.array(trained) - np.array(average)
    assert line["mean_a"] == 127.5 and line["mean_b"] == 207.5 and line["b_minus_a"] == 80.0
    assert line["standard_error"] == pytest.approx(np.std(diffs, ddof=1) / 2, abs=0.05)
    assert line["b_higher"] == 2 and line["stuck_a"] == 2 and line["stuck_b"] == 0
    assert compare(trained, average, stuck=20)["b_minus_a"] == -80.0
    with pytest.raises(ValueError, match="same number of starts"):
        compare(average, trained[:3], stuck=20)


def test_every_committed_paired_retest_is_quoted_in_the_notes_as_the_files_give_it():
    """Each re-test beside an AVERAGE one (trained weights, another planner) reproduces the figure NOTES.md states."""
    import json
    import re

    from paired_retest import compare

    results = Path(__file__).resolve().parents[1] / "results"
    notes = (results / "cpu" / "NOTES.md").read_text()
    pairs = [(average, other) for average in sorted(results.rglob("retest*-average.json"))
             for other in sorted(average.parent.glob(average.name.replace("-average", "-*")))
             if other != average]
    assert {other.name.rsplit("-", 1)[1] for _, other in pairs} >= {"trained.json", "tail.json"}
    for average_path, other_path in pairs:
        average, other = (json.loads(p.read_text())["returns"] for p in (average_path, other_path))
        line = compare(average, other, stuck=25)
        diff, error = abs(line["b_minus_a"]), line["standard_error"]
        sign = "-" if line["b_minus_a"] < 0 else "+"
        quoted = rf"(?<![\d.])([+-]?){diff:.1f} \+- ({error:.1f}|{error:.0f}\b)"
        signs = {m.group(1) for m in re.finditer(quoted, notes)}
        assert signs & {sign, ""}, f"{other_path}: NOTES.md never states {sign}{diff:.1f} +- {error:.1f}"


def test_cem_speed_times_the_planner_and_model_of_the_preset_and_overrides_it_is_given(capsys, monkeypatch):
    import json

    import cem_speed

    monkeypatch.setattr(sys, "argv", ["cem_speed.py", "--preset", "debug", "--set", "model.reward_units=24",
                                      "--action-dims", "2", "--envs", "1", "--modes", "eager", "--repeats", "1"])
    built = []
    real_build = cem_speed.build_world_model
    monkeypatch.setattr(cem_speed, "build_world_model", lambda cfg, dims: built.append((cfg, dims))
                        or real_build(cfg, dims))
    cem_speed.main()
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (cfg, dims), = built
    assert dims == 2 and cfg.model.reward_units == 24  # the override reaches the model that is timed
    assert (line["candidates"], line["horizon"], line["iterations"]) == (16, 3, 2)  # the debug preset's planner
    assert line["overrides"] == ["model.reward_units=24"] and line["s_per_plan"] > 0



def test_rssm_loop_precision_times_both_dtypes_at_each_batch_asked(monkeypatch, capsys):
    import json

    import rssm_loop_precision

    monkeypatch.setattr(sys, "argv", ["rssm_loop_precision.py", "--preset", "debug", "--batches", "2,3",
                                      "--rounds", "1"])
    rssm_loop_precision.main()
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [line["batch"] for line in lines] == [2, 3]
    for line in lines:
        assert line["fp32_ms"] > 0 and line["bf16_ms"] > 0
        assert line["bf16_over_fp32"] == pytest.approx(line["bf16_ms"] / line["fp32_ms"], abs=1e-3)
        assert 0 < line["max_abs_diff"] < 0.5  # bf16 rounds, yet filters the same sequence


def test_rssm_loop_precision_measures_rounding_not_a_different_noise_stream(monkeypatch, capsys):
    """At 50 x 4 numbers torch's bf16 normal draw is another stream than float32's; the difference the script
    reports must still be bf16's rounding, not two noises."""
    import json

    import rssm_loop_precision

    torch.manual_seed(0)
    fp32 = torch.randn(50, 4)
    torch.manual_seed(0)
    bf16 = torch.randn(50, 4, dtype=torch.bfloat16)
    assert (fp32 - bf16.float()).abs().max() > 0.5  # the trap this test is about is there
    monkeypatch.setattr(sys, "argv", ["rssm_loop_precision.py", "--preset", "debug", "--batches", "50",
                                      "--rounds", "1"])
    rssm_loop_precision.main()
    (line,) = [json.loads(text) for text in capsys.readouterr().out.strip().splitlines()]
    assert line["max_abs_diff"] < 0.1


@pytest.mark.parametrize("bad", ["8,x", "0,16", ""])
def test_rssm_loop_precision_refuses_a_batch_that_is_not_a_size_and_names_it(bad, monkeypatch, capsys):
    import rssm_loop_precision

    monkeypatch.setattr(sys, "argv", ["rssm_loop_precision.py", "--batches", bad])
    with pytest.raises(SystemExit):
        rssm_loop_precision.main()
    assert f"--batches must be a comma list of batch sizes of at least 1, got {bad!r}" in capsys.readouterr().err


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _add_argument_calls(script: Path):
    """(flag, the `type=` node) of each parser.add_argument call in `script`; the flag is None where an f-string
    makes it (perfect_model_mpc.py's planner settings)."""
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
            flag = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            yield flag, next((k.value for k in node.keywords if k.arg == "type"), None)


def _counted_options() -> list[tuple[str, str, float]]:
    """(script, flag, least) of every option a benchmark script parses with `at_least(least)`; the options of
    the shared _run_episodes.py are tried through cheetah_flips.py, which adds them."""
    found = []
    for script in sorted(BENCHMARKS.glob("*.py")):
        for flag, kind in _add_argument_calls(script):
            if isinstance(kind, ast.Call) and getattr(kind.func, "id", "") == "at_least":
                name = "cheetah_flips.py" if script.name == "_run_episodes.py" else script.name
                found.append((name, flag or "--horizon", kind.args[0].value))
    return found


def test_no_benchmark_parses_a_count_as_a_bare_int():
    """A bare `type=int` takes 0 or -3 episodes and fails later, or prints a figure of nothing; a seed is the
    one integer that may be any."""
    bare = [(script.name, flag) for script in sorted(BENCHMARKS.glob("*.py"))
            for flag, kind in _add_argument_calls(script) if getattr(kind, "id", "") == "int" and flag != "--seed"]
    assert bare == []
    assert len(_counted_options()) > 60  # the scan reads the scripts' options at all


@pytest.mark.parametrize("script, flag, least", [pytest.param(*o, id=f"{o[0]}:{o[1]}") for o in _counted_options()])
def test_a_benchmark_refuses_a_count_below_its_least_and_names_it(script, flag, least, monkeypatch, capsys):
    module = importlib.import_module(script.removesuffix(".py"))
    bad = str(least - 1) if isinstance(least, int) else str(least - 0.5)
    monkeypatch.setattr(sys, "argv", [script, flag, bad])
    with pytest.raises(SystemExit) as done:
        module.main()
    assert done.value.code == 2
    assert f"argument {flag}: must be at least {least}, got {bad}" in capsys.readouterr().err


def test_ppo_env_steps_runs_the_pendulum_config_in_process(monkeypatch, capsys):
    """It imported a class training.ppo no longer had, and no test ran it."""
    import json

    import ppo_env_steps

    monkeypatch.setattr(sys, "argv", ["ppo_env_steps.py", "--processes", "0", "--episodes", "2"])
    ppo_env_steps.main()
    line = json.loads(capsys.readouterr().out.strip())
    assert (line["config"], line["envs"], line["mode"]) == ("pendulum", 8, "in-process")
    assert line["env_steps_per_s"] > 0


def test_env_process_memory_measures_each_worker_and_only_the_workers(monkeypatch, capsys):
    import json

    import env_process_memory

    monkeypatch.setattr(sys, "argv", ["env_process_memory.py", "--task", "mock", "--envs", "2", "--steps", "1",
                                      "--size", "16"])
    env_process_memory.main()
    result = json.loads(capsys.readouterr().out)
    assert len(result["rss_mb_each"]) == len(result["pss_mb_each"]) == 2  # the resource tracker is not counted
    assert all(0 < pss <= rss for pss, rss in zip(result["pss_mb_each"], result["rss_mb_each"], strict=True))
