"""CARLA driving from pixels through the official `carla` client (optional extra: planetrl[carla]).

The ego vehicle drives in synchronous mode with a fixed time step and an RGB
camera (depth and semantic segmentation as options) at 128x128 by default.

Actions, in [-1, 1]: `a[0]` > 0 is throttle, < 0 is brake; `a[1]` is steering.

Reward per step (weights are constructor arguments):
    speed_weight * (velocity . lane direction)      forward speed along the road, m/s
  - collision_penalty * [a collision this step]    and the episode ends (terminated)
  - lane_penalty * (lane markings crossed this step)

A server timeout, a sensor that delivers no frame, or a lost connection
raises `EnvCrashed`, which `RestartOnException` handles by rebuilding the env;
every actor is destroyed on close and before a rebuild.

This adapter is tested against a stand-in for the client objects
(tests/envs/test_carla.py); it has not been run against a real server here.
"""

from __future__ import annotations

import importlib
import math
import queue
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np

from planetrl.envs.wrappers import EnvCrashed

SENSORS = {
    "rgb": "sensor.camera.rgb",
    "depth": "sensor.camera.depth",
    "semantic": "sensor.camera.semantic_segmentation",
}


def _import_carla() -> ModuleType:
    try:
        return importlib.import_module("carla")
    except ImportError as error:
        raise ImportError("the CARLA tasks need the CARLA client: pip install 'planetrl[carla]' "
                          "(the version must match your server)") from error


class CarlaEnv(gym.Env):
    """One ego vehicle with cameras in a CARLA world, stepped synchronously."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, host: str = "localhost", port: int = 2000, town: str = "Town01", size: int = 128,
                 sensors: tuple[str, ...] = ("rgb",), fixed_delta: float = 0.05, timeout: float = 5.0,
                 seed: int = 0, speed_weight: float = 0.1, collision_penalty: float = 10.0,
                 lane_penalty: float = 1.0, client_module: ModuleType | None = None) -> None:
        unknown = [s for s in sensors if s not in SENSORS]
        if unknown or "rgb" not in sensors:
            raise ValueError(f"sensors must include 'rgb' and come from {', '.join(SENSORS)}, got {sensors}")
        self.carla = client_module or _import_carla()
        self.size, self.sensors, self.fixed_delta, self.timeout = size, tuple(sensors), fixed_delta, timeout
        self.weights = (speed_weight, collision_penalty, lane_penalty)
        self._rng = np.random.default_rng(seed)
        self.render_mode = "rgb_array"
        self.actors: list[Any] = []
        self._frames: dict[str, queue.Queue] = {}
        self._collisions: queue.Queue = queue.Queue()
        self._crossings: queue.Queue = queue.Queue()
        self._last_frame = np.zeros((size, size, 3), np.uint8)
        try:
            self.client = self.carla.Client(host, port)
            self.client.set_timeout(timeout)
            self.world = self.client.get_world()
            if town and not self.world.get_map().name.endswith(town):
                self.world = self.client.load_world(town)
        except RuntimeError as error:
            raise ConnectionError(
                f"no CARLA server answered at {host}:{port} within {timeout:.0f} s ({error}). Start one with "
                f"`./CarlaUE4.sh -RenderOffScreen -carla-rpc-port={port}` (or the carlasim/carla container) "
                f"and pass its address as env.carla_host / env.carla_port."
            ) from error
        self._original_settings = self.world.get_settings()
        settings = self.world.get_settings()
        settings.synchronous_mode = True
        settings.fixed_delta_seconds = fixed_delta
        self.world.apply_settings(settings)
        spaces = {key: gym.spaces.Box(0, 255, (size, size, 3), np.uint8) for key in self.sensors if key != "rgb"}
        spaces["image"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        spaces["state"] = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    # ------------------------------------------------------------ actors

    def _destroy_actors(self) -> None:
        for actor in reversed(self.actors):
            try:
                if hasattr(actor, "stop"):
                    actor.stop()
                actor.destroy()
            except RuntimeError:
                pass
        self.actors = []

    def _spawn(self) -> None:
        library = self.world.get_blueprint_library()
        points = self.world.get_map().get_spawn_points()
        vehicle_blueprint = library.find("vehicle.tesla.model3")
        start = points[int(self._rng.integers(len(points)))]
        self.vehicle = self.world.spawn_actor(vehicle_blueprint, start)
        self.actors.append(self.vehicle)
        camera_at = self.carla.Transform(self.carla.Location(x=1.5, z=2.4))
        for key in self.sensors:
            blueprint = library.find(SENSORS[key])
            blueprint.set_attribute("image_size_x", str(self.size))
            blueprint.set_attribute("image_size_y", str(self.size))
            camera = self.world.spawn_actor(blueprint, camera_at, attach_to=self.vehicle)
            self._frames[key] = queue.Queue()
            camera.listen(self._frames[key].put)
            self.actors.append(camera)
        for name, target in (("sensor.other.collision", self._collisions),
                             ("sensor.other.lane_invasion", self._crossings)):
            sensor = self.world.spawn_actor(library.find(name), self.carla.Transform(), attach_to=self.vehicle)
            sensor.listen(target.put)
            self.actors.append(sensor)

    # ------------------------------------------------------------ stepping

    def _tick(self) -> int:
        try:
            return self.world.tick(self.timeout)
        except RuntimeError as error:
            raise EnvCrashed(f"CARLA server did not tick: {error}") from error

    def _frame(self, key: str, tick: int) -> np.ndarray:
        while True:
            try:
                image = self._frames[key].get(timeout=self.timeout)
            except queue.Empty as error:
                raise EnvCrashed(f"CARLA sensor '{key}' delivered no frame within {self.timeout} s") from error
            if image.frame >= tick:
                break
        pixels = np.frombuffer(image.raw_data, np.uint8).reshape(image.height, image.width, 4)
        return np.ascontiguousarray(pixels[..., 2::-1])  # BGRA -> RGB

    def _observe(self, tick: int) -> dict[str, np.ndarray]:
        obs = {("image" if key == "rgb" else key): self._frame(key, tick) for key in self.sensors}
        self._last_frame = obs["image"]
        velocity = self.vehicle.get_velocity()
        obs["state"] = np.array([velocity.x, velocity.y, velocity.z], np.float32)
        return obs

    @staticmethod
    def _drain(events: queue.Queue) -> int:
        count = 0
        while True:
            try:
                events.get_nowait()
            except queue.Empty:
                return count
            count += 1

    def forward_speed(self) -> float:
        """Velocity projected on the direction of the lane under the vehicle, m/s."""
        velocity = self.vehicle.get_velocity()
        waypoint = self.world.get_map().get_waypoint(self.vehicle.get_location())
        yaw = math.radians(waypoint.transform.rotation.yaw)
        return velocity.x * math.cos(yaw) + velocity.y * math.sin(yaw)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._destroy_actors()
        try:
            self._spawn()
        except RuntimeError as error:
            self._destroy_actors()
            raise EnvCrashed(f"CARLA could not spawn the ego vehicle: {error}") from error
        tick = self._tick()
        self._drain(self._collisions)
        self._drain(self._crossings)
        return self._observe(tick), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        throttle_brake, steer = (float(x) for x in np.clip(np.asarray(action, np.float32), -1.0, 1.0))
        control = self.carla.VehicleControl(throttle=max(throttle_brake, 0.0), brake=max(-throttle_brake, 0.0),
                                            steer=steer)
        try:
            self.vehicle.apply_control(control)
        except RuntimeError as error:
            raise EnvCrashed(f"lost the CARLA connection: {error}") from error
        tick = self._tick()
        obs = self._observe(tick)
        collided = self._drain(self._collisions) > 0
        crossings = self._drain(self._crossings)
        speed_weight, collision_penalty, lane_penalty = self.weights
        speed = self.forward_speed()
        reward = speed_weight * speed - collision_penalty * collided - lane_penalty * crossings
        info = {"speed": speed, "collision": collided, "lane_crossings": crossings}
        return obs, float(reward), collided, False, info

    def render(self) -> np.ndarray:
        return self._last_frame

    def close(self) -> None:
        self._destroy_actors()
        try:
            self.world.apply_settings(self._original_settings)
        except RuntimeError:
            pass
