"""CARLA highway driving (the paper's second benchmark, after DBC) on the real ``carla`` client.

``make_carla_env(host=..., port=..., seed=...)`` connects to a running CARLA server
(0.9.x; the PyPI client is 0.9.16) and builds DBC's highway task:

* Town04, synchronous mode at 20 Hz (``fixed_delta_seconds`` 0.05);
* the ego vehicle (``vehicle.audi.a2``) on highway road 45, in a lane drawn from
  -1..-4, at s = 100 m; ``vehicles`` (20) other vehicles on autopilot through the
  Traffic Manager (synchronous mode too) at lanes -1..-4 and s drawn in [100, 300] m;
  every draw comes from the episode's seed;
* ``cameras`` (5; or 3, 1) RGB cameras on the roof (x = 1.6 m, z = 1.7 m), yaw 0, +-60,
  +-120 degrees, 60 degree field of view, each ``image_size`` square, stitched left to
  right into one (3, image_size, cameras * image_size) frame; a stack of 3 frames;
* actions [steer, throttle-or-brake] in [-1, 1]^2 (second coordinate >= 0: throttle,
  < 0: brake), repeated 4 simulator steps; 1000 simulator steps per episode (250
  agent steps);
* reward and termination as DBC's code ran them (deep_bisim4control
  ``CARLA_0.9.8/PythonAPI/carla/agents/navigation/carla_env.py``, ``CarlaEnv._simulator_step``
  and ``CarlaEnv.dist_from_center_lane``), or the reward of the DBC paper's text with
  ``reward='paper'``; see :func:`code_reward` and :func:`paper_reward`.

The API is the one :class:`agents.dcs.DCSEnv` offers the trainer: ``reset(seed=None)``,
``step(action) -> (obs, reward, done, info)`` with ``obs`` uint8
(3 * frame_stack, image_size, cameras * image_size), ``action_spec`` (shape (2,),
bounds -1 and 1), ``observation_shape``, ``action_repeat``, ``close()``.

Unlike DBC's environment, every actor it spawns (ego, sensors, other vehicles) is
destroyed on ``reset`` (before respawning), on ``close`` and on any error, and
``close`` switches synchronous mode off again (world and Traffic Manager).

The logic lives in functions of plain values, tested without a server
(``tests/test_carla_env.py``): :func:`split_action`, :func:`code_reward`,
:func:`paper_reward`, :func:`lane_progress`, :func:`termination`, :func:`camera_yaws`,
:func:`bgra_to_rgb`, :func:`stitch`, :func:`spawn_plan`, :func:`destroy_all`.
``carla`` is imported only when an environment is made, so ``import agents`` works
without it.
"""

from __future__ import annotations

import argparse
import math
import os
import queue
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from bisimkit.errors import InputError, check_count

from .entry import one_line, run_command

#: Towns whose highway road is known (road 45 of Town04; Town04_Opt is the same map in layers).
TOWNS: dict[str, int] = {"Town04": 45, "Town04_Opt": 45}
CAMERA_COUNTS = (1, 3, 5)
#: The rewards: 'code', what DBC's code computed; 'paper', what its paper writes.
REWARDS = ("code", "paper")
#: The defaults of the task (DBC's CARLA runs) and of its server connection; agents.config takes its
#: carla_* defaults from here.
DEFAULT_HOST, DEFAULT_PORT, DEFAULT_TIMEOUT = "localhost", 2000, 10.0
DEFAULT_TOWN, DEFAULT_CAMERAS, DEFAULT_VEHICLES, DEFAULT_REWARD = "Town04", 5, 20, "code"
#: DBC's action repeat on CARLA, and the smallest frame side (frames only need to survive the conv trunk).
ACTION_REPEAT = 4
MIN_IMAGE = 16
HOST_VARIABLE = "BISIMKIT_CARLA_HOST"
DT = 0.05  # 20 Hz
LANES = (-1, -2, -3, -4)
EGO_S = 100.0
OTHER_S = (100.0, 300.0)
FOV = 60.0
CAMERA_X, CAMERA_Z = 1.6, 1.7
EGO_BLUEPRINT = "vehicle.audi.a2"
#: Vehicles spawn this far (m) above the lane's waypoint (DBC's reset_other_vehicles lifts its traffic by 0.1 m).
SPAWN_LIFT = 0.1
COLLISION_STEPS = 20  # consecutive colliding simulator steps that end an episode
STUCK_SPEED, STUCK_EVERY = 0.02, 100
#: Load a town with this timeout at least (loading Town04 takes tens of seconds).
LOAD_TIMEOUT = 120.0
#: The paper's text: lambda_i (collision impulse, N s) and lambda_s (steering).
PAPER_IMPULSE_WEIGHT, PAPER_STEER_WEIGHT = 1e-4, 1.0


class CarlaError(InputError):
    """A CARLA server that is missing, times out or fails: one line, shown by the CLI with exit 2."""


# ------------------------------------------------------------ plain logic
def split_action(action) -> tuple[float, float, float]:
    """(steer, throttle, brake) of an action [steer, throttle-or-brake], each clipped to [-1, 1]:
    a non-negative second coordinate is throttle, a negative one brake (its magnitude), as
    DBC's ``CarlaEnv._simulator_step`` maps it (which asserts the range where this clips)."""
    a = np.asarray(action, dtype=np.float64).reshape(-1)
    if a.shape != (2,):
        raise InputError(f"shape {a.shape} is not (2,)", param="action")
    if not np.all(np.isfinite(a)):
        raise InputError("holds a non-finite value", param="action")
    steer, pedal = (float(v) for v in np.clip(a, -1.0, 1.0))
    return (steer, pedal, 0.0) if pedal >= 0.0 else (steer, 0.0, -pedal)


def code_reward(
    vel_s: float, lane_distance: float, colliding: bool, brake: float, steer: float, dt: float = DT
) -> float:
    """DBC's reward as their code computed it (``CarlaEnv._simulator_step``), per simulator step:
    ``v_s dt / (1 + d) - 1.0 colliding - 0.1 brake - 0.1 |steer|``, with ``v_s`` the speed along
    the highway and ``d`` the distance (m) to the centre of the nearest lane."""
    return vel_s * dt / (1.0 + lane_distance) - 1.0 * float(bool(colliding)) - 0.1 * brake - 0.1 * abs(steer)


def paper_reward(vel_s: float, impulse: float, steer: float, dt: float = DT) -> float:
    """DBC's reward as their paper writes it, per simulator step:
    ``v . u_highway dt - 1e-4 impulse - 1.0 |steer|`` (``impulse``: collision impulse, N s)."""
    return vel_s * dt - PAPER_IMPULSE_WEIGHT * impulse - PAPER_STEER_WEIGHT * abs(steer)


def lane_progress(vehicle_xy, velocity_xy, centre_xy, ahead_xy) -> tuple[float, float]:
    """(distance to the lane centre, speed along the highway) from plain (x, y) pairs: the vehicle,
    its velocity, the lane-centre point at the vehicle's s and a point 0.1 m further along
    (DBC's ``CarlaEnv.dist_from_center_lane``)."""
    vehicle, velocity = np.asarray(vehicle_xy, float), np.asarray(velocity_xy, float)
    centre, ahead = np.asarray(centre_xy, float), np.asarray(ahead_xy, float)
    direction = ahead - centre
    norm = float(np.linalg.norm(direction))
    vel_s = float(velocity @ direction / norm) if norm > 0 else 0.0
    return float(np.linalg.norm(vehicle - centre)), vel_s


#: What :func:`lane_progress` is replaced by when the road ends (DBC: distance 100, no progress).
ROAD_END_DISTANCE = 100.0


def termination(
    sim_steps: int, collide_count: int, speed: float, road_ended: bool, max_steps: int = 1000
) -> str | None:
    """Why the episode ends after simulator step ``sim_steps`` (counted from 1), or None: 'road_end'
    (no lane waypoint at the vehicle's s, or none ahead), 'collisions' (``collide_count`` >= 20
    consecutive colliding steps), 'time_limit' (``sim_steps`` >= ``max_steps``) or 'stuck' (speed
    < 0.02 m/s, checked at every 100th step from the 100th): DBC's ``CarlaEnv._simulator_step``."""
    if road_ended:
        return "road_end"
    if collide_count >= COLLISION_STEPS:
        return "collisions"
    if sim_steps >= max_steps:
        return "time_limit"
    if speed < STUCK_SPEED and sim_steps >= STUCK_EVERY and sim_steps % STUCK_EVERY == 0:
        return "stuck"
    return None


def camera_yaws(cameras: int, fov: float = FOV) -> list[float]:
    """Yaws (degrees, CARLA's: negative is left) of the cameras, left to right: 1 -> [0],
    3 -> [-60, 0, 60], 5 -> [-120, -60, 0, 60, 120] at a 60 degree field of view."""
    if cameras not in CAMERA_COUNTS:
        raise InputError(f"{cameras!r} is not one of {', '.join(map(str, CAMERA_COUNTS))}", param="cameras")
    half = cameras // 2
    return [float(k * fov) for k in range(-half, half + 1)]


def bgra_to_rgb(raw, height: int, width: int) -> np.ndarray:
    """A CARLA camera image's BGRA bytes as a uint8 (height, width, 3) RGB array."""
    data = np.frombuffer(bytes(raw), dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw.astype(np.uint8)
    if data.size != height * width * 4:
        raise CarlaError(
            f"a {width}x{height} BGRA image has {height * width * 4} bytes, got {data.size}", param="camera"
        )
    return data.reshape(height, width, 4)[:, :, 2::-1]


def stitch(images: Sequence[np.ndarray]) -> np.ndarray:
    """(H, W, 3) RGB images, left to right, as one uint8 (3, H, len(images) * W) frame."""
    return np.ascontiguousarray(np.concatenate(list(images), axis=1).transpose(2, 0, 1))


@dataclass(frozen=True)
class SpawnPlan:
    """Where an episode puts its vehicles: the ego's lane and, per other vehicle, (lane, s, blueprint index,
    colour index) -- the indices into the sorted candidate lists, so the plan needs no server."""

    ego_lane: int
    others: tuple[tuple[int, float, int, int], ...]


def spawn_plan(seed: int, vehicles: int, blueprints: int, colours: int = 1) -> SpawnPlan:
    """The seeded draws of an episode: ego lane from -1..-4; each other vehicle's lane, s in [100, 300] m,
    blueprint (of ``blueprints``) and colour (of ``colours``). DBC's ``reset_vehicle`` and
    ``reset_other_vehicles`` draw the same things from the global random state."""
    check_count("vehicles", vehicles, low=0)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 14]))
    ego = int(rng.choice(LANES))
    others = tuple(
        (
            int(rng.choice(LANES)),
            float(rng.uniform(*OTHER_S)),
            int(rng.integers(max(blueprints, 1))),
            int(rng.integers(max(colours, 1))),
        )
        for _ in range(vehicles)
    )
    return SpawnPlan(ego, others)


def destroy_all(
    actors: Iterable, destroy_ids: Callable[[list[int]], None] | None = None, ids: Sequence[int] = ()
) -> list[str]:
    """Destroy every actor (sensors stopped first) and, through ``destroy_ids``, the actors known by
    id; tries all of them and returns the errors as text instead of raising (teardown must finish).
    A server that times out is gone (and its actors with it): the rest is skipped, so a teardown
    waits one timeout, not one per actor."""
    errors: list[str] = []
    actors = list(actors)[::-1]  # sensors (spawned after their vehicle) go first
    for done, actor in enumerate(actors):
        for verb in ("stop", "destroy"):
            try:
                if verb == "destroy":
                    actor.destroy()
                elif hasattr(actor, "stop") and getattr(actor, "is_listening", False):
                    actor.stop()
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{verb} {getattr(actor, 'id', '?')}: {one_line(exc)}")
                if is_timeout(exc):
                    errors.append(
                        f"server not answering: {len(actors) - done - 1} actors and {len(ids)} vehicles left to it"
                    )
                    return errors
    if ids and destroy_ids is not None:
        try:
            destroy_ids(list(ids))
        except Exception as exc:  # noqa: BLE001
            errors.append(f"destroy {len(ids)} vehicles: {exc}")
    return errors


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is the carla client's time-out (``RuntimeError('time-out of 10000ms while ...')``)."""
    return isinstance(exc, RuntimeError) and str(exc).lstrip().startswith("time-out")


def resolve_host(host: str | None) -> str:
    """``host``, else ``$BISIMKIT_CARLA_HOST``, else localhost."""
    return host or os.environ.get(HOST_VARIABLE) or DEFAULT_HOST


def _import_carla():
    try:
        import carla  # noqa: PLC0415  (lazy: agents imports without the CARLA client)
    except ImportError:
        raise CarlaError(
            "the CARLA client is not installed: pip install -e '.[carla]' (carla==0.9.16; and run a CARLA "
            "0.9.16 server; see docs/agents.md, CARLA highway driving)",
            param="carla",
        ) from None
    return carla


# ------------------------------------------------------------ environment
class ActionSpec:
    """The bounds of the action box (what :class:`agents.dcs.DCSEnv` gets from dm_env): [steer, throttle-or-brake]."""

    def __init__(self):
        self.shape, self.dtype = (2,), np.dtype(np.float32)
        self.minimum, self.maximum = np.full(2, -1.0), np.full(2, 1.0)


class CarlaHighway:
    """DBC's CARLA highway task (see the module doc). Build with :func:`make_carla_env`."""

    background_source = "CARLA Town04 highway (no background videos)"
    background_video = None
    split = None
    #: The trainer evaluates on this same environment, at episode ends only (one server, one world).
    shared_eval = True

    def __init__(
        self,
        host: str | None = None,
        port: int = DEFAULT_PORT,
        timeout: float = DEFAULT_TIMEOUT,
        town: str = DEFAULT_TOWN,
        cameras: int = DEFAULT_CAMERAS,
        image_size: int = 84,
        frame_stack: int = 3,
        action_repeat: int = ACTION_REPEAT,
        episode_steps: int = 1000,
        vehicles: int = DEFAULT_VEHICLES,
        reward: str = DEFAULT_REWARD,
        seed: int = 0,
        tm_port: int = 8000,
    ):
        check_town(town)
        camera_yaws(cameras)
        check_count("image_size", image_size, low=MIN_IMAGE)
        for name, value in (
            ("frame_stack", frame_stack),
            ("action_repeat", action_repeat),
            ("episode_steps", episode_steps),
        ):
            check_count(name, value)
        check_count("vehicles", vehicles, low=0)
        check_count("seed", seed, low=0)
        check_count("port", port)
        if reward not in REWARDS:
            raise InputError(f"{reward!r} is not one of {', '.join(REWARDS)}", param="reward")
        if not (isinstance(timeout, (int, float)) and 0 < timeout < math.inf):
            raise InputError(f"{timeout!r} is not a positive number of seconds", param="timeout")
        self.host, self.port, self.timeout = resolve_host(host), int(port), float(timeout)
        self.town, self.road = town, TOWNS[town]
        self.cameras, self.image_size, self.frame_stack = cameras, image_size, frame_stack
        self.action_repeat, self.episode_steps, self.vehicles = action_repeat, episode_steps, vehicles
        self.reward_kind, self.seed, self.tm_port = reward, seed, tm_port
        self.max_episode_steps = math.ceil(episode_steps / action_repeat)
        self.action_spec = ActionSpec()
        self.name = "carla-highway"
        self._frames: deque[np.ndarray] = deque(maxlen=frame_stack)
        self._actors: list = []  # ego first, then its sensors
        self._vehicle_ids: list[int] = []
        self._queues: list[queue.Queue] = []
        self._impulses: list[float] = []
        self._ego = None
        self._episode = 0
        self._done = True
        self._closed = False
        self._sync_on = False
        self.carla = _import_carla()
        self._connect()

    # ------------------------------------------------------------ server
    def _where(self) -> str:
        return f"{self.host}:{self.port}"

    def _connect(self) -> None:
        carla = self.carla
        try:
            self.client = carla.Client(self.host, self.port)
            self.client.set_timeout(self.timeout)
            self.client.get_server_version()  # fails within the timeout without a server
        except RuntimeError as exc:
            raise CarlaError(
                f"no CARLA server answered at {self._where()} within {self.timeout:g} s "
                f"({one_line(exc)}); start one (docs/agents.md, CARLA highway driving) or give its host "
                f"(or {HOST_VARIABLE}) and port",
                param="carla",
            ) from None
        try:
            # always a fresh load, as DBC's CarlaEnv.__init__ does: no actor a killed run left behind
            # survives it, and the settings start asynchronous
            self.client.set_timeout(max(self.timeout, LOAD_TIMEOUT))
            world = self.client.load_world(self.town)
            self.client.set_timeout(self.timeout)
            self.world = world
            self.map = world.get_map()
            self._original_settings = world.get_settings()
            settings = world.get_settings()
            settings.synchronous_mode = True
            settings.fixed_delta_seconds = DT
            world.apply_settings(settings)
            self._sync_on = True
            self.traffic = self.client.get_trafficmanager(self.tm_port)
            self.traffic.set_synchronous_mode(True)
            self.traffic.set_global_distance_to_leading_vehicle(2.0)  # DBC's reset_other_vehicles
            self.traffic.global_percentage_speed_difference(30.0)  # DBC: 30% under the limit
            self.blueprints = world.get_blueprint_library()
        except RuntimeError as exc:
            self._fail("setting the world up", exc)

    def _fail(self, doing: str, exc: BaseException):
        """Tear everything down and raise one line."""
        self.close()
        raise CarlaError(f"{doing} at {self._where()} failed: {one_line(exc)}", param="carla") from None

    # ------------------------------------------------------------ actors
    def _destroy_actors(self) -> list[str]:
        carla = self.carla
        errors = destroy_all(
            self._actors,
            lambda ids: self.client.apply_batch_sync([carla.command.DestroyActor(i) for i in ids], False),
            self._vehicle_ids,
        )
        self._actors, self._vehicle_ids, self._queues, self._ego = [], [], [], None
        return errors

    def _spawn(self, seed: int) -> None:
        carla, world, lib = self.carla, self.world, self.blueprints
        candidates = sorted(
            (
                bp
                for bp in lib.filter("vehicle.*")
                if bp.has_attribute("number_of_wheels") and bp.get_attribute("number_of_wheels").as_int() == 4
            ),
            key=lambda bp: bp.id,
        )
        plan = spawn_plan(seed, self.vehicles, len(candidates), 1 << 16)
        start = self.map.get_waypoint_xodr(self.road, plan.ego_lane, EGO_S)
        if start is None:
            raise RuntimeError(f"no waypoint on road {self.road} lane {plan.ego_lane} at s={EGO_S}")
        transform = start.transform
        transform.location.z += SPAWN_LIFT
        self._ego = world.spawn_actor(lib.find(EGO_BLUEPRINT), transform)
        self._actors.append(self._ego)
        camera = lib.find("sensor.camera.rgb")
        camera.set_attribute("image_size_x", str(self.image_size))
        camera.set_attribute("image_size_y", str(self.image_size))
        camera.set_attribute("fov", str(FOV))
        for yaw in camera_yaws(self.cameras):
            sensor = world.spawn_actor(
                camera,
                carla.Transform(carla.Location(x=CAMERA_X, z=CAMERA_Z), carla.Rotation(yaw=yaw)),
                attach_to=self._ego,
            )
            self._actors.append(sensor)
            frames: queue.Queue = queue.Queue()
            sensor.listen(frames.put)
            self._queues.append(frames)
        collision = world.spawn_actor(lib.find("sensor.other.collision"), carla.Transform(), attach_to=self._ego)
        self._actors.append(collision)
        collision.listen(self._on_collision)
        batch = []
        for lane, s, index, colour in plan.others:
            waypoint = self.map.get_waypoint_xodr(self.road, lane, s)
            if waypoint is None or not candidates:
                continue
            transform = waypoint.transform
            transform.location.z += SPAWN_LIFT
            bp = candidates[index % len(candidates)]
            if bp.has_attribute("color"):
                values = bp.get_attribute("color").recommended_values
                if values:
                    bp.set_attribute("color", values[colour % len(values)])
            bp.set_attribute("role_name", "autopilot")
            batch.append(
                carla.command.SpawnActor(bp, transform).then(
                    carla.command.SetAutopilot(carla.command.FutureActor, True, self.traffic.get_port())
                )
            )
        if batch:
            # once (DBC's reset_other_vehicles sends the batch twice, spawning up to 40 vehicles)
            self._vehicle_ids = [r.actor_id for r in self.client.apply_batch_sync(batch, True) if not r.error]

    def _on_collision(self, event) -> None:
        impulse = event.normal_impulse
        self._impulses.append(math.sqrt(impulse.x**2 + impulse.y**2 + impulse.z**2))

    # ------------------------------------------------------------ stepping
    def _tick(self) -> np.ndarray:
        frame = self.world.tick(self.timeout)
        images = []
        for frames in self._queues:
            while True:
                try:
                    image = frames.get(timeout=self.timeout)
                except queue.Empty:
                    raise RuntimeError(f"no camera image within {self.timeout:g} s") from None
                if image.frame >= frame:
                    break
            images.append(bgra_to_rgb(image.raw_data, image.height, image.width))
        return stitch(images)

    def _measure(self) -> tuple[float, float, float, bool]:
        """(lane-centre distance, v_s, speed, road ended) of the ego (DBC's ``dist_from_center_lane``)."""
        carla = self.carla
        location, velocity = self._ego.get_location(), self._ego.get_velocity()
        speed = math.hypot(velocity.x, velocity.y)
        here = self.map.get_waypoint(location, project_to_road=True, lane_type=carla.LaneType.Driving)
        centre = None
        if here is not None:
            for ds in (0.0, -0.02, 0.02):  # CARLA's waypoint discretisation, as DBC retries
                centre = self.map.get_waypoint_xodr(here.road_id, here.lane_id, here.s + ds)
                if centre is not None:
                    break
        if centre is None:
            return ROAD_END_DISTANCE, 0.0, speed, True
        c = centre.transform.location
        ahead = centre.next(0.1)
        if not ahead:
            return float(math.hypot(location.x - c.x, location.y - c.y)), 0.0, speed, True
        a = ahead[0].transform.location
        distance, vel_s = lane_progress((location.x, location.y), (velocity.x, velocity.y), (c.x, c.y), (a.x, a.y))
        return distance, vel_s, speed, False

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """(3 * frame_stack, image_size, cameras * image_size)."""
        return (3 * self.frame_stack, self.image_size, self.cameras * self.image_size)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Destroy the last episode's actors, spawn this one's (from ``seed``, else the env seed and episode
        count), tick once; returns the first observation (that frame repeated)."""
        if self._closed:
            raise RuntimeError("reset: the environment is closed")
        if seed is None:
            seed = int(np.random.SeedSequence([self.seed, self._episode]).generate_state(1)[0])
        check_count("seed", seed, low=0)
        self._episode += 1
        try:
            errors = self._destroy_actors()
            if errors:
                raise RuntimeError(errors[0])
            self.traffic.set_random_device_seed(int(seed) % (2**31))
            self._spawn(int(seed))
            self._impulses.clear()
            frame = self._tick()
        except RuntimeError as exc:
            self._fail("starting an episode", exc)
        self._frames.clear()
        for _ in range(self.frame_stack):
            self._frames.append(frame)
        self._sim_steps, self._collide_count, self._steps = 0, 0, 0
        self._done = False
        return np.concatenate(self._frames, axis=0)

    def step(self, action) -> tuple[np.ndarray, float, bool, dict]:
        """Apply ``action`` for ``action_repeat`` simulator steps; the reward is their mean (as DBC's
        ``CarlaEnv.step`` returns it); ``info['reason']`` says why an episode ended."""
        if self._done:
            raise RuntimeError("step: the episode has ended (or not started); call reset()")
        steer, throttle, brake = split_action(action)
        rewards, reason, info = [], None, {}
        try:
            self._ego.apply_control(self.carla.VehicleControl(throttle=throttle, steer=steer, brake=brake))
            for _ in range(self.action_repeat):
                frame = self._tick()
                self._sim_steps += 1
                distance, vel_s, speed, ended = self._measure()
                impulse = float(sum(self._impulses))
                self._impulses.clear()
                colliding = impulse > 0.0
                self._collide_count = self._collide_count + 1 if colliding else 0
                if self.reward_kind == "code":
                    rewards.append(code_reward(vel_s, distance, colliding, brake, steer))
                else:
                    rewards.append(paper_reward(vel_s, impulse, steer))
                info = {"speed": speed, "vel_s": vel_s, "lane_distance": distance, "impulse": impulse}
                reason = termination(self._sim_steps, self._collide_count, speed, ended, self.episode_steps)
                if reason is not None:
                    break
        except RuntimeError as exc:
            self._fail("a simulator step", exc)
        self._steps += 1
        self._frames.append(frame)
        self._done = reason is not None
        truncated = reason == "time_limit"
        info.update(
            discount=0.0 if self._done and not truncated else 1.0, truncated=truncated, steps=self._steps, reason=reason
        )
        return np.concatenate(self._frames, axis=0), float(np.mean(rewards)), self._done, info

    def close(self) -> list[str]:
        """Destroy every spawned actor and switch synchronous mode off (world and Traffic Manager);
        safe to call twice. Returns the teardown errors (already handled)."""
        if self._closed:
            return []
        self._closed, self._done = True, True
        errors = self._destroy_actors() if hasattr(self, "client") else []
        if any(e.startswith("server not answering") for e in errors):
            self._sync_on = False  # gone: nothing to switch back
        if self._sync_on:
            for what, undo in (
                ("traffic manager", lambda: self.traffic.set_synchronous_mode(False)),
                ("world settings", self._restore_settings),
            ):
                try:
                    undo()
                except Exception as exc:  # noqa: BLE001
                    errors.append(f"{what}: {exc}")
            self._sync_on = False
        return errors

    def _restore_settings(self) -> None:
        settings = self._original_settings
        settings.synchronous_mode = False  # even if the world was synchronous before (a crashed run's)
        settings.fixed_delta_seconds = None
        self.world.apply_settings(settings)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


def check_town(town) -> str:
    """``town`` if its highway road is known (:data:`TOWNS`)."""
    if not isinstance(town, str) or town not in TOWNS:
        raise InputError(f"{town!r} is not one of {', '.join(TOWNS)}", param="town")
    return town


def make_carla_env(**settings) -> CarlaHighway:
    """DBC's CARLA highway task on the server at ``host:port`` (host: else ``$BISIMKIT_CARLA_HOST``, else
    localhost); see the module doc. ``settings``: the keyword arguments of :class:`CarlaHighway`. No
    server: :class:`CarlaError` within ``timeout`` seconds."""
    return CarlaHighway(**settings)


# ------------------------------------------------------------ command line
def main(argv: list[str] | None = None) -> int:
    """``python -m agents.carla_env``: drive episodes with a fixed action against a server, to check it."""
    parser = argparse.ArgumentParser(prog="python -m agents.carla_env", description=main.__doc__)
    parser.add_argument("--host", default=None, help=f"server host (else ${HOST_VARIABLE}, else localhost)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="server port (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds (default %(default)g)")
    parser.add_argument("--episodes", type=int, default=1, help="episodes to drive (default 1)")
    parser.add_argument("--steer", type=float, default=0.0, help="steering in [-1, 1] (default 0)")
    parser.add_argument("--pedal", type=float, default=0.5, help="throttle (>= 0) or brake (< 0)")
    parser.add_argument(
        "--cameras",
        type=int,
        default=DEFAULT_CAMERAS,
        choices=CAMERA_COUNTS,
        help="cameras side by side in the frame (default %(default)s)",
    )
    parser.add_argument(
        "--vehicles",
        type=int,
        default=DEFAULT_VEHICLES,
        help="other vehicles spawned on the highway (default %(default)s)",
    )
    parser.add_argument(
        "--reward",
        default=DEFAULT_REWARD,
        choices=REWARDS,
        help="code: what DBC's code computes; paper: what its paper writes (default %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the episodes' draws: lanes, vehicles, colours (default 0)"
    )
    args = parser.parse_args(argv)
    env = None

    def body() -> int:
        nonlocal env
        start = time.monotonic()
        env = make_carla_env(
            host=args.host,
            port=args.port,
            timeout=args.timeout,
            cameras=args.cameras,
            vehicles=args.vehicles,
            reward=args.reward,
            seed=args.seed,
        )
        print(
            f"connected to {env.host}:{env.port} ({env.town}, synchronous at {1 / DT:g} Hz) in "
            f"{time.monotonic() - start:.1f} s",
            flush=True,
        )
        for episode in range(args.episodes):
            start = time.monotonic()
            obs, done, total, steps = env.reset(seed=args.seed + episode), False, 0.0, 0
            while not done:
                obs, reward, done, info = env.step([args.steer, args.pedal])
                total, steps = total + reward, steps + 1
            seconds = time.monotonic() - start
            print(
                f"episode {episode}: obs {obs.dtype} {obs.shape}, {steps} agent steps "
                f"({steps * env.action_repeat} simulator steps), return {total:.1f}, ended by {info['reason']}, "
                f"{steps / seconds:.1f} agent steps/s",
                flush=True,
            )
        return 0

    try:
        return run_command(body)
    finally:
        if env is not None:
            errors = env.close()
            if errors:
                print(f"teardown: {len(errors)} error(s), first: {errors[0]}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
