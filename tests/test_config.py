import pytest

from planetrl import config as C


def test_defaults_and_presets_resolve():
    cfg = C.build("debug", ["env.image_size=32", "run.seed=7"])
    assert cfg.env.task == "mock"
    assert cfg.env.image_size == 32
    assert cfg.run.seed == 7
    assert C.Config().env.task == "cartpole-swingup"


def test_unknown_key_names_it_and_suggests_the_closest():
    with pytest.raises(C.ConfigError) as info:
        C.build(None, ["env.imagesize=32"])
    assert "env.imagesize" in str(info.value)
    assert "env.image_size" in str(info.value)


def test_wrong_type_names_key_value_and_allowed():
    with pytest.raises(C.ConfigError) as info:
        C.build(None, ["env.image_size=big"])
    message = str(info.value)
    assert "env.image_size" in message and "'big'" in message and "integer" in message


def test_out_of_range_and_choices():
    with pytest.raises(C.ConfigError, match=r"env.image_size.*4.*at least 16"):
        C.build(None, ["env.image_size=4"])
    with pytest.raises(C.ConfigError, match=r"run.device.*'tpu'.*'cpu'"):
        C.build(None, ["run.device=tpu"])
    with pytest.raises(C.ConfigError, match="Unknown preset 'fast'"):
        C.build("fast")
    with pytest.raises(C.ConfigError, match="not of the form"):
        C.build(None, ["env.image_size"])


def test_layer_lists_take_one_number_as_one_layer_and_refuse_a_width_below_one():
    """`--set ppo.policy_layers=64` was refused as not a list, and [64, -1] passed, to fail at the first update."""
    cfg, _ = C.resolve({}, ["ppo.policy_layers=64", "ppo.value_layers=[32, 16]"], base=C.PPORunConfig())
    assert (cfg.ppo.policy_layers, cfg.ppo.value_layers) == ((64,), (32, 16))
    for bad, shown in (("[64, -1]", r"\[64, -1\]"), ("0", r"\[0\]"), ("8,0", r"\[8, 0\]")):
        with pytest.raises(C.ConfigError, match=rf"'ppo.policy_layers' got {shown}; allowed: each item at least 1"):
            C.resolve({}, [f"ppo.policy_layers={bad}"], base=C.PPORunConfig())


@pytest.mark.parametrize("setting", ["optim.lr=nan", "optim.lr=inf", "loss.free_nats=-inf", "optim.grad_clip=NaN"])
def test_a_value_that_is_not_a_finite_number_is_refused(setting):
    # nan slips past every bound (each comparison is false), so it must be caught before the bounds.
    key, value = setting.split("=")
    with pytest.raises(C.ConfigError, match=rf"'{key}' got '{value}'; allowed: a finite number"):
        C.build(None, [setting])


def test_a_non_finite_float_in_a_yaml_config_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("optim:\n  lr: .nan\n")
    with pytest.raises(C.ConfigError, match=r"'optim.lr' got nan; allowed: a finite number"):
        C.load(path)


def test_configs_are_frozen():
    cfg = C.Config()
    with pytest.raises(AttributeError):
        cfg.env.task = "x"  # type: ignore[misc]


def test_yaml_round_trip(tmp_path):
    cfg = C.build("debug", ["env.fast_render=true", "env.restart_window=12.5"])
    C.save(cfg, tmp_path / "config.yaml")
    loaded = C.load(tmp_path / "config.yaml")
    assert loaded == cfg
    assert C.differences(cfg, C.Config())  # debug differs from the defaults
    assert C.differences(cfg, loaded) == []


def test_yaml_with_unknown_key_fails(tmp_path):
    (tmp_path / "c.yaml").write_text("env:\n  task: mock\n  colour: red\n")
    with pytest.raises(C.ConfigError, match=r"env\.colour"):
        C.load(tmp_path / "c.yaml")


def test_every_field_has_help():
    for key, _, help_text in C.describe():
        assert help_text, f"{key} has no help line"


def test_contradicting_values_are_an_error_not_a_silent_clamp():
    with pytest.raises(C.ConfigError, match=r"planner.elites \(100\) must be at most planner.candidates \(50\)"):
        C.build("paper", ["planner.candidates=50"])
    assert C.build("paper", ["planner.candidates=50", "planner.elites=5"]).planner.elites == 5
    with pytest.raises(C.ConfigError, match=r"loss.continuation_open_loop \(6\) trains the continuation head, "
                                            r"which is off"):
        C.build("cpu", ["loss.continuation_open_loop=6"])
    assert C.build("cpu128", ["loss.continuation_open_loop=6"]).loss.continuation_open_loop == 6
    # The cpu preset trains on 32-step sequences: distance 31 is the last with a posterior to compare with.
    assert C.build("cpu", ["loss.overshooting=31"]).loss.overshooting == 31
    with pytest.raises(C.ConfigError, match=r"loss.overshooting \(32\) reaches past a training sequence of "
                                            r"data.chunk_length \(32\) steps.*at most 31"):
        C.build("cpu", ["loss.overshooting=32"])
    assert C.build("cpu", ["loss.overshooting=40", "data.chunk_length=41"]).loss.overshooting == 40
    with pytest.raises(C.ConfigError, match=r"loss.continuation_open_loop \(50\) reaches past"):
        C.build("cpu128", ["loss.continuation_open_loop=50"])


def test_seed_streams_keep_the_arithmetic_that_recorded_runs_used():
    from planetrl.seeds import derive

    assert derive(3, "envs", 1) == 3001 and derive(2, "collect", 5) == 200_011 and derive(1, "planner", 2) == 7921
    with pytest.raises(ValueError, match="unknown seed stream 'nope'"):
        derive(0, "nope")


def test_planet_and_ppo_configs_hold_only_their_own_sections():
    planet, ppo = C.to_dict(C.Config()), C.to_dict(C.PPORunConfig())
    assert "ppo" not in planet and set(ppo) == {"env", "ppo", "run"}
    with pytest.raises(C.ConfigError, match=r"Unknown config key 'model\.depth'"):
        C.set_values(C.PPORunConfig(), {"model.depth": 8})
    with pytest.raises(C.ConfigError, match="this is a PPO run's config"):
        C.from_dict(ppo)  # read as a PlaNet config
    with pytest.raises(C.ConfigError, match="this is a PlaNet run's config"):
        C.from_dict(planet, C.PPORunConfig)


def test_a_config_saved_before_the_split_loads_as_either_kind():
    old = {**C.to_dict(C.Config()), "ppo": C.to_dict(C.PPORunConfig())["ppo"]}
    old["train"] = {**old["train"], "stale_seconds": 42.0}  # where the key lived then
    old["run"] = {k: v for k, v in old["run"].items() if k != "stale_seconds"}
    assert C.from_dict(old).run.stale_seconds == 42.0
    assert C.from_dict(old, C.PPORunConfig).ppo == C.PPORunConfig().ppo


def test_a_config_with_sections_of_both_kinds_and_unknown_ones_is_refused_in_one_line():
    data = {**C.to_dict(C.Config()), "ppo": {}, "bogus": {}}
    del data["train"]
    with pytest.raises(C.ConfigError, match="this is not a planetrl config"):
        C.from_dict(data)


def test_a_key_given_twice_with_different_values_is_an_error_not_a_silent_choice():
    """`--task cup-catch --set env.task=walker-walk` trained cup-catch, and of two --set the last won, silently."""
    with pytest.raises(C.ConfigError, match=r"model.depth is set twice, to 8 and to 16; give it once"):
        C.resolve({}, ["model.depth=8", "model.depth=16"])
    with pytest.raises(C.ConfigError, match=r"env.task is given twice: --set env.task=walker-walk and 'cup-catch'"):
        C.resolve({}, ["env.task=walker-walk"], {"env.task": "cup-catch"})
    with pytest.raises(C.ConfigError, match=r"run.seed is given twice"):
        C.resolve({}, ["run.seed=5"], {"run.seed": 3})
    cfg = C.resolve({}, ["model.depth=8", "model.depth=8", "run.seed=3", "env.task=cup-catch"],
                    {"run.seed": 3, "env.task": "cup-catch", "run.device": None})[0]
    assert (cfg.model.depth, cfg.run.seed, cfg.env.task) == (8, 3, "cup-catch")  # the same value twice is fine
    assert C.resolve({}, ["train.total_updates=1e3"], {"train.total_updates": 1000})[0].train.total_updates == 1000
