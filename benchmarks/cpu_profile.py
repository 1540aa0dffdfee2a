"""Where the `cpu` preset's update and decision spend their time, and how the fast paths compare.

One JSON line each for: the machine's matmul peak (bf16, fp32); the update by
component (encoder, RSSM loop, decoder, reward head, losses, optimizer, each a
forward and backward on its own inputs) with FLOPs and share of the matmul peak of
the precision it runs in (bf16 where native, else fp32: `auto`);
the decision by component (filter step, rollout, reward head, the rest of CEM);
and, with `--compare`, the update and decision of today's fast paths against
the step-by-step forms (`dynamics.fused`, `decoder.fast` off), interleaved
round by round so that both see the same machine.

    python benchmarks/cpu_profile.py [--preset cpu] [--rounds 15] [--compare] [--decoder-forms] [--batch 8 --length 32]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from planetrl import config as C
from planetrl.agents.mpc import MPCAgent
from planetrl.cli.common import at_least
from planetrl.losses import LossWeights, gaussian_kl, mean_gaussian_nll, world_model_loss
from planetrl.models.world_model import autocast, native_bf16, resolve_precision
from planetrl.planning.cem import CEMSettings
from planetrl.training.updater import WorldModelUpdater, build_world_model

ACTIONS = 6


def timed(fn: Callable[[], object], rounds: int) -> float:
    """Median seconds of `rounds` calls after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def flops(fn: Callable[[], object]) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def model_flops(model: torch.nn.Module, fn: Callable[[], object]) -> int:
    """FLOPs of the model's own arithmetic: counted with the step-by-step forms, since the fast
    decoder's phase convolutions multiply some zero taps that are not the model's work."""
    decoder_fast, fused = model.decoder.fast, model.dynamics.fused
    set_fast(model, False)
    try:
        return flops(fn)
    finally:
        model.decoder.fast, model.dynamics.fused = decoder_fast, fused


def matmul_peak(rounds: int) -> dict[str, float | bool]:
    """GFLOP/s of a 2048^3 matrix product in bf16 and fp32 on this process's threads.

    Where bf16 is emulated (no AVX512-BF16 or AMX) a 2048^3 product takes about a minute, so bf16 is
    timed on 512^3 there.
    """
    native = native_bf16(torch.device("cpu"))
    result: dict[str, float | bool] = {"bf16_native": native}
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        n = 2048 if native or name == "fp32" else 512
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        result[f"{name}_gflop_s"] = round(2 * n**3 / timed(lambda a=a, b=b: a @ b, rounds) / 1e9, 1)
    return result


def fake_batch(batch: int, length: int, size: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    is_first = torch.zeros(batch, length, dtype=torch.bool)
    is_first[:, 0] = True
    return {"image": torch.rand(batch, length, size, size, 3, generator=g) - 0.5,
            "action": torch.rand(batch, length, ACTIONS, generator=g) * 2 - 1,
            "reward": torch.rand(batch, length, generator=g), "is_first": is_first,
            "is_last": torch.zeros(batch, length, dtype=torch.bool),
            "is_terminal": torch.zeros(batch, length, dtype=torch.bool)}


def update_components(updater: WorldModelUpdater, batch: dict[str, torch.Tensor], precision: str
                      ) -> dict[str, Callable[[], object]]:
    """Forward and backward of each part on detached inputs, as the update runs it."""
    model, device = updater.model, torch.device("cpu")
    with torch.no_grad(), autocast(device, precision):
        embeds = model.encoder(batch["image"]).float()
        posterior, prior = model.dynamics.observe(embeds, batch["action"], batch["is_first"])
        features = model.features(posterior).float()

    def run(forward: Callable[[], torch.Tensor]) -> Callable[[], None]:
        def step() -> None:
            with autocast(device, precision):
                loss = forward()
            loss.float().sum().backward()
        return step

    def rssm() -> torch.Tensor:
        post, pri = model.dynamics.observe(embeds.requires_grad_(), batch["action"], batch["is_first"])
        return gaussian_kl(post, pri).mean() + model.features(post).float().mean()

    return {
        "encoder": run(lambda: model.encoder(batch["image"])),
        "rssm_loop": run(rssm),
        "decoder": run(lambda: mean_gaussian_nll(batch["image"], model.decode(features.requires_grad_()), 3)),
        "reward_head": run(lambda: mean_gaussian_nll(batch["reward"], model.reward(features.requires_grad_()), 0)),
        "kl_loss": run(lambda: gaussian_kl({k: v.requires_grad_() for k, v in posterior.items()}, prior).mean()),
        "optimizer": lambda: (torch.nn.utils.clip_grad_norm_(model.parameters(), 1000.0), updater.optimizer.step()),
    }


def profile_update(cfg: C.Config, args: argparse.Namespace, peak: float) -> dict:
    torch.manual_seed(0)
    updater = WorldModelUpdater(build_world_model(cfg, ACTIONS), cfg, torch.device("cpu"))
    batch = fake_batch(args.batch or cfg.data.batch_size, args.length or cfg.data.chunk_length, cfg.env.image_size)
    total = timed(lambda: updater.update(batch), args.rounds)
    total_flops = model_flops(updater.model, lambda: updater.update(batch))
    parts = {}
    for name, fn in update_components(updater, batch, updater.precision).items():
        seconds, work = timed(fn, args.rounds), model_flops(updater.model, fn)
        parts[name] = {"s": round(seconds, 4), "share": round(seconds / total, 3), "gflop": round(work / 1e9, 2),
                       "of_peak": round(work / seconds / 1e9 / peak, 3)}
    return {"what": "update", "s": round(total, 4), "gflop": round(total_flops / 1e9, 2),
            "of_peak": round(total_flops / total / 1e9 / peak, 3), "batch": list(batch["image"].shape[:2]),
            "precision": updater.precision, "components": parts,
            "unaccounted_s": round(total - sum(part["s"] for part in parts.values()), 4)}


def make_agent(cfg: C.Config) -> MPCAgent:
    torch.manual_seed(0)
    model = build_world_model(cfg, ACTIONS).eval()
    p = cfg.planner
    settings = CEMSettings(horizon=p.horizon, iterations=p.iterations, candidates=p.candidates, elites=p.elites)
    return MPCAgent(model, gym.spaces.Box(-1, 1, (ACTIONS,)), 1, settings, precision=p.precision)


def planner_precision(cfg: C.Config) -> str:
    return resolve_precision(cfg.planner.precision, torch.device("cpu"))


def profile_decision(cfg: C.Config, rounds: int, peak: float) -> dict:
    agent = make_agent(cfg)
    model, p, precision = agent.model, cfg.planner, planner_precision(cfg)
    size = cfg.env.image_size
    obs = {"image": np.random.default_rng(0).integers(0, 255, (1, size, size, 3), dtype=np.uint8)}
    total = timed(lambda: agent.act(obs, explore=True), rounds)
    total_flops = flops(lambda: agent.act(obs, explore=True))
    device = torch.device("cpu")
    state = {k: v.repeat_interleave(p.candidates, 0) for k, v in agent.state.items()}
    actions = torch.rand(p.candidates, p.horizon, ACTIONS) * 2 - 1
    image = torch.rand(1, cfg.env.image_size, cfg.env.image_size, 3) - 0.5
    with torch.no_grad(), autocast(device, precision):
        features = model.dynamics.imagine_features(state, actions)

    def per_plan(fn: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad(), autocast(device, precision):
                for _ in range(p.iterations):
                    fn()
        return run

    parts_fn = {"filter_step": lambda: torch.no_grad()(model.filter_step)(agent.state, agent.prev_action, image),
                "rollout": per_plan(lambda: model.dynamics.imagine_features(state, actions)),
                "reward_head": per_plan(lambda: model.reward(features))}
    parts = {}
    for name, fn in parts_fn.items():
        seconds, work = timed(fn, rounds), flops(fn)
        parts[name] = {"s": round(seconds, 4), "share": round(seconds / total, 3), "gflop": round(work / 1e9, 2),
                       "of_peak": round(work / seconds / 1e9 / peak, 3)}
    rest = total - sum(part["s"] for part in parts.values())
    parts["sampling_topk_rest"] = {"s": round(rest, 4), "share": round(rest / total, 3)}
    return {"what": "decision", "s": round(total, 4), "gflop": round(total_flops / 1e9, 2),
            "of_peak": round(total_flops / total / 1e9 / peak, 3), "precision": precision,
            "candidates": p.candidates, "horizon": p.horizon, "iterations": p.iterations, "components": parts}


def set_fast(model: torch.nn.Module, fast: bool) -> None:
    model.dynamics.fused = fast and model.dynamics.variant == "rssm"
    model.decoder.fast = fast


def compare(cfg: C.Config, args: argparse.Namespace) -> dict:
    """Fast paths against the step-by-step forms, alternating round by round."""
    torch.manual_seed(0)
    updater = WorldModelUpdater(build_world_model(cfg, ACTIONS), cfg, torch.device("cpu"))
    batch = fake_batch(args.batch or cfg.data.batch_size, args.length or cfg.data.chunk_length, cfg.env.image_size)
    agent = make_agent(cfg)
    obs = {"image": np.zeros((1, cfg.env.image_size, cfg.env.image_size, 3), np.uint8)}
    times: dict[str, list[float]] = {f"{what}_{form}": [] for what in ("update", "decision")
                                     for form in ("stepwise", "fast")}
    for round_index in range(args.rounds + 2):
        for form in ("stepwise", "fast"):
            for what, model, fn in (("update", updater.model, lambda: updater.update(batch)),
                                    ("decision", agent.model, lambda: agent.act(obs, explore=True))):
                set_fast(model, form == "fast")
                start = time.perf_counter()
                fn()
                if round_index >= 2:
                    times[f"{what}_{form}"].append(time.perf_counter() - start)
    medians = {key: round(statistics.median(value), 4) for key, value in times.items()}
    return {"what": "compare", **medians,
            "update_speedup": round(medians["update_stepwise"] / medians["update_fast"], 2),
            "decision_speedup": round(medians["decision_stepwise"] / medians["decision_fast"], 2),
            "loss_fast_vs_stepwise": loss_agreement(cfg, batch)}


DECODER_FORMS = {"layer by layer": (False, set()), "first as matmul": (True, set()),
                 "matmul + phase 2": (True, {2}), "matmul + phase 2, 4": (True, {2, 4}),
                 "matmul + phase 2, 4, 6": (True, {2, 4, 6}), "matmul + phase 4": (True, {4})}


def decoder_forms(cfg: C.Config, args: argparse.Namespace) -> dict:
    """Decoder forward + backward in each form (phase layers are `net` indices), interleaved."""
    torch.manual_seed(0)
    model = build_world_model(cfg, ACTIONS).to(memory_format=torch.channels_last)
    batch = fake_batch(args.batch or cfg.data.batch_size, args.length or cfg.data.chunk_length, cfg.env.image_size)
    images = batch["image"].flatten(0, 1)
    features = torch.randn(images.shape[0], model.dynamics.feature_size, requires_grad=True)
    times: dict[str, list[float]] = {name: [] for name in DECODER_FORMS}
    for round_index in range(args.rounds + 2):
        for name, (fast, phases) in DECODER_FORMS.items():
            model.decoder.fast, model.decoder.phase_layers = fast, phases
            start = time.perf_counter()
            with autocast(torch.device("cpu"), resolve_precision(cfg.optim.precision, torch.device("cpu"))):
                loss = mean_gaussian_nll(images, model.decode(features), 3)
            loss.backward()
            if round_index >= 2:
                times[name].append(time.perf_counter() - start)
    return {"what": "decoder_forms", **{name: round(statistics.median(t), 4) for name, t in times.items()}}


def loss_agreement(cfg: C.Config, batch: dict[str, torch.Tensor]) -> dict[str, float]:
    """The loss terms of one batch under both forms, with the same weights and the same noise."""
    torch.manual_seed(0)
    model = build_world_model(cfg, ACTIONS)
    terms = {}
    cpu = torch.device("cpu")
    for form in ("stepwise", "fast"):
        set_fast(model, form == "fast")
        torch.manual_seed(1)
        with torch.no_grad(), autocast(cpu, resolve_precision(cfg.optim.precision, cpu)):
            terms[form] = {k: float(v) for k, v in world_model_loss(model, batch, LossWeights())[1].items()}
    return {k: round(terms["fast"][k] - terms["stepwise"][k], 4) for k in terms["fast"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--rounds", type=at_least(1), default=15)
    parser.add_argument("--batch", type=at_least(0), default=0, help="0: the preset's")
    parser.add_argument("--length", type=at_least(0), default=0, help="0: the preset's")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--decoder-forms", action="store_true", help="time the decoder in each form")
    parser.add_argument("--skip", default="", help="comma list of update,decision to leave out")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    cfg = C.build(args.preset, args.overrides)
    peak = matmul_peak(args.rounds)
    info = {"threads": torch.get_num_threads(), "cpus": os.cpu_count(), "torch": torch.__version__,
            "machine": platform.machine(), "preset": args.preset, "overrides": args.overrides}
    print(json.dumps({"what": "matmul_peak", **peak, **info}), flush=True)
    skip = set(filter(None, args.skip.split(",")))
    update_precision = resolve_precision(cfg.optim.precision, torch.device("cpu"))
    if "update" not in skip:
        print(json.dumps(profile_update(cfg, args, peak[f"{update_precision}_gflop_s"])), flush=True)
    if "decision" not in skip:
        print(json.dumps(profile_decision(cfg, args.rounds, peak[f"{planner_precision(cfg)}_gflop_s"])), flush=True)
    if args.compare:
        print(json.dumps(compare(cfg, args)), flush=True)
    if args.decoder_forms:
        print(json.dumps(decoder_forms(cfg, args)), flush=True)


if __name__ == "__main__":
    main()
