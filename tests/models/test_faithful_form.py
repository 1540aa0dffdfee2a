"""The original TensorFlow PlaNet's forms: initialization, the GRU block cell, the SSM ablation, the reward head."""

import math

import pytest
import torch
from torch import nn

from planetrl import config as C
from planetrl.models.rssm import BlockGRUCell, LatentDynamics
from planetrl.models.world_model import WorldModel
from planetrl.training.updater import build_world_model


def _glorot_bound(fan_in: int, fan_out: int) -> float:
    return math.sqrt(6 / (fan_in + fan_out))


def test_tf_init_is_glorot_uniform_with_zero_biases_everywhere():
    torch.manual_seed(0)
    model = WorldModel(6, 64, belief_size=200, state_size=30, hidden_size=200, depth=32)
    conv = model.encoder.net[2]  # 32 -> 64 channels, 4x4 kernel: TF's fans are k*k*in and k*k*out
    bound = _glorot_bound(16 * 32, 16 * 64)
    assert conv.weight.abs().max() <= bound and conv.weight.abs().max() > 0.95 * bound
    assert conv.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    dense = model.reward_head.net[0]
    assert dense.weight.std().item() == pytest.approx(_glorot_bound(230, 200) / math.sqrt(3), rel=0.03)
    for name, parameter in model.named_parameters():
        if name.endswith("bias") and name != "dynamics.gru.gates.bias":
            assert torch.all(parameter == 0), name


def test_mean_and_std_halves_of_a_gaussian_head_are_initialized_as_two_layers():
    torch.manual_seed(0)
    dynamics = LatentDynamics(6, 1024, belief_size=200, state_size=30, hidden_size=200)
    halves = dynamics.prior_out.weight.chunk(2, 0)
    bound = _glorot_bound(200, 30)  # each half as TF's own dense(30) layer, not one dense(60)
    for half in halves:
        assert half.abs().max() <= bound and half.abs().max() > 0.95 * bound


def test_block_gru_cell_matches_the_tf_formula_by_hand():
    torch.manual_seed(0)
    cell = BlockGRUCell(3, 2)
    assert torch.all(cell.gates.bias == 1.0) and torch.all(cell.candidate.bias == 0.0)
    x, h = torch.randn(4, 3), torch.randn(4, 2)
    w_ru, b_ru = cell.gates.weight.T, cell.gates.bias
    w_c, b_c = cell.candidate.weight.T, cell.candidate.bias
    r_u = torch.sigmoid(torch.cat([x, h], 1) @ w_ru + b_ru)
    r, u = r_u[:, :2], r_u[:, 2:]
    c = torch.tanh(torch.cat([x, r * h], 1) @ w_c + b_c)  # reset gate before the matrix product
    torch.testing.assert_close(cell(x, h), u * h + (1 - u) * c)


def test_block_gru_differs_from_torch_gru_which_resets_after_the_product():
    torch.manual_seed(0)
    cell = BlockGRUCell(3, 2)
    torch_cell = nn.GRUCell(3, 2)
    with torch.no_grad():  # same weights; torch orders gates (r, z, n) and splits input and hidden parts
        w = cell.gates.weight
        torch_cell.weight_ih[:4] = w[:, :3]
        torch_cell.weight_hh[:4] = w[:, 3:]
        torch_cell.bias_ih[:4] = cell.gates.bias
        torch_cell.bias_hh.zero_()
        torch_cell.weight_ih[4:] = cell.candidate.weight[:, :3]
        torch_cell.weight_hh[4:] = cell.candidate.weight[:, 3:]
        torch_cell.bias_ih[4:] = cell.candidate.bias
    x, h = torch.randn(4, 3), torch.randn(4, 2)
    # torch's candidate is tanh(W x + r * (U h)): the same weights give a different state
    assert not torch.allclose(cell(x, h), torch_cell(x, h), atol=1e-3)


def test_ssm_prior_has_one_hidden_layer_and_its_posterior_reads_prior_mean_std_and_embedding():
    dynamics = LatentDynamics(2, 8, variant="ssm", state_size=4, hidden_size=16)
    assert not hasattr(dynamics, "prior_hidden")
    assert dynamics.posterior_hidden.in_features == 4 + 4 + 8
    state = dynamics.initial(3)
    prior = dynamics.prior_step(state, torch.ones(3, 2), sample=False)
    hidden = torch.relu(dynamics.transition_in(torch.cat([state["stoch"], torch.ones(3, 2)], -1)))
    mean = dynamics.prior_out(hidden).chunk(2, -1)[0]
    torch.testing.assert_close(prior["mean"], mean)
    embed = torch.randn(3, 8)
    post = dynamics.posterior_step(prior, embed, sample=False)
    hidden = torch.relu(dynamics.posterior_hidden(torch.cat([prior["mean"], prior["std"], embed], -1)))
    torch.testing.assert_close(post["mean"], dynamics.posterior_out(hidden).chunk(2, -1)[0])


def test_the_public_codes_3x300_reward_head_is_a_config_option():
    cfg = C.build("paper", ["model.reward_layers=3", "model.reward_units=300"])
    model = build_world_model(cfg, 6)
    dense = [m for m in model.reward_head.modules() if isinstance(m, nn.Linear)]
    assert [(d.in_features, d.out_features) for d in dense] == [(230, 300), (300, 300), (300, 300), (300, 1)]
    paper = [m for m in build_world_model(C.build("paper"), 6).reward_head.modules() if isinstance(m, nn.Linear)]
    assert [d.out_features for d in paper] == [200, 200, 1]


def test_a_config_saved_before_the_init_key_existed_loads_the_torch_form(tmp_path):
    data = C.to_dict(C.build("cpu"))
    del data["model"]["init"]
    assert C.from_dict(data).model.init == "torch"
    assert C.build("cpu").model.init == "tf"
    legacy = build_world_model(C.from_dict(data), 1)
    assert isinstance(legacy.dynamics.gru, nn.GRUCell)
