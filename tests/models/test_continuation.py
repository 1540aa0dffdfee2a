"""The continuation head: what it learns from, how the planner weighs imagined rewards with it, and a cliff."""

import numpy as np
import pytest
import torch

from planetrl import config as C
from planetrl.agents.mpc import _Discounted
from planetrl.data.episodes import write_episode
from planetrl.data.loader import Loader
from planetrl.data.replay import Replay
from planetrl.losses import (
    LossWeights,
    continuation_loss,
    open_loop_continuation_nll,
    open_loop_priors,
    world_model_loss,
)
from planetrl.models.world_model import WorldModel, expected_rewards
from planetrl.planning.cem import CEMSettings, plan
from planetrl.training.updater import WorldModelUpdater, build_world_model


def test_expected_rewards_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    continues = torch.tensor([[0.5, 0.8, 1.0, 0.1]])
    # r_0 counts in full; r_1 arrives only if the episode went on after s_0 (0.5); r_2 after s_0 and s_1.
    expected = [1.0, 2.0 * 0.5 * 0.9, 3.0 * 0.5 * 0.8 * 0.81, 4.0 * 0.5 * 0.8 * 1.0 * 0.729]
    torch.testing.assert_close(expected_rewards(rewards, continues, 0.9), torch.tensor([expected]))
    torch.testing.assert_close(expected_rewards(rewards, None, 1.0), rewards)  # PlaNet: the plain sum


def test_the_tail_past_the_horizon_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0]])
    continues = torch.tensor([[0.5, 0.8, 0.9]])
    # The last step's weighted reward, 3 x 0.9^2 x 0.5 x 0.8, then again every step after it, each
    # time times 0.9 x 0.9 (discount x the last step's continuation): a geometric series.
    last = 3.0 * 0.81 * 0.5 * 0.8
    expected = [1.0, 2.0 * 0.9 * 0.5, last / (1.0 - 0.9 * 0.9)]
    torch.testing.assert_close(expected_rewards(rewards, continues, 0.9, tail=True), torch.tensor([expected]))
    no_head = expected_rewards(rewards, None, 0.5, tail=True)
    torch.testing.assert_close(no_head, torch.tensor([[1.0, 1.0, 3.0 * 0.25 / 0.5]]))
    with pytest.raises(ValueError, match="discount below 1"):
        expected_rewards(rewards, continues, 1.0, tail=True)


class _HazardModel:
    """A stand-in model: action > 0 pays 1.6 a step and ends the episode with probability 0.2 each step;
    action <= 0 pays 1 and never ends. The best plan is to stay safe; only the horizon hides that."""

    filter_mean, noise_size = False, 0

    @staticmethod
    def imagine(state, actions, discount, noise=None, sample=True, tail=False):
        fast = (actions[..., 0] > 0).float()
        return expected_rewards(1.0 + 0.6 * fast, 1.0 - 0.2 * fast, discount, tail)


@pytest.mark.parametrize("tail", [False, True])
def test_the_tail_makes_the_planner_price_staying_alive_past_the_horizon(tail):
    # Horizon 3 without the tail: always fast, 1.6 (1 + 0.8 x 0.9 + 0.64 x 0.81) = 3.58, beats every other
    # plan (always safe 2.71, safe then fast 3.48). With it, always safe is worth 1 / (1 - 0.9) = 10 and
    # always fast 1.6 (1 + 0.72 + 0.518 / (1 - 0.72)) = 5.71.
    settings = CEMSettings(horizon=3, iterations=6, candidates=200, elites=20)
    result = plan(_Discounted(_HazardModel(), 0.9, tail), {"stoch": torch.zeros(1, 1)}, 1, settings,
                  [torch.Generator().manual_seed(0)])
    first = float(result.first_action()[0, 0])
    assert (first < 0) if tail else (first > 0)


def test_the_tail_needs_a_discount_below_one():
    with pytest.raises(C.ConfigError, match=r"planner\.discount"):
        C.build("paper", ["planner.tail=true"])
    with pytest.raises(C.ConfigError, match=r"planner\.discount"):
        C.build("cpu128", ["planner.discount=1.0"])
    assert C.build("paper", ["planner.tail=true", "planner.discount=0.99"]).planner.tail
    with pytest.raises(ValueError, match="discount below 1"):
        _Discounted(_HazardModel(), 1.0, tail=True).imagine({}, torch.ones(1, 3, 1))


def test_the_head_loss_leaves_out_time_limit_ends_and_learns_true_ones():
    logits = torch.zeros(1, 4, requires_grad=True)
    is_last = torch.tensor([[False, False, False, True]])
    truncated = continuation_loss(logits, is_last, torch.zeros(1, 4, dtype=torch.bool))
    truncated.backward()
    assert logits.grad[0, 3] == 0  # a time-limit end teaches nothing
    assert torch.all(logits.grad[0, :3] < 0)  # the running steps push towards "continues"
    logits.grad = None
    terminal = continuation_loss(logits, is_last, is_last.clone())
    terminal.backward()
    assert logits.grad[0, 3] > 0  # a true end pushes towards "ends"
    assert truncated.item() == pytest.approx(np.log(2))


def _cliff_episodes(directory, count=120, limit=16, seed=0):
    """A task with a cliff: action > 0.5 pays 2 and ends the episode; any other action pays 1.

    The images carry nothing; the model must learn reward and ending from the action alone.
    """
    rng = np.random.default_rng(seed)
    for _ in range(count):
        actions, rewards, terminal = [np.zeros(1, np.float32)], [0.0], False
        while len(actions) <= limit and not terminal:
            jump = rng.random() < 0.2
            action = rng.uniform(0.55, 1.0) if jump else rng.uniform(-1.0, 0.45)
            actions.append(np.array([action], np.float32))
            rewards.append(2.0 if jump else 1.0)
            terminal = jump
        steps = len(actions)
        write_episode(directory, {
            "image": np.full((steps, 64, 64, 3), 128, np.uint8), "action": np.stack(actions),
            "reward": np.array(rewards, np.float32), "is_first": np.arange(steps) == 0,
            "is_last": np.arange(steps) == steps - 1, "is_terminal": (np.arange(steps) == steps - 1) & terminal})


def _trained(directory, continuation: bool):
    cfg = C.build("debug", ["data.batch_size=16", "data.chunk_length=4", f"model.continuation={continuation}",
                            "optim.lr=3e-3", "loss.free_nats=0", "loss.continuation_scale=10"])
    torch.manual_seed(0)
    model = build_world_model(cfg, 1)
    updater = WorldModelUpdater(model, cfg, torch.device("cpu"))
    replay = Replay(directory, cfg.data.chunk_length)
    replay.refresh()
    for batch in Loader(replay, cfg.data.batch_size, cfg.data.image_bits, "cpu", prefetch=0, seed=0).take(400):
        updater.update(batch)
    return model.eval()


def _first_action(model, seed=0):
    state = model.initial(1)
    image = torch.zeros(1, 64, 64, 3)
    with torch.no_grad():
        state = model.filter_step(state, torch.zeros(1, 1), image)
        settings = CEMSettings(horizon=8, iterations=6, candidates=300, elites=30)
        result = plan(_Discounted(model, 1.0), state, 1, settings, [torch.Generator().manual_seed(seed)])
    return float(result.first_action()[0, 0])


def test_with_the_head_the_planner_avoids_the_cliff_and_without_it_jumps(tmp_path):
    _cliff_episodes(tmp_path)
    with_head = _trained(tmp_path, continuation=True)
    without_head = _trained(tmp_path, continuation=False)
    assert _first_action(with_head) < 0.5  # 1 per step for 8 steps beats 2 once
    assert _first_action(without_head) > 0.5  # in imagination the drive goes on after the cliff


def test_the_head_is_off_in_the_paper_preset_and_on_in_the_driving_presets():
    assert C.build("paper").model.continuation is False and C.build("paper").planner.discount == 1.0
    assert C.build("cpu128").model.continuation and C.build("carla128").model.continuation
    assert not C.build("paper").planner.tail
    assert C.build("cpu128").planner.tail and C.build("carla128").planner.tail
    assert build_world_model(C.build("cpu128"), 2).continue_head is not None
    assert build_world_model(C.build("cpu"), 2).continue_head is None


class _RollingModel:
    """A stand-in world model: the prior is s' = 0.5 s + a, the features are s and the head's logit is s."""

    class dynamics:  # read as `model.dynamics`, like the real one
        @staticmethod
        def prior_step(state, action):
            stoch = 0.5 * state["stoch"] + action
            return {"stoch": stoch, "mean": stoch, "std": torch.full_like(stoch, 0.2)}

    @staticmethod
    def features(state):
        return state["stoch"]

    @staticmethod
    def continue_logits(features):
        return features.squeeze(-1)


def test_the_open_loop_head_loss_equals_a_hand_computation():
    rng = np.random.default_rng(0)
    steps, distance = 7, 3
    stoch = rng.normal(size=(1, steps, 1)).astype(np.float32)
    actions = rng.normal(size=(1, steps, 1)).astype(np.float32)
    is_first = np.zeros((1, steps), bool)
    is_first[0, 4] = True  # a second episode starts at step 4 (the chunk ran across episodes)
    is_last = np.zeros((1, steps), bool)
    is_last[0, 3] = is_last[0, 6] = True
    is_terminal = np.zeros((1, steps), bool)
    is_terminal[0, 3] = True  # step 3 is a crash; step 6 is a time-limit end
    posterior = {"stoch": torch.tensor(stoch), "mean": torch.tensor(stoch), "std": torch.ones(1, steps, 1)}
    batch = {"action": torch.tensor(actions), "is_first": torch.tensor(is_first),
             "is_last": torch.tensor(is_last), "is_terminal": torch.tensor(is_terminal)}
    model = _RollingModel()
    priors = list(open_loop_priors(model, posterior, batch["action"], batch["is_first"], distance))
    got = open_loop_continuation_nll(model, batch, priors)

    terms = []
    for t in range(steps):
        for d in range(1, distance + 1):
            end = t + d
            if end >= steps or is_first[0, t + 1:end + 1].any():
                continue  # past the chunk, or imagined across an episode start
            if is_last[0, end] and not is_terminal[0, end]:
                continue  # a time-limit end says nothing
            logit = stoch[0, t, 0]
            for k in range(1, d + 1):
                logit = 0.5 * logit + actions[0, t + k, 0]
            continues = not is_terminal[0, end]
            terms.append(np.log1p(np.exp(-logit)) if continues else np.log1p(np.exp(logit)))
    # The crash at 3 is seen from 0, 1 and 2; nothing reaches past the start at 4 from before it.
    assert len(terms) == 3 + 2 + 1 + 0 + 1 + 0  # from steps 0..5; 4 -> 6 is the time limit
    assert got.item() == pytest.approx(np.mean(terms), rel=1e-5)


def test_the_open_loop_head_loss_trains_the_prior_the_planner_imagines_with():
    torch.manual_seed(0)
    model = WorldModel(2, 64, belief_size=16, state_size=4, hidden_size=16, depth=4, reward_layers=1,
                       reward_units=16, continuation=True)
    g = torch.Generator().manual_seed(0)
    is_first = torch.zeros(2, 6, dtype=torch.bool)
    is_first[:, 0] = True
    is_last = torch.zeros(2, 6, dtype=torch.bool)
    is_last[:, -1] = True
    batch = {"image": torch.rand(2, 6, 64, 64, 3, generator=g) - 0.5,
             "action": torch.rand(2, 6, 2, generator=g) * 2 - 1, "reward": torch.rand(2, 6, generator=g),
             "is_first": is_first, "is_last": is_last, "is_terminal": is_last.clone()}
    grads = []
    for open_loop in (0, 2):
        model.zero_grad()
        weights = LossWeights(kl_scale=0.0, free_nats=0.0, overshooting=0, continuation_open_loop=open_loop)
        loss, metrics = world_model_loss(model, batch, weights)
        loss.backward()
        grads.append(model.dynamics.prior_out.weight.grad)
        assert ("continuation_open_loop_nll" in metrics) == bool(open_loop)
    # Without a KL or overshooting term only the imagined states reach the prior's output layer.
    assert grads[0] is None or torch.count_nonzero(grads[0]) == 0
    assert torch.count_nonzero(grads[1]) > 0
