"""Dropout in training mode, TorchScript at opset 12 (Dropout-12: every tag unknown)."""
import torch
import torch.nn as nn

model = nn.Dropout(p=0.5)
model.train()
x = torch.randn(4, 5, requires_grad=True)
y = model(x)
y.backward(torch.ones_like(y))
torch.onnx.export(model, (x,), "dropout12.onnx", opset_version=12, dynamo=False,
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
