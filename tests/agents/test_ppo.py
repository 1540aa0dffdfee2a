import gymnasium as gym
import numpy as np
import pytest
import torch

from planetrl.agents.ppo import PPOAgent, PPOSettings, StreamingNormalizer, adapt_penalty, gae
from planetrl.cli import main
from planetrl.envs.batch import BatchEnv
from planetrl.envs.mock import MockEnv
from planetrl.metrics import read_metrics
from planetrl.training.driver import Driver


def test_gae_matches_a_hand_computation():
    # Three steps, V = 1, 2, 3 and V(s_3) = 4; gamma 0.9, lambda 0.8; not terminal (a time-limit cut).
    rewards = np.array([1.0, 0.0, 2.0])
    values = np.array([1.0, 2.0, 3.0])
    next_values = np.array([2.0, 3.0, 4.0])
    d0 = 1 + 0.9 * 2 - 1  # 1.8
    d1 = 0 + 0.9 * 3 - 2  # 0.7
    d2 = 2 + 0.9 * 4 - 3  # 2.6
    a2 = d2
    a1 = d1 + 0.9 * 0.8 * a2
    a0 = d0 + 0.9 * 0.8 * a1
    advantages, targets = gae(rewards, values, next_values, np.zeros(3, bool), 0.9, 0.8)
    np.testing.assert_allclose(advantages, [a0, a1, a2])
    np.testing.assert_allclose(targets, [a0 + 1, a1 + 2, a2 + 3])
    # A true terminal at the end does not bootstrap from V(s_3).
    advantages, _ = gae(rewards, values, next_values, np.array([False, False, True]), 0.9, 0.8)
    assert advantages[2] == pytest.approx(2 - 3)


def test_gae_with_lambda_one_is_the_discounted_return_minus_value():
    rng = np.random.default_rng(0)
    rewards, values = rng.normal(size=6), rng.normal(size=6)
    terminals = np.zeros(6, bool)
    terminals[-1] = True
    advantages, _ = gae(rewards, values, np.roll(values, -1), terminals, 0.95, 1.0)
    returns = [sum(0.95**k * rewards[t + k] for k in range(6 - t)) for t in range(6)]
    np.testing.assert_allclose(advantages, np.array(returns) - values)


def test_streaming_normalization_equals_batch_statistics():
    rng = np.random.default_rng(1)
    data = rng.normal(3.0, 2.0, size=(1000, 4))
    norm = StreamingNormalizer(4, clip=0)
    for chunk in np.array_split(data, 17):
        norm.update(torch.as_tensor(chunk))
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(norm.variance.numpy(), data.var(0), rtol=1e-10)
    out = norm(torch.as_tensor(data)).numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-8)
    np.testing.assert_allclose(out.std(0), 1, atol=1e-6)
    clipped = StreamingNormalizer(4, clip=5.0)
    clipped.update(torch.as_tensor(data))
    assert clipped(torch.full((1, 4), 1e6)).max() == 5.0


def test_kl_penalty_moves_in_the_right_direction():
    assert adapt_penalty(1.0, kl=0.05, target=0.01) == 1.5
    assert adapt_penalty(1.0, kl=0.001, target=0.01) == pytest.approx(1 / 1.5)
    assert adapt_penalty(1.0, kl=0.01, target=0.01) == 1.0


def test_update_adapts_the_penalty_from_the_measured_kl():
    env = BatchEnv([MockEnv(durations=(8,)) for _ in range(3)])
    tiny = PPOSettings(epochs=1, lr=1e-7, policy_layers=(8,), value_layers=(8,))
    agent = PPOAgent(2, env.action_space, 3, tiny)
    Driver(env, agent).run(3)
    metrics = agent.update()
    assert metrics["kl"] < tiny.kl_target / 1.3 and agent.penalty < 1.0  # tiny steps: KL below target
    bold = PPOSettings(epochs=25, lr=0.1, kl_init_penalty=0.001, kl_cutoff_coef=0.0, policy_layers=(8,),
                       value_layers=(8,))
    agent = PPOAgent(2, env.action_space, 3, bold)
    Driver(env, agent).run(3)
    metrics = agent.update()
    assert metrics["kl"] > bold.kl_target * 1.3 and agent.penalty == pytest.approx(0.0015)  # grown 1.5x


def test_discrete_policy_acts_and_learns():
    env = BatchEnv([MockEnv(durations=(5,), discrete=3) for _ in range(2)])
    agent = PPOAgent(2, gym.spaces.Discrete(3), 2, PPOSettings(epochs=2, policy_layers=(8,), value_layers=(8,)))
    Driver(env, agent).run(2)
    assert agent.update()["steps"] == 10


def test_ppo_cli_end_to_end_and_resume(tmp_path, capsys):
    assert main(["ppo", "train", "--config", "debug", "--logdir", str(tmp_path), "--no-progress"]) == 0
    run = tmp_path / "run-00"
    records = read_metrics(run)
    assert any("eval/return" in r for r in records)
    assert max(r["step"] for r in records) >= 150
    (run / "DONE").unlink()
    assert main(["ppo", "train", "--config", "debug", "--logdir", str(tmp_path), "--no-progress",
                 "--set", "ppo.total_steps=300"]) == 2  # the saved config wins
    assert "ppo.total_steps" in capsys.readouterr().err
    assert main(["ppo", "visualize", "--run", str(run), "--out", str(tmp_path / "viz"), "--episodes", "2"]) == 0
    assert (tmp_path / "viz" / "policy-01.gif").exists()


def test_ppo_learns_a_task_whose_best_action_is_in_the_state():
    # MockEnv's state holds the target; reward -|a - target|. Random actions score about -14 over 20 steps.
    from planetrl.envs.wrappers import DropImage

    env = BatchEnv([DropImage(MockEnv(durations=(20,), action_size=1)) for _ in range(8)])
    agent = PPOAgent(2, env.action_space, 8, PPOSettings(minibatches=4, lr=1e-3, epochs=10, policy_layers=(32,),
                                                         value_layers=(32,)))
    returns = []
    for update in range(30):
        Driver(env, agent, seed=update).run(8)
        returns.append(agent.update()["return"])
    assert np.mean(returns[:3]) < -11 and np.mean(returns[-3:]) > -5
