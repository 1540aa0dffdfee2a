"""Plan with planetrl's CEM in the latent space of a model of your own.

The planner needs only `imagine(state, actions) -> rewards`. Here the "model" is a point on a line that
moves by each action; the reward is closeness to a goal at 3.0. CEM finds actions that head to the goal.

    python examples/own_model.py
"""

import torch

from planetrl import CEMSettings, plan


class PointModel:
    def imagine(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        positions = state[:, None, :] + torch.cumsum(actions, dim=1)  # (N, H, 1)
        return -(positions - 3.0).abs().squeeze(-1)


if __name__ == "__main__":
    start = torch.zeros(1, 1)
    result = plan(PointModel(), start, action_size=1, settings=CEMSettings(horizon=6, iterations=8, candidates=500,
                                                                            elites=50),
                  generators=[torch.Generator().manual_seed(0)])
    print(f"first action: {float(result.first_action()[0, 0]):.2f} (the best is 1.0, full speed to the goal)")
