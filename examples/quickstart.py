"""Train PlaNet on your own Gymnasium environment and act with the result.

    python examples/quickstart.py                 # seconds: the tiny `debug` sizes
    python examples/quickstart.py --preset cpu    # about an hour on 2 CPU cores
"""

import argparse

import gymnasium as gym

from planetrl import PlaNet


def make_env() -> gym.Env:
    """Any env with rgb_array rendering works; its frames are what PlaNet sees."""
    return gym.make("Pendulum-v1", render_mode="rgb_array", max_episode_steps=50)


if __name__ == "__main__":  # planetrl may start environment processes, which import this script again
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="debug")
    parser.add_argument("--logdir", default="runs/quickstart")
    args = parser.parse_args()

    agent = PlaNet(make_env, preset=args.preset, logdir=args.logdir).learn()
    env = make_env()
    env.reset(seed=0)
    agent.reset()
    total = 0.0
    for _ in range(50):
        action = agent.predict(env.render())  # one rgb frame in, one action out
        _, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        if terminated or truncated:
            break
    print(f"return over one episode: {total:.1f}")
    loaded = PlaNet.load(f"{args.logdir}/run-00")  # the trained agent, from its run directory
    print("loaded action:", loaded.predict(env.render()))
