"""Losses: NegativeLogLikelihoodLoss (F.nll_loss) and SoftmaxCrossEntropyLoss (F.cross_entropy).

Targets are int64 class indices. The class ``weight`` input cannot be exercised: PyTorch
raises at forward time when it requires grad ("nll_loss_forward is not differentiable with
respect to argument 'weight'"), so the cases pass it without requires_grad. That matches
ONNX's non-differentiable tag, but the probe cannot record a forward-time refusal as
evidence.
"""
import torch
import torch.nn.functional as F

from ..case import Case, Expect, Float, Int
from .reference import reference_op

_WEIGHT = ("the mean loss is sum_i w[t_i] l_i / sum_i w[t_i]: a ratio of sums linear in the "
           "class weights, so it moves with them (only the numeric witness can show it: PyTorch "
           "refuses requires_grad on the weight, 'not differentiable with respect to argument "
           "weight'); the schema tags the weight non-differentiable")
_LOG_PROB = ("F.cross_entropy returns only the loss; the log_prob output is not exported (see "
             "softmaxcrossentropyloss_log_prob, reference)")


def negativeloglikelihoodloss_mean(x, target):
    return F.nll_loss(x, target)


def negativeloglikelihoodloss_weight_none(x, target, weight):
    return F.nll_loss(x, target, weight=weight, reduction="none")


def negativeloglikelihoodloss_kdim_ignore(x, target, weight):
    return F.nll_loss(x, target, weight=weight, reduction="sum", ignore_index=1)


def softmaxcrossentropyloss_mean(x, target):
    return F.cross_entropy(x, target)


def softmaxcrossentropyloss_weight_none(x, target, weight):
    return F.cross_entropy(x, target, weight=weight, reduction="none")


def softmaxcrossentropyloss_kdim_ignore(x, target, weight):
    return F.cross_entropy(x, target, weight=weight, reduction="sum", ignore_index=1)


@reference_op("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_log_prob(scores: torch.Tensor, labels: torch.Tensor, reduction: str
                                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """SoftmaxCrossEntropyLoss with its log_prob output: log_prob = log_softmax(scores) over
    the class axis 1; loss_i = -log_prob[i, labels_i], reduced (mean / sum / none)."""
    log_prob = torch.log_softmax(scores, dim=1)
    loss = -log_prob.gather(1, labels.unsqueeze(1)).squeeze(1)
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss, log_prob


def softmaxcrossentropyloss_log_prob(x, target):
    return softmax_cross_entropy_log_prob(x, target, "mean")


CASES = [
    Case("NegativeLogLikelihoodLoss", "negativeloglikelihoodloss_mean",
         negativeloglikelihoodloss_mean, (Float(3, 4), Int(3, high=4)), ("input", "target")),
    Case("NegativeLogLikelihoodLoss", "negativeloglikelihoodloss_weight_none",
         negativeloglikelihoodloss_weight_none,
         (Float(3, 4), Int(3, high=4), Float(4, low=0.5, high=1.5, requires_grad=False)),
         ("input", "target", "weight"), expect={"input 2": Expect("disagree", _WEIGHT)}),
    Case("NegativeLogLikelihoodLoss", "negativeloglikelihoodloss_kdim_ignore",
         negativeloglikelihoodloss_kdim_ignore,
         (Float(2, 3, 4), Int(2, 4, high=3), Float(3, low=0.5, high=1.5, requires_grad=False)),
         ("input", "target", "weight"), expect={"input 2": Expect("disagree", _WEIGHT)},
         exporter="torchscript",
         notes="the dynamo exporter decomposes nll_loss with K-dim input (N, C, d1) into "
               "GatherElements/Where/ReduceSum; the TorchScript exporter emits one "
               "NegativeLogLikelihoodLoss node"),
    Case("SoftmaxCrossEntropyLoss", "softmaxcrossentropyloss_mean",
         softmaxcrossentropyloss_mean, (Float(3, 4), Int(3, high=4)), ("scores", "labels"),
         unexercised={"output 1": _LOG_PROB}),
    Case("SoftmaxCrossEntropyLoss", "softmaxcrossentropyloss_log_prob",
         softmaxcrossentropyloss_log_prob, (Float(3, 4), Int(3, high=4)), ("scores", "labels"),
         kind="reference", translation=softmax_cross_entropy_log_prob.translation,
         notes="reference: F.cross_entropy returns only the loss; this returns both outputs, "
               "so log_prob (output 1) is exercised"),
    Case("SoftmaxCrossEntropyLoss", "softmaxcrossentropyloss_weight_none",
         softmaxcrossentropyloss_weight_none,
         (Float(3, 4), Int(3, high=4), Float(4, low=0.5, high=1.5, requires_grad=False)),
         ("scores", "labels", "weights"),
         expect={"input 2": Expect("disagree", _WEIGHT)}, unexercised={"output 1": _LOG_PROB}),
    Case("SoftmaxCrossEntropyLoss", "softmaxcrossentropyloss_kdim_ignore",
         softmaxcrossentropyloss_kdim_ignore,
         (Float(2, 3, 4), Int(2, 4, high=3), Float(3, low=0.5, high=1.5, requires_grad=False)),
         ("scores", "labels", "weights"),
         expect={"input 2": Expect("disagree", _WEIGHT)}, unexercised={"output 1": _LOG_PROB}),
]
