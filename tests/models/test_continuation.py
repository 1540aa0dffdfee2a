"""The continuation head: what it learns from, how the planner weighs imagined rewards with it, and a cliff."""

import numpy as np
import pytest
import torch

from planetrl import config as C
from planetrl.agents.mpc import _Discounted
from planetrl.data.episodes import write_episode
from planetrl.data.loader import Loader
from planetrl.data.replay import Replay
from planetrl.losses import continuation_loss
from planetrl.models.world_model import expected_rewards
from planetrl.planning.cem import CEMSettings, plan
from planetrl.training.updater import WorldModelUpdater, build_world_model


def test_expected_rewards_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    continues = torch.tensor([[0.5, 0.8, 1.0, 0.1]])
    # r_0 counts in full; r_1 arrives only if the episode went on after s_0 (0.5); r_2 after s_0 and s_1.
    expected = [1.0, 2.0 * 0.5 * 0.9, 3.0 * 0.5 * 0.8 * 0.81, 4.0 * 0.5 * 0.8 * 1.0 * 0.729]
    torch.testing.assert_close(expected_rewards(rewards, continues, 0.9), torch.tensor([expected]))
    torch.testing.assert_close(expected_rewards(rewards, None, 1.0), rewards)  # PlaNet: the plain sum


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
    assert build_world_model(C.build("cpu128"), 2).continue_head is not None
    assert build_world_model(C.build("cpu"), 2).continue_head is None
