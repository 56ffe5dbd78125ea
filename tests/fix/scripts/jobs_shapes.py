"""The shapes of real jobs `fxlens fix` must run as the user ran them: sizes read from stdin, a
module from a library (torch.nn.Linear: its code is torch's, compiled at this line), a compiled
bound method, and a module the script calls only through its methods (a VAE's encode/decode)."""

import sys

import torch

sizes = [int(s) for s in sys.stdin.read().split()]  # the job's input comes on stdin


class Agent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.policy = torch.nn.Linear(4, 2)

    def act(self, obs):
        return self.policy(obs).softmax(-1)


class VAE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = torch.nn.Linear(4, 3), torch.nn.Linear(3, 4)

    def encode(self, x):
        return self.enc(x).tanh()

    def decode(self, z):
        return self.dec(z).sigmoid()


lin = torch.compile(torch.nn.Linear(4, 4), backend="eager")
agent = Agent()
act = torch.compile(agent.act, backend="eager")
vae = torch.compile(VAE(), backend="eager")
for n in sizes:
    lin(torch.randn(n, 4))
    act(torch.randn(n, 4))
    vae.decode(vae.encode(torch.randn(n, 4)))
print(sizes)
