"""A small in-process stand-in for exactly the ``carla`` client calls ``agents.carla_env`` makes.

``install(monkeypatch)`` puts it in ``sys.modules['carla']`` and returns the :class:`Server` that
records what happened (actors alive and destroyed, settings applied, traffic manager calls). The
classes define only the calls the real client has (checked against carla 0.9.16 by
``test_fake_matches_the_real_client`` when it is installed) and nothing else: no ``__getattr__``,
so a renamed or missing call is an ``AttributeError`` in a test.

Geometry: road 45 runs along +x (s = x), lane k (-1..-4) is centred at y = 3.5 k, and the
road ends at s = ``Server.road_length``. The ego accelerates with throttle (4 m/s^2) and slows
with brake (8 m/s^2), steering moves it sideways at 2 m/s per unit. Camera ``k`` (left to
right) delivers images whose every pixel is RGB (10 * k + 10, yaw + 128, frame % 256).
"""

from __future__ import annotations

import fnmatch
import itertools
import sys
import types

LANE_WIDTH = 3.5


class Location:
    def __init__(self, x=0.0, y=0.0, z=0.0):
        self.x, self.y, self.z = float(x), float(y), float(z)


Vector3D = Location


class Rotation:
    def __init__(self, pitch=0.0, yaw=0.0, roll=0.0):
        self.pitch, self.yaw, self.roll = float(pitch), float(yaw), float(roll)


class Transform:
    def __init__(self, location=None, rotation=None):
        self.location = location or Location()
        self.rotation = rotation or Rotation()


class VehicleControl:
    def __init__(
        self, throttle=0.0, steer=0.0, brake=0.0, hand_brake=False, reverse=False, manual_gear_shift=False, gear=0
    ):
        self.throttle, self.steer, self.brake = float(throttle), float(steer), float(brake)


class LaneType:
    Driving = "Driving"


class WorldSettings:
    def __init__(self, synchronous_mode=False, fixed_delta_seconds=None, no_rendering_mode=False):
        self.synchronous_mode, self.fixed_delta_seconds = synchronous_mode, fixed_delta_seconds
        self.no_rendering_mode = no_rendering_mode


class ActorAttribute:
    def __init__(self, value, recommended=()):
        self._value, self.recommended_values = str(value), list(recommended)

    def as_int(self):
        return int(self._value)

    def as_str(self):
        return self._value

    def __str__(self):
        return self._value


class ActorBlueprint:
    def __init__(self, id, **attributes):
        self.id = id
        self._attributes = {
            k: ActorAttribute(*v) if isinstance(v, tuple) else ActorAttribute(v) for k, v in attributes.items()
        }

    def has_attribute(self, name):
        return name in self._attributes

    def get_attribute(self, name):
        return self._attributes[name]

    def set_attribute(self, name, value):
        old = self._attributes.get(name)
        self._attributes[name] = ActorAttribute(value, old.recommended_values if old else ())

    def copy(self):  # not a carla call: the server copies a blueprint when it spawns
        bp = ActorBlueprint(self.id)
        bp._attributes = dict(self._attributes)
        return bp


class BlueprintLibrary:
    def __init__(self, blueprints):
        self._blueprints = list(blueprints)

    def find(self, id):
        for bp in self._blueprints:
            if bp.id == id:
                return bp
        raise IndexError(f"blueprint {id!r} not found")

    def filter(self, pattern):
        return BlueprintLibrary(bp for bp in self._blueprints if fnmatch.fnmatch(bp.id, pattern))

    def __iter__(self):
        return iter(self._blueprints)

    def __len__(self):
        return len(self._blueprints)


class Waypoint:
    def __init__(self, server, road_id, lane_id, s):
        self._server, self.road_id, self.lane_id, self.s = server, road_id, lane_id, float(s)
        self.transform = Transform(Location(self.s, LANE_WIDTH * lane_id, 0.0))
        self.lane_width = LANE_WIDTH

    def next(self, distance):
        s = self.s + distance
        return [] if s > self._server.road_length else [Waypoint(self._server, self.road_id, self.lane_id, s)]


class Map:
    def __init__(self, server, name):
        self._server, self.name = server, name

    def get_waypoint_xodr(self, road_id, lane_id, s):
        if road_id != 45 or lane_id not in (-1, -2, -3, -4) or not 0 <= s <= self._server.road_length:
            return None
        return Waypoint(self._server, road_id, lane_id, s)

    def get_waypoint(self, location, project_to_road=True, lane_type=LaneType.Driving):
        self._server.calls.append(("get_waypoint", project_to_road, lane_type))
        lane = min(-1, max(-4, round(location.y / LANE_WIDTH)))
        s = min(max(location.x, 0.0), self._server.road_length)
        return Waypoint(self._server, 45, lane, s)


class Actor:
    _ids = itertools.count(100)

    def __init__(self, server, blueprint, transform, parent=None):
        self._server, self.type_id, self.parent = server, blueprint.id, parent
        self.id = next(Actor._ids)
        self.attributes = {k: str(v) for k, v in blueprint._attributes.items()}
        self._transform = transform
        self._velocity = Location()
        self._control = VehicleControl()
        self._callback = None
        self.is_alive = True
        server.alive[self.id] = self

    def destroy(self):
        if self.is_alive:
            self.is_alive = False
            self._server.alive.pop(self.id, None)
            self._server.destroyed.append(self.id)
            return True
        return False

    def get_location(self):
        return Location(self._transform.location.x, self._transform.location.y, self._transform.location.z)

    def get_velocity(self):
        return Location(self._velocity.x, self._velocity.y, self._velocity.z)

    def get_transform(self):
        return self._transform

    # vehicles
    def apply_control(self, control):
        self._server.calls.append(("apply_control", control.steer, control.throttle, control.brake))
        self._control = control

    # sensors
    def listen(self, callback):
        self._callback = callback

    def stop(self):
        self._callback = None

    @property
    def is_listening(self):
        return self._callback is not None


class Image:
    def __init__(self, frame, width, height, raw_data):
        self.frame, self.width, self.height, self.raw_data = frame, width, height, raw_data


class CollisionEvent:
    def __init__(self, frame, impulse):
        self.frame, self.normal_impulse = frame, impulse


class World:
    def __init__(self, server, town):
        self._server = server
        self._map = Map(server, f"Carla/Maps/{town}")
        self._settings = WorldSettings()
        self._frame = 0

    def get_map(self):
        return self._map

    def get_settings(self):
        s = self._settings
        return WorldSettings(s.synchronous_mode, s.fixed_delta_seconds, s.no_rendering_mode)

    def apply_settings(self, settings):
        self._settings = WorldSettings(
            settings.synchronous_mode, settings.fixed_delta_seconds, settings.no_rendering_mode
        )
        self._server.settings_log.append((settings.synchronous_mode, settings.fixed_delta_seconds))
        return self._frame

    def get_blueprint_library(self):
        return self._server.library

    def spawn_actor(self, blueprint, transform, attach_to=None):
        server = self._server
        server.spawn_calls += 1
        if server.fail_spawn_at is not None and server.spawn_calls == server.fail_spawn_at:
            raise RuntimeError("Spawn failed because of collision at spawn position")
        return Actor(server, blueprint, transform, parent=attach_to)

    def tick(self, seconds=10.0):
        server = self._server
        if server.fail_tick_at is not None and self._frame + 1 >= server.fail_tick_at:
            raise RuntimeError("time-out of 10000ms while waiting for the simulator")
        self._frame += 1
        dt = self._settings.fixed_delta_seconds or 0.05
        for actor in list(server.alive.values()):
            if actor.type_id.startswith("vehicle.") and actor.parent is None:
                c, v = actor._control, actor._velocity
                v.x = max(0.0, v.x + (4.0 * c.throttle - 8.0 * c.brake) * dt)
                v.y = 2.0 * c.steer
                actor._transform.location.x += v.x * dt
                actor._transform.location.y += v.y * dt
        cameras = [a for a in server.alive.values() if a.type_id == "sensor.camera.rgb" and a._callback]
        for actor in cameras:
            w, h = int(actor.attributes["image_size_x"]), int(actor.attributes["image_size_y"])
            yaw = int(actor._transform.rotation.yaw)
            index = sorted(int(a._transform.rotation.yaw) for a in cameras).index(yaw)
            rgb = (10 * index + 10, (yaw + 128) % 256, self._frame % 256)
            pixel = bytes([rgb[2], rgb[1], rgb[0], 255])  # BGRA
            actor._callback(Image(self._frame, w, h, pixel * (w * h)))
        if server.collide:
            for actor in server.alive.values():
                if actor.type_id == "sensor.other.collision" and actor._callback:
                    actor._callback(CollisionEvent(self._frame, Location(*server.collide)))
        return self._frame


class TrafficManager:
    def __init__(self, server, port):
        self._server, self._port = server, port

    def get_port(self):
        return self._port

    def set_synchronous_mode(self, mode):
        self._server.tm_sync.append(bool(mode))

    def set_global_distance_to_leading_vehicle(self, distance):
        self._server.calls.append(("tm_distance", distance))

    def global_percentage_speed_difference(self, percentage):
        self._server.calls.append(("tm_speed", percentage))

    def set_random_device_seed(self, seed):
        self._server.calls.append(("tm_seed", seed))


class FutureActor:  # noqa: D101  (carla.command.FutureActor is a marker)
    pass


class SpawnActor:
    def __init__(self, blueprint, transform, parent=None):
        self._bp, self.transform, self._then = blueprint, transform, []

    def then(self, command):
        self._then.append(command)
        return self


class SetAutopilot:
    def __init__(self, actor, enabled, tm_port=8000):
        self.actor, self.enabled, self.tm_port = actor, enabled, tm_port


class DestroyActor:
    def __init__(self, actor):
        self.actor_id = actor


class Response:
    def __init__(self, actor_id, error=""):
        self.actor_id, self.error = actor_id, error

    def has_error(self):
        return bool(self.error)


class Client:
    def __init__(self, host, port, worker_threads=0):
        self._server = SERVER
        self._server.clients.append((host, port))

    def set_timeout(self, seconds):
        self._server.timeouts.append(seconds)

    def get_server_version(self):
        if self._server.down:
            raise RuntimeError(
                "time-out of 10000ms while waiting for the simulator, make sure the simulator "
                "is ready and connected to localhost:2000"
            )
        return "0.9.16"

    def get_world(self):
        return self._server.world

    def load_world(self, map_name, reset_settings=True):
        self._server.loads.append(map_name)
        self._server.world = World(self._server, map_name)
        return self._server.world

    def get_trafficmanager(self, port=8000):
        return TrafficManager(self._server, port)

    def apply_batch_sync(self, commands, do_tick=False):
        responses = []
        for command in commands:
            if isinstance(command, DestroyActor):
                actor = self._server.alive.get(command.actor_id)
                if actor is not None:
                    actor.destroy()
                responses.append(Response(command.actor_id))
            elif isinstance(command, SpawnActor):
                assert all(isinstance(c, SetAutopilot) and c.actor is FutureActor and c.enabled for c in command._then)
                actor = Actor(self._server, command._bp.copy(), command.transform)
                self._server.autopilot.append(actor.id)
                responses.append(Response(actor.id))
            else:
                raise TypeError(f"unexpected command {command!r}")
        if do_tick:
            self._server.world.tick()
        return responses


class Server:
    """What the fake simulator holds and records."""

    def __init__(self, town="Town03", road_length=1000.0):
        self.road_length = road_length
        self.world = World(self, town)
        self.alive: dict[int, Actor] = {}
        self.destroyed: list[int] = []
        self.autopilot: list[int] = []
        self.settings_log: list = []
        self.tm_sync: list[bool] = []
        self.calls: list = []
        self.clients: list = []
        self.timeouts: list = []
        self.loads: list = []
        self.down = False
        self.collide = None  # an impulse (x, y, z) every tick when set
        self.spawn_calls = 0
        self.fail_spawn_at = None  # the n-th world.spawn_actor raises
        self.fail_tick_at = None  # world.tick raises from this frame on
        cars = [
            ActorBlueprint(
                f"vehicle.fake.car{k}", number_of_wheels="4", color=("0,0,0", ["255,0,0", "0,255,0", "0,0,255"])
            )
            for k in range(3)
        ]
        self.library = BlueprintLibrary(
            [
                ActorBlueprint("vehicle.audi.a2", number_of_wheels="4"),
                ActorBlueprint("vehicle.fake.bike", number_of_wheels="2"),
                *cars,
                ActorBlueprint("sensor.camera.rgb", image_size_x="800", image_size_y="600", fov="90"),
                ActorBlueprint("sensor.other.collision"),
            ]
        )


SERVER = Server()


def module(server: Server) -> types.ModuleType:
    """A ``carla`` module whose clients talk to ``server``."""
    global SERVER
    SERVER = server
    mod = types.ModuleType("carla")
    for name in (
        "Client",
        "Location",
        "Rotation",
        "Transform",
        "VehicleControl",
        "LaneType",
        "WorldSettings",
        "Vector3D",
    ):
        setattr(mod, name, globals()[name])
    mod.command = types.SimpleNamespace(
        SpawnActor=SpawnActor, SetAutopilot=SetAutopilot, FutureActor=FutureActor, DestroyActor=DestroyActor
    )
    return mod


def install(monkeypatch, server: Server | None = None) -> Server:
    """Put a fake ``carla`` talking to a fresh (or the given) server into ``sys.modules``."""
    server = server or Server()
    monkeypatch.setitem(sys.modules, "carla", module(server))
    return server


def real_client_names() -> dict[str, set[str]] | None:
    """The public names of the real client's classes the fake mirrors (None without carla)."""
    try:
        import importlib

        real = importlib.import_module("carla")
    except ImportError:
        return None
    if isinstance(real, types.ModuleType) and not hasattr(real, "libcarla"):
        return None
    pairs = {
        "Client": Client,
        "World": World,
        "Map": Map,
        "Waypoint": Waypoint,
        "TrafficManager": TrafficManager,
        "BlueprintLibrary": BlueprintLibrary,
        "ActorBlueprint": ActorBlueprint,
        "ActorAttribute": ActorAttribute,
        "Image": Image,
        "CollisionEvent": CollisionEvent,
        "WorldSettings": WorldSettings,
        "Location": Location,
        "Rotation": Rotation,
        "Transform": Transform,
        "VehicleControl": VehicleControl,
    }
    return {name: {n for n in dir(getattr(real, name)) if not n.startswith("_")} for name in pairs}
