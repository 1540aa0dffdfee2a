"""A small stand-in for the `carla` client module: just enough world to drive the adapter in tests."""

from __future__ import annotations

import math
import types
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Location:
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0


@dataclass
class Rotation:
    pitch: float = 0.0
    yaw: float = 0.0
    roll: float = 0.0


@dataclass
class Transform:
    location: Location = field(default_factory=Location)
    rotation: Rotation = field(default_factory=Rotation)


@dataclass
class Vector3D:
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0


@dataclass
class VehicleControl:
    throttle: float = 0.0
    steer: float = 0.0
    brake: float = 0.0


class Blueprint:
    def __init__(self, name):
        self.id = name
        self.attributes = {}

    def set_attribute(self, key, value):
        self.attributes[key] = value


class Library:
    def find(self, name):
        return Blueprint(name)


@dataclass
class Image:
    frame: int
    width: int
    height: int
    raw_data: bytes


class Actor:
    def __init__(self, world, blueprint, transform, parent=None):
        self.world, self.blueprint, self.transform, self.parent = world, blueprint, transform, parent
        self.destroyed = False
        self.callback = None
        self.control = VehicleControl()
        self.velocity = Vector3D()

    def listen(self, callback):
        self.callback = callback

    def stop(self):
        self.callback = None

    def destroy(self):
        self.destroyed = True

    def apply_control(self, control):
        if self.world.server.lost:
            raise RuntimeError("time-out of 5000ms while waiting for the simulator")
        self.control = control

    def get_velocity(self):
        return self.velocity

    def get_location(self):
        return self.transform.location


class Settings:
    synchronous_mode = False
    fixed_delta_seconds = None


class Map:
    name = "Carla/Maps/Town01"

    def get_spawn_points(self):
        return [Transform(Location(x=float(i))) for i in range(5)]

    def get_waypoint(self, location):
        return types.SimpleNamespace(transform=Transform(rotation=Rotation(yaw=90.0)))


class World:
    def __init__(self, server):
        self.server = server
        self.settings = Settings()
        self.actors = []
        self.frame = 0

    def get_map(self):
        return Map()

    def get_settings(self):
        copy = Settings()
        copy.synchronous_mode = self.settings.synchronous_mode
        copy.fixed_delta_seconds = self.settings.fixed_delta_seconds
        return copy

    def apply_settings(self, settings):
        self.settings = settings

    def get_blueprint_library(self):
        return Library()

    def spawn_actor(self, blueprint, transform, attach_to=None):
        actor = Actor(self, blueprint, transform, attach_to)
        self.actors.append(actor)
        return actor

    def tick(self, timeout=None):
        if self.server.lost:
            raise RuntimeError("time-out while waiting for the simulator")
        self.frame += 1
        vehicle = next(a for a in self.actors if a.blueprint.id.startswith("vehicle") and not a.destroyed)
        # Throttle drives the car north (yaw 90: +y) at 10 m/s per unit of throttle.
        vehicle.velocity = Vector3D(x=0.5, y=10.0 * vehicle.control.throttle)
        for actor in self.actors:
            if actor.destroyed or actor.callback is None:
                continue
            kind = actor.blueprint.id
            if kind.startswith("sensor.camera") and not self.server.mute_camera:
                size = int(actor.blueprint.attributes["image_size_x"])
                bgra = np.zeros((size, size, 4), np.uint8)
                bgra[..., 2] = 200  # red in BGRA
                actor.callback(Image(self.frame, size, size, bgra.tobytes()))
            elif kind == "sensor.other.collision" and self.server.collide_at == self.frame:
                actor.callback("collision")
            elif kind == "sensor.other.lane_invasion" and self.frame in self.server.cross_at:
                actor.callback("crossing")
        return self.frame

    def live_actors(self):
        return [a for a in self.actors if not a.destroyed]


class Server:
    """What the fake simulator will do: be absent, lose the connection, drop frames, collide."""

    def __init__(self):
        self.up = True
        self.lost = False
        self.mute_camera = False
        self.collide_at = None
        self.cross_at = set()
        self.world = World(self)


def make_module(server: Server) -> types.ModuleType:
    module = types.ModuleType("carla")

    class Client:
        def __init__(self, host, port):
            self.address = (host, port)

        def set_timeout(self, seconds):
            self.timeout = seconds

        def get_world(self):
            if not server.up:
                raise RuntimeError(f"time-out of {self.timeout * 1000:.0f}ms while waiting for the simulator, "
                                   f"make sure the simulator is ready and connected to {self.address[0]}:"
                                   f"{self.address[1]}")
            return server.world

        def load_world(self, town):
            return server.world

    for name, value in dict(Client=Client, Location=Location, Rotation=Rotation, Transform=Transform,
                            VehicleControl=VehicleControl).items():
        setattr(module, name, value)
    module.math = math
    return module
