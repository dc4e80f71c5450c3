"""Episodes of a policy: the seed of each episode per stream, and rollouts' returns and videos on a scripted
environment."""

from agents.rollout import EVAL_STREAM, TRAIN_STREAM, episode_seed, evaluate_policy, rollout


class Counter:
    """An environment of three steps with reward 1, 2, 3 times the action; it records its reset seeds."""

    background_video = "bear"

    def __init__(self):
        self.seeds, self.t = [], 0

    def reset(self, seed):
        self.seeds.append(seed)
        self.t = 0
        return 0.0

    def step(self, action):
        self.t += 1
        return float(self.t), self.t * action, self.t == 3, {}


class Constant:
    def __init__(self, value):
        self.value, self.explored = value, []

    def act(self, obs, explore):
        self.explored.append(explore)
        return self.value


def test_episode_seeds_differ_per_stream_and_episode_and_repeat():
    seeds = {episode_seed(7, k, stream) for k in range(5) for stream in (TRAIN_STREAM, EVAL_STREAM)}
    assert len(seeds) == 10 and episode_seed(7, 2, EVAL_STREAM) == episode_seed(7, 2, EVAL_STREAM)
    assert episode_seed(7, 0) == episode_seed(7, 0, TRAIN_STREAM) != episode_seed(8, 0)


def test_a_rollout_plays_deterministic_evaluation_episodes():
    env, policy = Counter(), Constant(2.0)
    returns, videos = rollout(policy, env, 2, seed=5)
    assert returns == [12.0, 12.0] and videos == ["bear", "bear"]  # 2 * (1 + 2 + 3)
    assert env.seeds == [episode_seed(5, 0, EVAL_STREAM), episode_seed(5, 1, EVAL_STREAM)]
    assert set(policy.explored) == {False}
    assert evaluate_policy(Constant(1.0), Counter(), 1, seed=0) == [6.0]
