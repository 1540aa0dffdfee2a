import numpy as np
import pytest

from helpers.fake_carla import Server, make_module
from planetrl.envs.carla import CarlaEnv
from planetrl.envs.wrappers import EnvCrashed, RestartOnException


def _env(server, **kwargs):
    return CarlaEnv(client_module=make_module(server), timeout=0.2, **kwargs)


def test_no_server_fails_fast_naming_the_address():
    server = Server()
    server.up = False
    with pytest.raises(ConnectionError) as info:
        _env(server, host="10.0.0.9", port=2345)
    message = str(info.value)
    assert "10.0.0.9:2345" in message and "CarlaUE4.sh" in message


def test_synchronous_mode_sensors_and_observations():
    server = Server()
    env = _env(server, size=128, sensors=("rgb", "depth", "semantic"), fixed_delta=0.05)
    assert server.world.settings.synchronous_mode and server.world.settings.fixed_delta_seconds == 0.05
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"image", "depth", "semantic", "state"}
    assert obs["image"].shape == (128, 128, 3) and obs["image"][0, 0].tolist() == [200, 0, 0]  # BGRA -> RGB
    cameras = [a for a in server.world.live_actors() if a.blueprint.id.startswith("sensor.camera")]
    assert {c.blueprint.attributes["image_size_x"] for c in cameras} == {"128"}
    assert env.observation_space.contains(obs)
    env.close()
    assert server.world.live_actors() == []
    assert server.world.settings.synchronous_mode is False  # original settings restored


def test_actions_and_reward_terms():
    server = Server()
    server.cross_at = {3}
    env = _env(server, speed_weight=0.1, collision_penalty=10.0, lane_penalty=1.0)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(np.array([0.5, -0.3]))
    vehicle = env.vehicle
    assert vehicle.control.throttle == 0.5 and vehicle.control.brake == 0.0
    assert vehicle.control.steer == pytest.approx(-0.3)
    assert info["speed"] == pytest.approx(5.0)  # 5 m/s along a lane pointing +y; the 0.5 m/s sideways is ignored
    assert reward == pytest.approx(0.5) and not terminated
    _, reward, _, _, info = env.step(np.array([-1.0, 0.0]))  # brake; a lane marking is crossed on this tick
    assert vehicle.control.brake == 1.0 and vehicle.control.throttle == 0.0
    assert info["lane_crossings"] == 1 and reward == pytest.approx(-1.0)


def test_collision_ends_the_episode_with_the_penalty():
    server = Server()
    server.collide_at = 3
    env = _env(server)
    env.reset(seed=0)
    assert env.step(np.array([1.0, 0.0]))[2] is False
    _, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0]))
    assert terminated and not truncated and info["collision"]
    assert reward == pytest.approx(0.1 * 10.0 - 10.0)


def test_missing_frame_and_lost_connection_are_crashes():
    server = Server()
    env = _env(server)
    env.reset(seed=0)
    server.mute_camera = True
    with pytest.raises(EnvCrashed, match="delivered no frame"):
        env.step(np.zeros(2))
    server.mute_camera = False
    server.lost = True
    with pytest.raises(EnvCrashed, match="lost the CARLA connection"):
        env.step(np.zeros(2))


def test_restart_on_exception_rebuilds_and_destroys_every_actor():
    server = Server()
    env = RestartOnException(lambda: _env(server), max_restarts=3)
    env.reset(seed=0)
    server.mute_camera = True
    _, _, _, truncated, info = env.step(np.zeros(2))
    assert truncated and info["env_restarted"] and env.restarts == 1
    server.mute_camera = False
    env.reset(seed=1)
    live = server.world.live_actors()
    assert len(live) == 4  # the new episode's vehicle, camera, collision and lane sensors only
    env.close()
    assert server.world.live_actors() == []
