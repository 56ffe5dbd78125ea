"""A PPO-style actor-critic whose bound method is compiled (`torch.compile(agent.get_action_and_value)`,
as CleanRL does), called on rollouts of a changing number of environments."""

import torch

torch.manual_seed(0)


class Agent(torch.nn.Module):
    def __init__(self, obs=6, actions=3):
        super().__init__()
        self.critic = torch.nn.Sequential(torch.nn.Linear(obs, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
        self.actor = torch.nn.Sequential(
            torch.nn.Linear(obs, 32), torch.nn.Tanh(), torch.nn.Linear(32, actions)
        )

    def get_action_and_value(self, x, action):
        logits = self.actor(x)
        logprob = logits.log_softmax(-1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
        return action, logprob, self.critic(x).squeeze(-1)


agent = Agent()
policy = torch.compile(agent.get_action_and_value, backend="eager")
for envs in (8, 6, 4):
    x = torch.randn(envs, 6)
    action = torch.randint(0, 3, (envs,))
    _, logprob, value = policy(x, action)
    (-(logprob.mean()) + value.pow(2).mean()).backward()
print(round(float(value.sum()), 4))
