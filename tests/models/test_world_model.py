import pytest
import torch

from planetrl import config as C
from planetrl.losses import LossWeights, world_model_loss
from planetrl.models.networks import ConvDecoder, ConvEncoder
from planetrl.models.world_model import WorldModel
from planetrl.training.updater import WorldModelUpdater, build_world_model


def _moving_square(batch=4, steps=12, size=64):
    """A square that moves right over a dark background; reward is its x position."""
    images = torch.full((batch, steps, size, size, 3), -0.4)
    rewards = torch.zeros(batch, steps)
    actions = torch.zeros(batch, steps, 2)
    for b in range(batch):
        for t in range(steps):
            x = 4 + 3 * t + 2 * b
            y = 8 + 10 * b
            images[b, t, y : y + 12, x : x + 12] = torch.tensor([0.4, 0.1 * b, -0.2])
            rewards[b, t] = x / size
            actions[b, t, 0] = 0.5 if t else 0.0
    is_first = torch.zeros(batch, steps, dtype=torch.bool)
    is_first[:, 0] = True
    return {"image": images, "action": actions, "reward": rewards, "is_first": is_first}


@pytest.mark.parametrize("size, layers", [(64, 4), (128, 5)])
def test_encoder_decoder_shapes(size, layers):
    encoder = ConvEncoder(size, depth=8)
    assert sum(isinstance(m, torch.nn.Conv2d) for m in encoder.modules()) == layers
    assert encoder(torch.zeros(2, 3, size, size, 3)).shape == (2, 3, 256)
    decoder = ConvDecoder(10, size, depth=8)
    assert decoder(torch.zeros(2, 3, 10)).shape == (2, 3, size, size, 3)
    with pytest.raises(ValueError, match="image size 96 is not supported"):
        ConvEncoder(96)


def test_paper_encoder_has_the_published_layers():
    encoder = ConvEncoder(64, depth=32)
    convs = [m for m in encoder.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [32, 64, 128, 256]
    assert all(c.kernel_size == (4, 4) and c.stride == (2, 2) for c in convs)
    assert encoder.embed_size == 1024
    decoder = ConvDecoder(230, 64, depth=32)
    deconvs = [m for m in decoder.modules() if isinstance(m, torch.nn.ConvTranspose2d)]
    assert [d.out_channels for d in deconvs] == [128, 64, 32, 3]
    assert [d.kernel_size[0] for d in deconvs] == [5, 5, 6, 6]


def test_model_overfits_a_small_fixed_dataset():
    torch.manual_seed(0)
    data = _moving_square()
    cfg = C.build(None, ["model.belief_size=32", "model.state_size=8", "model.hidden_size=32", "model.depth=8",
                         "model.reward_layers=1", "model.reward_units=32", "optim.lr=3e-3", "loss.free_nats=0.5"])
    updater = WorldModelUpdater(build_world_model(cfg, 2), cfg, torch.device("cpu"))
    model = updater.model

    def errors():
        with torch.no_grad():
            posterior, _ = model.observe(data["image"], data["action"], data["is_first"])
            features = model.features(posterior)
            image_mse = ((model.decode(features) - data["image"]) ** 2).mean().item()
            reward_mse = ((model.reward(features) - data["reward"]) ** 2).mean().item()
        return image_mse, reward_mse

    image_before, _ = errors()
    for _ in range(300):
        updater.update(data)
    image_after, reward_after = errors()
    assert image_after < image_before / 10
    assert reward_after < 0.1 * data["reward"].var().item()


@pytest.mark.parametrize("variant", ["rssm", "ssm", "deterministic"])
def test_each_variant_trains_and_its_kl_behaves(variant):
    torch.manual_seed(0)
    data = _moving_square(batch=2, steps=6)
    cfg = C.build(None, [f"model.variant={variant}", "model.belief_size=16", "model.state_size=4",
                         "model.hidden_size=16", "model.depth=4", "loss.free_nats=0"])
    updater = WorldModelUpdater(build_world_model(cfg, 2), cfg, torch.device("cpu"))
    first = updater.update(data)
    for _ in range(10):
        last = updater.update(data)
    assert last["loss"] < first["loss"]
    if variant == "deterministic":
        assert "kl" not in last  # no stochastic part: the KL term is absent
        assert updater.model.dynamics.state_size == 0
    else:
        assert last["kl"] > 0
    if variant == "ssm":
        assert updater.model.dynamics.belief_size == 0
    features = updater.model.features(updater.model.initial(3))
    expected = {"rssm": 20, "ssm": 4, "deterministic": 16}[variant]
    assert features.shape == (3, expected)


def test_observe_resets_state_at_episode_starts():
    torch.manual_seed(0)
    model = WorldModel(2, 64, belief_size=8, state_size=4, hidden_size=8, depth=4)
    data = _moving_square(batch=1, steps=6)
    is_first = data["is_first"].clone()
    is_first[0, 3] = True
    # With a reset at t=3, steps 3.. depend only on the data from t=3 on.
    torch.manual_seed(1)
    full, _ = model.observe(data["image"], data["action"], is_first)
    torch.manual_seed(1)
    model.observe(data["image"][:, :3], data["action"][:, :3], is_first[:, :3])
    tail, _ = model.observe(data["image"][:, 3:], data["action"][:, 3:], is_first[:, 3:])
    torch.testing.assert_close(full["deter"][:, 3:], tail["deter"])
    torch.testing.assert_close(full["mean"][:, 3:], tail["mean"])


def test_imagine_predicts_one_reward_per_step():
    model = WorldModel(2, 64, belief_size=8, state_size=4, hidden_size=8, depth=4)
    rewards = model.imagine(model.initial(5), torch.zeros(5, 7, 2))
    assert rewards.shape == (5, 7)


def test_nan_loss_is_reported():
    cfg = C.build(None, ["model.belief_size=8", "model.state_size=4", "model.hidden_size=8", "model.depth=4"])
    updater = WorldModelUpdater(build_world_model(cfg, 2), cfg, torch.device("cpu"))
    data = _moving_square(batch=1, steps=3)
    data["reward"][0, 1] = float("nan")
    with pytest.raises(FloatingPointError, match="reward_nll=nan"):
        updater.update(data)


def test_loss_terms_use_the_configured_scales():
    torch.manual_seed(0)
    model = WorldModel(2, 64, belief_size=8, state_size=4, hidden_size=8, depth=4)
    data = _moving_square(batch=2, steps=4)
    torch.manual_seed(5)
    loss, m = world_model_loss(model, data, LossWeights(free_nats=0.0, kl_scale=2.0, reward_scale=10.0))
    torch.testing.assert_close(loss, m["image_nll"] + 10 * m["reward_nll"] + 2 * m["kl"])
