"""The CARLA highway environment without a server: its plain functions, and its orchestration against
the in-process stand-in of the client API (``tests/fake_carla.py``)."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import fake_carla
import numpy as np
import pytest

from agents import carla_env as ce
from bisimkit.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------ plain functions
def test_split_action_maps_the_second_coordinate_to_throttle_or_brake():
    assert ce.split_action([0.3, 0.5]) == (0.3, 0.5, 0.0)
    assert ce.split_action([-0.2, -0.25]) == (-0.2, 0.0, 0.25)
    assert ce.split_action([0.0, 0.0]) == (0.0, 0.0, 0.0)  # zero is throttle 0, no brake
    assert ce.split_action([-3.0, 2.0]) == (-1.0, 1.0, 0.0)  # clipped to [-1, 1]
    for bad in ([0.0], [0.0, 0.0, 0.0], [math.nan, 0.0]):
        with pytest.raises(InputError, match="^action: "):
            ce.split_action(bad)


def test_code_reward_by_hand():
    # 20 m/s * 0.05 s / (1 + 0.5 m) - 1 (colliding) - 0.1 * 0.2 (brake) - 0.1 * |-0.4| (steer)
    assert ce.code_reward(20.0, 0.5, True, 0.2, -0.4) == pytest.approx(1.0 / 1.5 - 1.0 - 0.02 - 0.04)
    assert ce.code_reward(10.0, 0.0, False, 0.0, 0.0) == pytest.approx(0.5)
    assert ce.code_reward(-4.0, 1.0, False, 0.0, 0.0) == pytest.approx(-0.1)  # backwards is penalised


def test_paper_reward_by_hand():
    # v.u dt - 1e-4 impulse - 1.0 |steer|
    assert ce.paper_reward(20.0, 500.0, -0.3) == pytest.approx(1.0 - 0.05 - 0.3)
    assert ce.paper_reward(0.0, 0.0, 0.0) == 0.0


def test_lane_progress_projects_the_velocity_on_the_highway_direction():
    distance, vel_s = ce.lane_progress((3.0, 4.0), (3.0, 4.0), (0.0, 0.0), (0.06, 0.08))
    assert distance == pytest.approx(5.0) and vel_s == pytest.approx(5.0)
    distance, vel_s = ce.lane_progress((0.0, 1.0), (0.0, 7.0), (0.0, 0.0), (0.1, 0.0))
    assert distance == pytest.approx(1.0) and vel_s == pytest.approx(0.0)  # sideways: no progress


def test_termination_conditions_and_their_order():
    assert ce.termination(5, 0, 10.0, False) is None
    assert ce.termination(5, 0, 10.0, True) == "road_end"
    assert ce.termination(5, 19, 10.0, False) is None
    assert ce.termination(5, 20, 10.0, False) == "collisions"
    assert ce.termination(1000, 0, 10.0, False) == "time_limit"
    assert ce.termination(999, 0, 10.0, False) is None
    assert ce.termination(100, 0, 0.01, False) == "stuck"
    assert ce.termination(200, 0, 0.01, False) == "stuck"
    assert ce.termination(150, 0, 0.01, False) is None  # only every 100th step
    assert ce.termination(0, 0, 0.0, False) is None  # and not before the 100th
    assert ce.termination(100, 0, 0.02, False) is None  # strictly below 0.02 m/s
    assert ce.termination(40, 0, 0.0, False, max_steps=40) == "time_limit"


def test_camera_yaws_left_to_right():
    assert ce.camera_yaws(5) == [-120.0, -60.0, 0.0, 60.0, 120.0]
    assert ce.camera_yaws(3) == [-60.0, 0.0, 60.0]
    assert ce.camera_yaws(1) == [0.0]
    for bad in (0, 2, 4, 6):
        with pytest.raises(InputError, match="^cameras: "):
            ce.camera_yaws(bad)


def test_stitching_puts_the_images_left_to_right_as_rgb():
    h, w = 4, 6
    raws = [bytes([0, 0, 10 * k, 255]) * (h * w) for k in range(5)]  # BGRA: red = 10 k
    images = [ce.bgra_to_rgb(raw, h, w) for raw in raws]
    assert images[2].shape == (h, w, 3) and images[2][0, 0].tolist() == [20, 0, 0]
    frame = ce.stitch(images)
    assert frame.shape == (3, h, 5 * w) and frame.dtype == np.uint8 and frame.flags.c_contiguous
    assert [int(frame[0, 0, k * w]) for k in range(5)] == [0, 10, 20, 30, 40]
    assert np.all(frame[1:] == 0)
    with pytest.raises(InputError, match="^camera: "):
        ce.bgra_to_rgb(b"\0" * 10, h, w)


def test_spawn_plan_is_seeded_and_in_range():
    a, b, c = ce.spawn_plan(3, 20, 7, 4), ce.spawn_plan(3, 20, 7, 4), ce.spawn_plan(4, 20, 7, 4)
    assert a == b and a != c
    assert a.ego_lane in ce.LANES and len(a.others) == 20
    for lane, s, bp, colour in a.others:
        assert lane in ce.LANES and 100.0 <= s <= 300.0 and 0 <= bp < 7 and 0 <= colour < 4
    assert len({lane for lane, *_ in a.others}) > 1
    assert ce.spawn_plan(0, 0, 7).others == ()
    with pytest.raises(InputError, match="^vehicles: "):
        ce.spawn_plan(0, -1, 7)


def test_destroy_all_tries_every_actor_and_reports_errors():
    log = []

    class Thing:
        def __init__(self, id, fail=False):
            self.id, self.fail = id, fail

        def destroy(self):
            log.append(self.id)
            if self.fail:
                raise RuntimeError("gone")

    errors = ce.destroy_all([Thing(1), Thing(2, fail=True), Thing(3)], lambda ids: log.append(tuple(ids)), [7, 8])
    assert log == [3, 2, 1, (7, 8)] and errors == ["destroy 2: gone"]


def test_destroy_all_stops_at_a_server_time_out():
    log = []

    class Gone:
        id = 1

        def destroy(self):
            log.append("tried")
            raise RuntimeError("time-out of 10000ms while waiting for the simulator")

    errors = ce.destroy_all([Gone(), Gone(), Gone()], lambda ids: log.append("batch"), [4])
    assert log == ["tried"] and errors[-1] == "server not answering: 2 actors and 1 vehicles left to it"


def test_resolve_host(monkeypatch):
    monkeypatch.delenv(ce.HOST_VARIABLE, raising=False)
    assert ce.resolve_host(None) == "localhost"
    monkeypatch.setenv(ce.HOST_VARIABLE, "sim.example")
    assert ce.resolve_host(None) == "sim.example" and ce.resolve_host("other") == "other"


# ------------------------------------------------------------ against the stand-in
def make(monkeypatch, server=None, **kwargs):
    server = fake_carla.install(monkeypatch, server)
    kwargs = {"image_size": 16, "vehicles": 5, "seed": 1, **kwargs}
    return ce.make_carla_env(**kwargs), server


def test_setup_loads_town04_in_synchronous_mode(monkeypatch):
    env, server = make(monkeypatch, host="h", port=2001, timeout=3.0)
    assert server.clients == [("h", 2001)] and server.timeouts[0] == 3.0
    assert server.loads == ["Town04"] and server.timeouts[1] == 120.0  # a fresh world, given 120 s
    assert server.settings_log == [(True, 0.05)]
    assert server.tm_sync == [True]
    assert ("tm_distance", 2.0) in server.calls and ("tm_speed", 30.0) in server.calls
    env.close()


def test_one_episode_shapes_actors_and_teardown(monkeypatch):
    env, server = make(monkeypatch, episode_steps=40)
    obs = env.reset(seed=5)
    assert obs.shape == env.observation_shape == (9, 16, 80) and obs.dtype == np.uint8
    # ego + 5 cameras + collision sensor, and 5 autopilot vehicles
    assert len(server.alive) == 1 + 5 + 1 + 5 and len(server.autopilot) == 5
    cameras = sorted(
        (a for a in server.alive.values() if a.type_id == "sensor.camera.rgb"), key=lambda a: a._transform.rotation.yaw
    )
    assert [a._transform.rotation.yaw for a in cameras] == [-120, -60, 0, 60, 120]
    assert all(a.attributes["fov"] == "60.0" and a.attributes["image_size_x"] == "16" for a in cameras)
    assert all((a._transform.location.x, a._transform.location.z) == (1.6, 1.7) for a in cameras)
    ego = next(a for a in server.alive.values() if a.type_id == "vehicle.audi.a2")
    assert ego._transform.location.x == 100.0 and ego._transform.location.y in (-3.5, -7.0, -10.5, -14.0)
    # left to right: camera k's red channel is 10 k + 10
    assert [int(obs[0, 0, 16 * k]) for k in range(5)] == [10, 20, 30, 40, 50]
    steps, done, total = 0, False, 0.0
    while not done:
        obs, reward, done, info = env.step([0.0, 1.0])
        steps, total = steps + 1, total + reward
        assert obs.shape == (9, 16, 80) and obs.dtype == np.uint8 and isinstance(reward, float)
    assert steps == env.max_episode_steps == 10
    assert info["reason"] == "time_limit" and info["truncated"] and info["discount"] == 1.0
    assert total > 0 and info["vel_s"] > 0
    assert server.calls.count(("apply_control", 0.0, 1.0, 0.0)) == 10
    spawned = set(server.alive)
    env.reset(seed=6)  # the last episode's actors are gone
    assert spawned.isdisjoint(server.alive) and spawned <= set(server.destroyed)
    env.close()
    assert server.alive == {}
    assert server.settings_log[-1][0] is False and server.tm_sync[-1] is False
    env.close()  # twice is fine


def test_code_reward_in_the_env_is_the_mean_over_the_repeat(monkeypatch):
    env, server = make(monkeypatch, vehicles=0)
    env.reset(seed=0)
    _, reward, _, info = env.step([0.5, -0.5])  # steer 0.5, brake 0.5, standing still
    assert ("apply_control", 0.5, 0.0, 0.5) in server.calls
    # moving sideways at 1 m/s: no progress along the lane, so each of the 4 simulator steps earns
    # exactly -0.1 brake - 0.1 |steer| = -0.1; their mean is -0.1 (their sum would be -0.4)
    assert info["vel_s"] == pytest.approx(0.0) and reward == pytest.approx(-0.1, abs=1e-9)
    env.close()


def test_collisions_end_the_episode_after_20_steps(monkeypatch):
    server = fake_carla.Server()
    env, _ = make(monkeypatch, server, vehicles=0)
    env.reset(seed=0)
    server.collide = (300.0, 400.0, 0.0)  # |impulse| = 500 every tick
    rewards, done, steps = [], False, 0
    while not done:
        _, reward, done, info = env.step([0.0, 0.0])
        rewards.append(reward)
        steps += 1
    assert steps == 5 and info["reason"] == "collisions" and info["discount"] == 0.0
    assert info["impulse"] == pytest.approx(500.0)
    assert rewards[0] == pytest.approx(-1.0)  # standing still, colliding
    env.close()


def test_paper_reward_flag(monkeypatch):
    server = fake_carla.Server()
    env, _ = make(monkeypatch, server, vehicles=0, reward="paper")
    env.reset(seed=0)
    server.collide = (0.0, 0.0, 1000.0)
    _, reward, _, _ = env.step([0.2, 0.0])
    assert reward == pytest.approx(-1e-4 * 1000.0 - 0.2)
    env.close()


def test_the_road_end_ends_the_episode(monkeypatch):
    server = fake_carla.Server(road_length=100.05)
    env, _ = make(monkeypatch, server, vehicles=0)
    env.reset(seed=0)
    _, _, done, info = env.step([0.0, 1.0])
    assert done and info["reason"] == "road_end" and info["discount"] == 0.0
    env.close()


def test_reset_is_seeded(monkeypatch):
    def layout(seed):
        env, server = make(monkeypatch, vehicles=6)
        env.reset(seed=seed)
        out = sorted(
            (a._transform.location.x, a._transform.location.y, a.type_id)
            for a in server.alive.values()
            if a.parent is None
        )
        env.close()
        return out, [c for c in server.calls if c[0] == "tm_seed"]

    assert layout(3) == layout(3) and layout(3) != layout(4)
    xs = [x for x, _, _ in layout(3)[0]]
    assert len(xs) == 1 + 6 and all(100.0 <= x <= 300.0 for x in xs)  # the ego at s = 100, 6 others


def test_an_error_while_spawning_destroys_what_was_spawned(monkeypatch):
    server = fake_carla.Server()
    server.fail_spawn_at = 4  # the third camera
    with pytest.raises(ce.CarlaError, match=r"^carla: starting an episode at localhost:2000 failed: Spawn failed"):
        env, _ = make(monkeypatch, server)
        env.reset(seed=0)
    assert server.alive == {} and len(server.destroyed) == 3
    assert server.settings_log[-1][0] is False and server.tm_sync[-1] is False


def test_an_error_while_stepping_destroys_everything(monkeypatch):
    server = fake_carla.Server()
    env, _ = make(monkeypatch, server)
    env.reset(seed=0)
    server.fail_tick_at = 3
    with pytest.raises(ce.CarlaError, match="^carla: a simulator step .* failed: time-out"):
        env.step([0.0, 0.5])
    assert server.alive == {} and server.settings_log[-1][0] is False


def test_no_server_is_one_line(monkeypatch):
    server = fake_carla.Server()
    server.down = True
    with pytest.raises(ce.CarlaError) as info:
        make(monkeypatch, server, timeout=2.0)
    text = str(info.value)
    assert "\n" not in text and text.startswith("carla: no CARLA server answered at localhost:2000 within 2 s")
    assert server.alive == {} and server.settings_log == []


def test_bad_arguments_name_the_field(monkeypatch):
    fake_carla.install(monkeypatch)
    for kwargs, field in (
        ({"town": "Town99"}, "town"),
        ({"cameras": 4}, "cameras"),
        ({"image_size": 15}, "image_size"),
        ({"vehicles": -1}, "vehicles"),
        ({"reward": "x"}, "reward"),
        ({"timeout": 0}, "timeout"),
    ):
        with pytest.raises(InputError, match=f"^{field}: "):
            ce.make_carla_env(**kwargs)


def test_fake_matches_the_real_client():
    """Every call the stand-in offers exists on the real client (so the env uses no invented call)."""
    pytest.importorskip("carla", reason="the carla client is not installed")
    real = fake_carla.real_client_names()
    for name, names in real.items():
        fake = {n for n in dir(getattr(fake_carla, name)) if not n.startswith("_")} - {"copy"}
        assert fake <= names, f"{name}: {sorted(fake - names)} are not carla 0.9.16 calls"
    carla = sys.modules["carla"]
    actor = {n for n in dir(carla.Vehicle) if not n.startswith("_")} | {
        n for n in dir(carla.Sensor) if not n.startswith("_")
    }
    fake_actor = {n for n in dir(fake_carla.Actor) if not n.startswith("_")} - {"type_id", "parent"}
    assert fake_actor <= actor | {"type_id", "parent"}


# ------------------------------------------------------------ subprocesses
def _run(code: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def test_import_agents_without_carla():
    proc = _run(
        "import sys; sys.modules['carla'] = None\n"
        "import agents, agents.carla_env, agents.config\n"
        "from agents.carla_env import make_carla_env\n"
        "try:\n    make_carla_env()\nexcept Exception as e:\n    print(type(e).__name__, e)"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("CarlaError carla: the CARLA client is not installed: pip install -e '.[carla]'")


def test_real_client_against_a_closed_port_fails_fast():
    pytest.importorskip("carla", reason="the carla client is not installed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free again once closed: nobody listens
    start = time.monotonic()
    proc = _run(
        f"from agents.carla_env import make_carla_env\n"
        f"try:\n    make_carla_env(host='127.0.0.1', port={port}, timeout=1.0)\n"
        f"except Exception as e:\n    print(type(e).__name__, e)",
        timeout=30,
    )
    assert time.monotonic() - start < 20
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"CarlaError carla: no CARLA server answered at 127.0.0.1:{port} within 1 s")


# ------------------------------------------------------------ training
def test_the_agent_learns_from_stitched_non_square_frames():
    """The frame-wise encoder sizes itself from the (84, 420) frames; one update of every CARLA method."""
    import torch

    from agents.agent import Agent
    from agents.config import make_config

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    obs_shape = (9, 84, 420)
    batch = {
        "obs": rng.integers(0, 256, (4, *obs_shape), dtype=np.uint8),
        "next_obs": rng.integers(0, 256, (4, *obs_shape), dtype=np.uint8),
        "action": rng.uniform(-1, 1, (4, 2)).astype(np.float32),
        "reward": rng.normal(size=4).astype(np.float32),
        "discount": np.ones(4, np.float32),
    }
    for method in ("sac", "eps-r"):
        cfg = make_config(
            "carla", method=method, capacity="low", batch_size=4, buffer_size=8, device="cpu", seed_steps=0
        ).resolved()
        assert cfg.views == (1, 1) and not cfg.stacked_frames
        agent = Agent(obs_shape, 2, cfg)
        assert agent.encoder.trunk.out_features == 32 * 35 * 203
        stats = agent.update(batch)
        assert all(math.isfinite(float(v)) for v in stats.values())
        assert agent.act(batch["obs"][0], explore=True).shape == (2,)


def test_training_runs_on_the_stand_in(monkeypatch, tmp_path):
    """The real Trainer on carla-highway against the stand-in: collects, updates, evaluates on the same
    environment at episode ends, checkpoints, and leaves no actor behind."""
    import json

    import torch

    from agents import agent as agent_module
    from agents.config import make_config
    from agents.train import train

    server = fake_carla.install(monkeypatch)
    calls = []
    real_update = agent_module.Agent.update
    monkeypatch.setattr(agent_module.Agent, "update", lambda self, b: calls.append(1) or real_update(self, b))
    cfg = make_config(
        "carla",
        method="eps-r",
        image_size=16,
        carla_cameras=3,
        carla_vehicles=2,
        episode_steps=40,
        env_steps=120,
        seed_steps=10,
        batch_size=4,
        buffer_size=100,
        capacity="low",
        eval_every=50,
        eval_episodes=1,
        checkpoint_every=80,
        device="cpu",
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        summary = train(cfg, tmp_path / "run", progress=False, tensorboard=False)
    finally:
        torch.set_num_threads(threads)
    assert summary["env_steps"] == 120 and len(calls) == 30 - 10
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["config"]["augment"] is False and config["config"]["background"] is False
    eval_steps = [int(r.split(",")[0]) for r in (tmp_path / "run" / "eval.csv").read_text().splitlines()[1:]]
    assert eval_steps == [0, 80, 120]  # the 50-step boundary waits for the episode end at 80
    assert not (tmp_path / "run" / "eval_train.csv").exists()
    assert server.alive == {} and server.settings_log[-1][0] is False


def test_train_cli_without_a_server_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    from agents.train import main

    server = fake_carla.Server()
    server.down = True
    fake_carla.install(monkeypatch, server)
    out = tmp_path / "run"
    code = main(["--preset", "carla", "--method", "eps-r", "--out", str(out), "--quiet", "--carla-timeout", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: carla: no CARLA server answered at localhost:2000 within 1 s")
    assert not out.exists()


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--carla-town", "Town99"], "carla_town"),
        (["--carla-cameras", "4"], "carla_cameras"),
        (["--image-size", "8"], "image_size"),
        (["--carla-vehicles", "-1"], "carla_vehicles"),
    ],
)
def test_train_cli_bad_carla_fields(flags, field, tmp_path, capsys):
    from agents.train import main

    code = main(["--task", "carla-highway", "--method", "eps-r", "--out", str(tmp_path / "run"), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"error: {field}: ") and err.count("\n") == 1


def test_train_cli_with_the_real_client_and_no_server(tmp_path):
    pytest.importorskip("carla", reason="the carla client is not installed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.train",
            "--preset",
            "carla",
            "--carla-host",
            "127.0.0.1",
            "--carla-port",
            str(port),
            "--carla-timeout",
            "2",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert time.monotonic() - start < 30
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"error: carla: no CARLA server answered at 127.0.0.1:{port} within 2 s")
    assert not (tmp_path / "run").exists()


def test_check_command_drives_an_episode(monkeypatch, capsys):
    server = fake_carla.install(monkeypatch, fake_carla.Server(road_length=10_000.0))
    assert ce.main(["--vehicles", "3", "--cameras", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("connected to localhost:2000 (Town04, synchronous at 20 Hz)")
    assert lines[1].startswith("episode 0: obs uint8 (9, 84, 252), 250 agent steps (1000 simulator steps), return ")
    assert lines[1].split("ended by ")[1].startswith("time_limit") and server.alive == {}
    server.down = True
    assert ce.main([]) == 2
    assert capsys.readouterr().err.startswith("error: carla: no CARLA server answered")
