import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from planetrl.agents.mpc import MPCAgent
from planetrl.models.world_model import WorldModel
from planetrl.planning.cem import CEMSettings

SETTINGS = CEMSettings(horizon=4, iterations=3, candidates=50, elites=5)
SPACE = gym.spaces.Box(-1, 1, (2,), np.float32)


def _model(variant="deterministic"):
    torch.manual_seed(0)
    return WorldModel(2, 64, variant, belief_size=8, state_size=4, hidden_size=8, depth=4)


def _obs(envs, seed=0):
    rng = np.random.default_rng(seed)
    return {"image": rng.integers(0, 255, (envs, 64, 64, 3), dtype=np.uint8)}


def test_reset_touches_only_the_given_envs():
    agent = MPCAgent(_model("rssm"), SPACE, 3, SETTINGS, warm_start=True)
    agent.act(_obs(3), explore=False)
    before = {k: v.clone() for k, v in agent.state.items()}
    previous = agent.prev_action.clone()
    agent.reset([1])
    for key, value in agent.state.items():
        assert torch.all(value[1] == 0)
        torch.testing.assert_close(value[[0, 2]], before[key][[0, 2]])
    assert torch.all(agent.prev_action[1] == 0)
    torch.testing.assert_close(agent.prev_action[[0, 2]], previous[[0, 2]])
    assert torch.all(agent.plan_mean[1] == 0) and agent.plan_mean[0].abs().sum() > 0


@pytest.mark.parametrize("variant", ["deterministic", "rssm", "ssm"])
def test_batched_agent_equals_one_agent_per_env(variant):
    # Every draw (the filter's posterior, the imagined priors, the candidates, the exploration noise)
    # comes from the env's own generator: the global RNG, reseeded differently each time, changes nothing.
    model = _model(variant)
    batched = MPCAgent(model, SPACE, 3, SETTINGS, seed=4)
    obs = _obs(3)
    actions = []
    for step in range(2):
        torch.manual_seed(100 + step)
        actions.append(batched.act(obs, explore=True))
    for e in range(3):
        alone = MPCAgent(model, SPACE, 1, SETTINGS, seed=4)
        alone.generators = [torch.Generator().manual_seed(4 * 7919 + e)]
        single = {"image": obs["image"][e : e + 1]}
        for step in range(2):
            torch.manual_seed(200 + 10 * e + step)
            np.testing.assert_allclose(alone.act(single, explore=True)[0], actions[step][e], rtol=1e-5, atol=1e-6)


def test_the_agent_sees_an_image_dequantized_with_one_bin_of_uniform_noise_as_in_training(monkeypatch):
    # The original agent preprocesses observations as the training data: floor to `bits` bits, then
    # one bin of uniform noise, not the bin's centre.
    agent = MPCAgent(_model("rssm"), SPACE, 2, SETTINGS, bits=5)
    seen = []
    filter_step = agent.model.filter_step
    monkeypatch.setattr(agent.model, "filter_step", lambda s, a, image, *rest: seen.append(image) or
                        filter_step(s, a, image, *rest))
    obs = _obs(2)
    agent.act(obs)
    offset = (seen[0].numpy() + 0.5) * 32 - (obs["image"] >> 3)  # the position within each pixel's bin
    assert offset.min() >= 0 and offset.max() < 1
    assert abs(offset.mean() - 0.5) < 0.01 and abs(offset.std() - 12 ** -0.5) < 0.01  # uniform on [0, 1)
    agent.act(obs)
    assert not torch.equal(seen[0], seen[1])  # fresh noise at every step


def test_exploration_noise_and_bounds():
    agent = MPCAgent(_model(), SPACE, 2, SETTINGS, noise=5.0)
    action = agent.act(_obs(2), explore=True)
    assert action.shape == (2, 2) and action.dtype == np.float32
    assert np.all(np.abs(action) <= 1.0)
    assert np.any(np.abs(action) == 1.0)  # noise this large must hit the bounds
    quiet = MPCAgent(_model(), SPACE, 2, SETTINGS, noise=0.3, seed=1)
    a = quiet.act(_obs(2), explore=False)
    quiet2 = MPCAgent(_model(), SPACE, 2, SETTINGS, noise=0.3, seed=1)
    np.testing.assert_array_equal(a, quiet2.act(_obs(2), explore=False))


def test_discrete_actions():
    model = WorldModel(3, 64, "deterministic", belief_size=8, hidden_size=8, depth=4)
    with pytest.raises(ValueError, match="discrete=False"):  # settings that contradict the space are an error
        MPCAgent(model, gym.spaces.Discrete(3), 2, SETTINGS)
    agent = MPCAgent(model, gym.spaces.Discrete(3), 2, dataclasses.replace(SETTINGS, discrete=True))
    action = agent.act(_obs(2), explore=False)
    assert action.shape == (2,) and set(action.tolist()) <= {0, 1, 2}
    assert agent.prev_action.shape == (2, 3)


def test_correlated_exploration_noise_is_ar1_with_the_configured_std_and_restarts_at_reset():
    noise, corr = 0.2, 0.9
    # On the first decision both agents draw the same planner samples; only the explorer then draws noise,
    # so the difference of their actions is exactly the exploration noise it stored.
    explorer = MPCAgent(_model(), SPACE, 64, SETTINGS, noise=noise, correlation=corr, seed=3)
    planner_only = MPCAgent(_model(), SPACE, 64, SETTINGS, noise=noise, correlation=corr, seed=3)
    first = explorer.act(_obs(64), explore=True)
    plain = planner_only.act(_obs(64), explore=False)
    inside = np.abs(first) < 1.0
    np.testing.assert_allclose((first - plain)[inside], explorer.explore_noise.numpy()[inside], atol=1e-6)
    history = [explorer.explore_noise.clone()]
    for step in range(30):
        explorer.act(_obs(64, seed=step + 1), explore=True)
        history.append(explorer.explore_noise.clone())
    series = torch.stack(history)  # (T, envs, actions)
    previous, current = series[10:-1], series[11:]
    lag1 = float((previous * current).sum() / (previous * previous).sum())
    assert abs(lag1 - corr) < 0.03
    assert abs(float(series[10:].std()) - noise) < 0.1 * noise
    explorer.reset([5])
    assert torch.all(explorer.explore_noise[5] == 0) and torch.all(explorer.explore_noise[4] != 0)


def test_independent_exploration_noise_has_no_memory():
    agent = MPCAgent(_model(), SPACE, 64, SETTINGS, noise=0.2, seed=3)
    agent.act(_obs(64), explore=True)
    assert torch.all(agent.explore_noise == 0)  # nothing carried over: each decision's noise is fresh


@pytest.mark.parametrize("bad", [-0.1, 1.0])
def test_exploration_correlation_outside_zero_to_one_is_an_error(bad):
    with pytest.raises(ValueError, match=r"exploration correlation .* must be in \[0, 1\)"):
        MPCAgent(_model(), SPACE, 2, SETTINGS, correlation=bad)


def test_correlated_exploration_needs_continuous_actions():
    model = WorldModel(3, 64, "deterministic", belief_size=8, hidden_size=8, depth=4)
    with pytest.raises(ValueError, match="needs continuous actions"):
        MPCAgent(model, gym.spaces.Discrete(3), 2, dataclasses.replace(SETTINGS, discrete=True), correlation=0.5)


def test_a_mean_filtering_model_is_planned_with_the_prior_mean_and_others_with_samples():
    from planetrl.agents.mpc import _Discounted

    torch.manual_seed(0)
    model = WorldModel(2, 64, "rssm", belief_size=8, state_size=4, hidden_size=8, depth=4, filter_mean=True)
    state = {k: v + 0.1 for k, v in model.initial(2).items()}
    actions = torch.rand(2, 5, 2) * 2 - 1
    objective = _Discounted(model, 1.0)
    assert objective.noise_size == 0  # the planner draws no prior noise for it
    torch.manual_seed(1)
    first = objective.imagine(state, actions)
    torch.manual_seed(2)
    torch.testing.assert_close(objective.imagine(state, actions), first)  # no draw: the global RNG changes nothing
    means = model.reward(model.dynamics.imagine_features(state, actions, sample=False))
    torch.testing.assert_close(first, means)
    model.filter_mean = False
    sampled = _Discounted(model, 1.0)
    assert sampled.noise_size == 4
    noise = torch.randn(2, 5, 4)
    torch.testing.assert_close(sampled.imagine(state, actions, noise),
                               model.reward(model.dynamics.imagine_features(state, actions, True, noise)))
    assert not torch.allclose(sampled.imagine(state, actions, noise), first)
