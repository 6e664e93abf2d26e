"""Linear algebra: MatMul, Gemm, Einsum, Det.

Gemm: torch.addmm exports Gemm(A, B, C) with C the *first* torch argument (alpha/beta become
attributes); F.linear exports Gemm(transB=1) with the bias as C, or without C when there is
no bias. torch.mm of a transposed tensor stays Transpose + MatMul.
Det: inputs are 2*I + 0.3*randn, well conditioned, so the gradient det(A) * A^-T is tame.
onnxruntime has no float64 Det kernel: the float64 Det cases run in the onnx reference
evaluator, the float32 one in onnxruntime.
"""
import torch
import torch.nn.functional as F

from ..case import Case, Custom, Float


# --------------------------------------------------------------------------- MatMul
def matmul_2d(a, b):
    return torch.matmul(a, b)


# --------------------------------------------------------------------------- Gemm
def gemm_addmm(c, a, b):
    return torch.addmm(c, a, b)


def gemm_addmm_alpha_beta(c, a, b):
    return torch.addmm(c, a, b, beta=0.5, alpha=2.0)


def gemm_linear(x, weight, bias):
    return F.linear(x, weight, bias)


def gemm_linear_no_bias(x, weight):
    return F.linear(x, weight)


# --------------------------------------------------------------------------- Einsum
def einsum_matmul(a, b):
    return torch.einsum("ij,jk->ik", a, b)


def einsum_chain3(a, b, c):
    return torch.einsum("ij,jk,kl->il", a, b, c)


def einsum_diagonal(a):
    return torch.einsum("ii->i", a)


# --------------------------------------------------------------------------- Det
def det(a):
    return torch.linalg.det(a)


def _well_conditioned(*batch, n=3):
    def make(gen, float_dtype):
        noise = torch.randn(*batch, n, n, generator=gen, dtype=torch.float64)
        return (2.0 * torch.eye(n, dtype=torch.float64) + 0.3 * noise).to(float_dtype)

    return Custom(make)


CASES = [
    Case("MatMul", "matmul_2d", matmul_2d, (Float(3, 4), Float(4, 2)), ("a", "b")),
    Case("MatMul", "matmul_batched_broadcast", matmul_2d, (Float(2, 3, 4), Float(4, 2)), ("a", "b")),
    Case("MatMul", "matmul_matrix_vector", matmul_2d, (Float(3, 4), Float(4)), ("a", "b")),
    Case("Gemm", "gemm_addmm", gemm_addmm, (Float(3, 2), Float(3, 4), Float(4, 2)), ("c", "a", "b"),
         notes="torch.addmm(c, a, b) exports Gemm(a, b, c): C is exercised."),
    Case("Gemm", "gemm_addmm_alpha_beta", gemm_addmm_alpha_beta, (Float(2), Float(3, 4), Float(4, 2)),
         ("c", "a", "b"),
         notes="alpha=2, beta=0.5 as attributes; C broadcast from shape (2,)."),
    Case("Gemm", "gemm_linear", gemm_linear, (Float(3, 4), Float(2, 4), Float(2)), ("x", "weight", "bias"),
         notes="F.linear exports Gemm(transB=1) at opset 25 (not MatMul + Add)."),
    Case("Gemm", "gemm_linear_no_bias", gemm_linear_no_bias, (Float(3, 4), Float(2, 4)),
         ("x", "weight"),
         fails_at={v: f"Gemm-{v} requires C (optional from Gemm-11): this case has no bias"
                   for v in (7, 9)},
         notes="F.linear without bias: Gemm(transB=1) with C absent."),
    Case("Einsum", "einsum_matmul", einsum_matmul, (Float(3, 4), Float(4, 2)), ("a", "b")),
    Case("Einsum", "einsum_chain3", einsum_chain3, (Float(3, 4), Float(4, 2), Float(2, 3)), ("a", "b", "c"),
         notes="three operands: the variadic Inputs at indices 0, 1, 2."),
    Case("Einsum", "einsum_diagonal", einsum_diagonal, (Float(3, 3),), ("a",),
         notes="one operand (ii->i)."),
    Case("Det", "det_3x3", det, (_well_conditioned(),), ("a",)),
    Case("Det", "det_batched", det, (_well_conditioned(2),), ("a",)),
    Case("Det", "det_3x3_float32", det, (_well_conditioned(),), ("a",),
         float_dtype=torch.float32,
         notes="onnxruntime 1.31 has no float64 Det kernel (the float64 cases run in the onnx "
               "reference evaluator); float32 lets onnxruntime confirm the op as well."),
]
