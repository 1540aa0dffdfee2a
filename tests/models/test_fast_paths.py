"""The fast forms (fused RSSM loops, matmul and phase deconvolutions) compute what the step-by-step forms do."""

from __future__ import annotations

import pytest
import torch

from planetrl import config as C
from planetrl.models import fused_rssm, world_model
from planetrl.models.networks import ConvDecoder, dense_deconv, phase_deconv
from planetrl.models.rssm import LatentDynamics
from planetrl.models.world_model import resolve_precision
from planetrl.training.updater import WorldModelUpdater, build_world_model


def _dynamics() -> LatentDynamics:
    torch.manual_seed(0)
    dynamics = LatentDynamics(action_size=3, embed_size=40, belief_size=24, state_size=6, hidden_size=20)
    with torch.no_grad():  # non-zero biases, so a mix-up of bias and weight shows
        for parameter in dynamics.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return dynamics


def _sequence() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    is_first = torch.zeros(3, 7, dtype=torch.bool)
    is_first[:, 0] = True
    is_first[1, 4] = True  # an episode starts mid-chunk: the state resets there
    return torch.randn(3, 7, 40, generator=g), torch.randn(3, 7, 3, generator=g), is_first


def _observe(dynamics: LatentDynamics, fused: bool, start: dict | None = None) -> tuple[dict, dict]:
    dynamics.fused = fused
    torch.manual_seed(5)
    return dynamics.observe(*_sequence(), state=start)


def test_fused_observe_matches_the_step_by_step_form_values_and_gradients() -> None:
    dynamics = _dynamics()
    start = {key: torch.randn(3, value.shape[-1]) for key, value in dynamics.initial(3).items()}
    results, grads = {}, {}
    for fused in (False, True):
        dynamics.zero_grad()
        posterior, prior = _observe(dynamics, fused, start)
        loss = sum(value.square().sum() for value in (*posterior.values(), prior["mean"], prior["std"]))
        loss.backward()
        results[fused] = (posterior, prior)
        grads[fused] = {name: p.grad.clone() for name, p in dynamics.named_parameters()}
    for part in (0, 1):
        for key in ("deter", "stoch", "mean", "std"):
            torch.testing.assert_close(results[True][part][key], results[False][part][key], atol=1e-5, rtol=1e-5)
    for name in grads[False]:
        torch.testing.assert_close(grads[True][name], grads[False][name], atol=1e-4, rtol=1e-4, msg=name)


def test_fused_observe_resets_at_an_episode_start() -> None:
    dynamics = _dynamics()
    posterior, _ = _observe(dynamics, True)
    embeds, actions, is_first = _sequence()
    torch.manual_seed(9)
    alone, _ = dynamics.observe(embeds[1:2, 4:], actions[1:2, 4:], is_first[1:2, 4:])
    # At a reset the belief is the GRU of zeros and the step's action, whatever came (and was sampled) before.
    assert not torch.allclose(posterior["deter"][1, 4], torch.zeros(24))
    torch.testing.assert_close(posterior["deter"][1, 4], alone["deter"][0, 0], atol=1e-5, rtol=1e-5)


def test_fused_observe_in_bf16_tracks_float32_and_passes_gradients() -> None:
    """The bf16 loop, kept to measure training's float32 choice, computes the same filter to bf16's precision."""
    dynamics = _dynamics()
    embeds, actions, is_first = _sequence()
    outputs = {}
    for dtype in (torch.float32, torch.bfloat16):
        dynamics.zero_grad()
        posterior, prior = fused_rssm.observe(dynamics, embeds, actions, is_first, None, sample=False, dtype=dtype)
        assert posterior["mean"].dtype == prior["std"].dtype == dtype
        sum(value.float().square().sum() for value in (*posterior.values(), prior["mean"])).backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in dynamics.gru.parameters())
        outputs[dtype] = posterior["mean"].float()
    torch.testing.assert_close(outputs[torch.bfloat16], outputs[torch.float32], atol=0.05, rtol=0.05)
    assert not torch.equal(outputs[torch.bfloat16], outputs[torch.float32])


@pytest.mark.parametrize("sample", [True, False])
def test_fused_imagination_matches_the_step_by_step_form(sample: bool) -> None:
    dynamics = _dynamics()
    state = {key: torch.randn(4, value.shape[-1]) for key, value in dynamics.initial(4).items()}
    actions = torch.rand(4, 5, 3) * 2 - 1
    features = {}
    for fused in (False, True):
        dynamics.fused = fused
        torch.manual_seed(3)
        features[fused] = dynamics.imagine_features(state, actions, sample)
    torch.testing.assert_close(features[True], features[False], atol=1e-5, rtol=1e-5)


def test_given_noise_drives_both_imagination_forms_and_the_global_rng_does_not() -> None:
    dynamics = _dynamics()
    state = {key: torch.randn(4, value.shape[-1]) for key, value in dynamics.initial(4).items()}
    actions = torch.rand(4, 5, 3) * 2 - 1
    noise = torch.randn(4, 5, dynamics.state_size)
    features = {}
    for fused in (False, True):
        dynamics.fused = fused
        torch.manual_seed(int(fused))  # a different global stream for each form
        features[fused] = dynamics.imagine_features(state, actions, noise=noise)
    torch.testing.assert_close(features[True], features[False], atol=1e-5, rtol=1e-5)
    states = dynamics.imagine(state, actions, noise=noise)
    torch.testing.assert_close(states["stoch"], states["mean"] + states["std"] * noise)
    assert not torch.allclose(features[True], dynamics.imagine_features(state, actions, sample=False))


def test_fused_imagination_runs_in_the_autocast_dtype_and_stays_close() -> None:
    dynamics = _dynamics()
    state = {key: torch.randn(64, value.shape[-1]) for key, value in dynamics.initial(64).items()}
    actions = torch.rand(64, 6, 3) * 2 - 1
    exact = dynamics.imagine_features(state, actions, sample=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = dynamics.imagine_features(state, actions, sample=False)
    assert low.dtype == torch.bfloat16
    assert (low.float() - exact).abs().max() < 0.05 * exact.abs().max()


def test_only_the_rssm_with_the_block_gru_takes_the_fused_loops() -> None:
    assert LatentDynamics(2, 8).fused
    assert not LatentDynamics(2, 8, init="torch").fused  # nn.GRUCell: reset gate after the product
    assert not LatentDynamics(2, 8, variant="ssm").fused
    assert not LatentDynamics(2, 8, variant="deterministic").fused


@pytest.mark.parametrize("size", [64, 128])
def test_every_decoder_layer_has_the_same_sums_in_its_fast_form(size: int) -> None:
    torch.manual_seed(0)
    decoder = ConvDecoder(feature_size=12, image_size=size, depth=4)
    layers = [m for m in decoder.net if isinstance(m, torch.nn.ConvTranspose2d)]
    x = torch.randn(2, layers[0].in_channels)
    torch.testing.assert_close(dense_deconv(x, layers[0]), layers[0](x[:, :, None, None]), atol=1e-5, rtol=1e-5)
    for layer in layers:
        x = torch.randn(2, layer.in_channels, 7, 7)
        torch.testing.assert_close(phase_deconv(x, layer), layer(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("size", [64, 128])
def test_fast_decoder_matches_the_layer_by_layer_decoder(size: int) -> None:
    torch.manual_seed(0)
    decoder = ConvDecoder(feature_size=12, image_size=size, depth=4)
    features = torch.randn(3, 12)
    outputs, grads = {}, {}
    for fast in (False, True):
        decoder.fast = fast
        decoder.zero_grad()
        outputs[fast] = decoder(features)
        outputs[fast].square().sum().backward()
        grads[fast] = {name: p.grad.clone() for name, p in decoder.named_parameters()}
    assert outputs[True].shape == (3, size, size, 3)
    torch.testing.assert_close(outputs[True], outputs[False], atol=1e-5, rtol=1e-5)
    for name in grads[False]:
        torch.testing.assert_close(grads[True][name], grads[False][name], atol=1e-4, rtol=1e-4, msg=name)


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_is_bf16_only_on_a_cpu_with_native_bf16(native: bool, monkeypatch, caplog) -> None:
    monkeypatch.setattr(world_model, "native_bf16", lambda device: native if device.type == "cpu" else True)
    with caplog.at_level("WARNING"):
        assert resolve_precision("auto", torch.device("cpu")) == ("bf16" if native else "fp32")
        assert resolve_precision("auto", torch.device("cuda")) == "fp32"
        assert resolve_precision("fp32", torch.device("cpu")) == "fp32"
        assert resolve_precision("bf16", torch.device("cuda")) == "bf16"
    assert not caplog.records
    with caplog.at_level("WARNING"):
        assert resolve_precision("bf16", torch.device("cpu")) == "bf16"
    assert bool(caplog.records) is (not native)
    if not native:
        assert "emulated" in caplog.text and "'auto'" in caplog.text


def test_the_cpu_presets_and_the_updater_resolve_auto_precision(monkeypatch) -> None:
    """cpu and cpu128 ask for `auto`: emulated bf16 made their update 7x and decision 11x slower on an AVX2-only CPU."""
    for preset in ("cpu", "cpu128"):
        cfg = C.build(preset=preset)
        assert (cfg.optim.precision, cfg.planner.precision) == ("auto", "auto")
    cfg = C.build(preset="debug", overrides=["optim.precision=auto"])
    for native, expected in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(world_model, "native_bf16", lambda device, native=native: native)
        model = build_world_model(cfg, 2)
        assert WorldModelUpdater(model, cfg, torch.device("cpu")).precision == expected
