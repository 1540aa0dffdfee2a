import numpy as np
import torch

from planetrl.losses import LossWeights, free_nats, gaussian_kl, overshooting_kls, world_model_loss
from planetrl.models.world_model import WorldModel


def _batch(batch=3, steps=6, size=64, actions=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    is_first = torch.zeros(batch, steps, dtype=torch.bool)
    is_first[:, 0] = True
    return {"image": torch.rand(batch, steps, size, size, 3, generator=g) - 0.5,
            "action": torch.rand(batch, steps, actions, generator=g) * 2 - 1,
            "reward": torch.rand(batch, steps, generator=g), "is_first": is_first}


def _small_model(variant="rssm", seed=0):
    torch.manual_seed(seed)
    return WorldModel(2, 64, variant, belief_size=16, state_size=4, hidden_size=16, depth=4,
                      reward_layers=1, reward_units=16)


def test_free_nats_clamp_every_step_exactly():
    low = torch.tensor([1.0, 2.0], requires_grad=True)  # both below 3: clamped, no gradient
    value = free_nats(low, 3.0)
    value.backward()
    assert value.item() == 3.0 and torch.all(low.grad == 0)
    mixed = torch.tensor([[1.0, 5.0]], requires_grad=True)  # mean 3, yet the step above 3 still trains
    value = free_nats(mixed, 3.0)
    value.backward()
    assert value.item() == 4.0 and torch.allclose(mixed.grad, torch.tensor([[0.0, 0.5]]))
    masked = torch.tensor([[6.0, 100.0]], requires_grad=True)  # the masked step neither counts nor trains
    value = free_nats(masked, 3.0, torch.tensor([[True, False]]))
    value.backward()
    assert value.item() == 6.0 and torch.allclose(masked.grad, torch.tensor([[1.0, 0.0]]))


def test_prior_learns_while_the_mean_kl_is_under_the_allowance():
    batch = _batch(steps=8)
    model = _small_model(seed=4)
    torch.manual_seed(5)
    posterior, prior = model.observe(batch["image"], batch["action"], batch["is_first"])
    kl = gaussian_kl(posterior, prior).detach()
    allowance = float((kl.mean() + kl.max()) / 2)  # above the mean, below the largest step
    torch.manual_seed(5)
    loss, metrics = world_model_loss(model, batch, LossWeights(free_nats=allowance, reward_scale=0.0))
    assert metrics["kl"].item() < allowance
    loss.backward()
    # Only the KL term reaches the prior head; clamping the mean KL would leave it without gradient.
    assert model.dynamics.prior_out.weight.grad.abs().sum() > 0


def test_gaussian_kl_matches_closed_form():
    lhs = {"mean": torch.tensor([[0.5, -1.0]]), "std": torch.tensor([[1.0, 0.5]])}
    rhs = {"mean": torch.tensor([[0.0, 0.0]]), "std": torch.tensor([[2.0, 1.0]])}
    expected = sum(np.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
                   for m1, s1, m2, s2 in [(0.5, 1.0, 0.0, 2.0), (-1.0, 0.5, 0.0, 1.0)])
    assert np.isclose(gaussian_kl(lhs, rhs).item(), expected)


def test_overshooting_distance_one_equals_the_ordinary_kl():
    model = _small_model()
    batch = _batch()
    posterior, prior = model.observe(batch["image"], batch["action"], batch["is_first"])
    [(kl, mask)] = overshooting_kls(model, posterior, batch["action"], batch["is_first"], 1)
    ordinary = gaussian_kl(posterior, prior)
    # Entry t of distance 1 compares the posterior at t+1 with the prior rolled from t.
    assert mask[:, :-1].all() and not mask[:, -1].any()
    torch.testing.assert_close(kl[:, :-1], ordinary[:, 1:])


class _LinearDynamics(torch.nn.Module):
    """s' ~ N(0.5 s + a, 0.2^2) with no sampling noise: a cell whose rollouts have a closed form."""

    def prior_step(self, state, action, sample=True):
        mean = 0.5 * state["stoch"] + action
        std = torch.full_like(mean, 0.2)
        return {"stoch": mean, "mean": mean, "std": std}


class _LinearModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dynamics = _LinearDynamics()


def test_overshooting_equals_a_hand_computation_on_a_linear_cell():
    rng = np.random.default_rng(0)
    steps, distance = 5, 3
    post_mean = rng.normal(size=(1, steps, 1)).astype(np.float32)
    post_std = rng.uniform(0.3, 1.0, size=(1, steps, 1)).astype(np.float32)
    actions = rng.normal(size=(1, steps, 1)).astype(np.float32)
    posterior = {"stoch": torch.tensor(post_mean), "mean": torch.tensor(post_mean), "std": torch.tensor(post_std)}
    is_first = torch.zeros(1, steps, dtype=torch.bool)
    pairs = overshooting_kls(_LinearModel(), posterior, torch.tensor(actions), is_first, distance)
    for d, (kl, mask) in enumerate(pairs, 1):
        for t in range(steps):
            if t + d >= steps:
                assert not mask[0, t]
                continue
            s = post_mean[0, t, 0]
            for k in range(1, d + 1):
                s = 0.5 * s + actions[0, t + k, 0]
            m1, s1 = post_mean[0, t + d, 0], post_std[0, t + d, 0]
            expected = np.log(0.2 / s1) + (s1**2 + (m1 - s) ** 2) / (2 * 0.2**2) - 0.5
            assert mask[0, t]
            assert np.isclose(kl[0, t].item(), expected, rtol=1e-5), (d, t)


def test_overshooting_masks_pairs_across_an_episode_start():
    is_first = torch.zeros(1, 6, dtype=torch.bool)
    is_first[0, 3] = True
    posterior = {k: torch.ones(1, 6, 1) for k in ("stoch", "mean", "std")}
    pairs = overshooting_kls(_LinearModel(), posterior, torch.zeros(1, 6, 1), is_first, 2)
    # Distance 2: 0->2 and 3->5 stay inside an episode; 1->3 and 2->4 cross the start at 3.
    assert pairs[1][1][0].tolist() == [True, False, False, True, False, False]


def test_overshooting_targets_receive_no_gradient():
    class _Ignore(_LinearDynamics):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.tensor(1.0))

        def prior_step(self, state, action, sample=True):
            mean = action * self.weight
            return {"stoch": mean, "mean": mean, "std": torch.full_like(mean, 0.5)}

    model = _LinearModel()
    model.dynamics = _Ignore()
    mean = torch.randn(2, 5, 1, requires_grad=True)
    std = (torch.rand(2, 5, 1) + 0.5).requires_grad_()
    posterior = {"stoch": mean, "mean": mean, "std": std}
    pairs = overshooting_kls(model, posterior, torch.randn(2, 5, 1), torch.zeros(2, 5, dtype=torch.bool), 3)
    total = sum((kl * mask).sum() for kl, mask in pairs)
    assert total.item() > 0
    total.backward()
    assert model.dynamics.weight.grad.abs() > 0  # the prior side learns
    # The rollout ignores its start, so any gradient could only reach the posterior as a target.
    assert mean.grad is None or torch.all(mean.grad == 0)
    assert std.grad is None or torch.all(std.grad == 0)


def test_overshooting_keeps_the_one_step_kl_at_full_weight_and_adds_the_scaled_mean_of_distances_2_to_d():
    batch = _batch(steps=8)
    model = _small_model(seed=2)
    torch.manual_seed(3)
    off, metrics_off = world_model_loss(model, batch, LossWeights(free_nats=0, overshooting=0))
    torch.manual_seed(3)
    on, metrics_on = world_model_loss(model, batch, LossWeights(free_nats=0, overshooting=4, overshooting_scale=0.5))
    # The original code's form: loss = likelihoods + 1 * KL_1 + scale * mean over valid (t, d), d = 2..4.
    # (The earlier form, (KL_1 + ... + KL_D) / D, cut the one-step KL's weight D-fold.)
    torch.testing.assert_close(metrics_on["kl"], metrics_off["kl"])
    torch.testing.assert_close(on, off + 0.5 * metrics_on["overshooting_kl"], rtol=1e-5, atol=1e-3)
    posterior, _ = model.observe(batch["image"], batch["action"], batch["is_first"])
    pairs = overshooting_kls(model, posterior, batch["action"], batch["is_first"], 4)[1:]
    valid = sum(int(mask.sum()) for _, mask in pairs)
    assert valid == 3 * (6 + 5 + 4)  # 3 sequences; distances 2, 3, 4 leave 6, 5, 4 valid starts of 8 steps


def test_terminal_reward_shifts_the_reward_target_at_terminal_steps_only():
    model = _small_model()
    batch = _batch()
    batch["is_terminal"] = torch.zeros(3, 6, dtype=torch.bool)
    batch["is_terminal"][0, 5] = batch["is_terminal"][2, 3] = True
    shifted = dict(batch, reward=batch["reward"] - 2.0 * batch["is_terminal"].float())

    def terms(data, weights):
        torch.manual_seed(1)  # the same posterior samples in each call
        return world_model_loss(model, data, weights)[1]

    with_penalty = terms(batch, LossWeights(terminal_reward=-2.0))
    by_hand, without = terms(shifted, LossWeights()), terms(batch, LossWeights())
    torch.testing.assert_close(with_penalty["reward_nll"], by_hand["reward_nll"])
    assert with_penalty["reward_nll"] > without["reward_nll"] + 0.1


def test_image_scale_weighs_the_image_term_alone():
    batch = _batch(steps=6)
    model = _small_model(seed=7)
    losses = {}
    for scale in (1.0, 3.0):
        torch.manual_seed(11)  # the same posterior samples for both
        losses[scale] = world_model_loss(model, batch, LossWeights(image_scale=scale))
    (loss1, metrics1), (loss3, metrics3) = losses[1.0], losses[3.0]
    assert torch.allclose(metrics1["image_nll"], metrics3["image_nll"])  # the metric stays the plain NLL
    assert torch.allclose(loss3 - loss1, 2.0 * metrics1["image_nll"], rtol=1e-5)


def test_decode_mean_reconstructs_from_the_posterior_mean_and_the_default_from_its_sample():
    batch = _batch(steps=5)
    model = _small_model(seed=2)
    nlls = {}
    for decode_mean in (False, True):
        torch.manual_seed(7)
        _, metrics = world_model_loss(model, batch, LossWeights(decode_mean=decode_mean))
        nlls[decode_mean] = metrics["image_nll"].item()
    torch.manual_seed(7)
    posterior, _ = model.observe(batch["image"], batch["action"], batch["is_first"])
    for decode_mean, key in ((False, "stoch"), (True, "mean")):
        features = torch.cat([posterior["deter"], posterior[key]], -1)
        squared = (model.decode(features) - batch["image"]).pow(2).sum((2, 3, 4)).mean()
        expected = 0.5 * squared.item() + 0.5 * np.log(2 * np.pi) * 64 * 64 * 3
        assert np.isclose(nlls[decode_mean], expected, rtol=1e-6)
    assert not np.isclose(nlls[False], nlls[True], rtol=1e-6)  # the sample is not its mean


def test_filter_mean_makes_the_posterior_its_mean_in_training_and_acting_on_both_loops():
    batch = _batch(steps=5)
    for init in ("tf", "torch"):  # tf runs the fused loop, torch the step-by-step one
        torch.manual_seed(3)
        model = WorldModel(2, 64, "rssm", belief_size=16, state_size=4, hidden_size=16, depth=4,
                           reward_layers=1, reward_units=16, init=init, filter_mean=True)
        sampled = WorldModel(2, 64, "rssm", belief_size=16, state_size=4, hidden_size=16, depth=4,
                             reward_layers=1, reward_units=16, init=init)
        sampled.load_state_dict(model.state_dict())
        posterior, _ = model.observe(batch["image"], batch["action"], batch["is_first"])
        assert torch.equal(posterior["stoch"], posterior["mean"])
        posterior, _ = sampled.observe(batch["image"], batch["action"], batch["is_first"])
        assert not torch.allclose(posterior["stoch"], posterior["mean"])
        noise = torch.randn(3, 4)
        state = model.filter_step(model.initial(3), batch["action"][:, 0], batch["image"][:, 0], noise)
        assert torch.equal(state["stoch"], state["mean"])
        state = sampled.filter_step(sampled.initial(3), batch["action"][:, 0], batch["image"][:, 0], noise)
        assert torch.allclose(state["stoch"], state["mean"] + state["std"] * noise)


def test_overshooting_trains_every_variant_including_the_ssm_whose_belief_is_empty():
    """The SSM's belief has size 0; flattening (B, T, 0) with reshape(-1, 0) failed on the first update."""
    batch = _batch(steps=6)
    for variant in ("rssm", "ssm", "deterministic"):
        model = _small_model(variant, seed=4)
        loss, metrics = world_model_loss(model, batch, LossWeights(free_nats=0, overshooting=3))
        assert torch.isfinite(loss), variant
        loss.backward()
        grads = [p.grad for p in model.dynamics.parameters() if p.grad is not None]
        assert grads and any(g.abs().sum() > 0 for g in grads), variant
        if variant != "deterministic":  # the deterministic model has no distribution to overshoot
            assert metrics["overshooting_kl"] > 0, variant
