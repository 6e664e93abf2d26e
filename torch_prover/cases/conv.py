"""Conv: module parameters (weight, bias) become initializers and still carry gradients."""
import torch

from ..case import Case, F


class Conv2dBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, kernel_size=3, bias=True)

    def forward(self, x):
        return self.conv(x)


CASES = [
    Case("Conv", "conv2d_bias", Conv2dBias, (F(1, 2, 5, 5),), ("x",)),
]
