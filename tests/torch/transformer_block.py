"""The small pre-norm transformer block the PyTorch 2.x tests shard with FSDP2 (test_torch2.py,
fsdp_checkpoint.py): attention and an MLP, each behind a LayerNorm and a residual."""
import torch


class Block(torch.nn.Module):
    def __init__(self, width=32, heads=4):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.attention = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))
