//===- Args.cpp - The runtime's argument validation ----------------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// Every rule on a call's tensors, scalars and enums that needs no manifest
// and no driver: shapes, strides, dtypes, aliasing, the enums' ranges and
// the 32-bit limits of the kernels' index math. Each refusal names the
// argument it is about.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

#include <algorithm>
#include <cmath>

namespace dash::rt::impl {

namespace {

const char *dtypeName(dash_dtype d) {
  switch (d) {
  case DASH_DTYPE_BF16: return "bf16";
  case DASH_DTYPE_F16: return "f16";
  case DASH_DTYPE_F32: return "f32";
  }
  return "unknown";
}
int64_t dtypeBytes(dash_dtype d) { return d == DASH_DTYPE_F32 ? 4 : 2; }

bool dtypeValid(int32_t d) {
  return d == DASH_DTYPE_BF16 || d == DASH_DTYPE_F16 || d == DASH_DTYPE_F32;
}

// Per-tensor rules that need no other tensor.
dash_status checkTensor(const dash_tensor &t, const char *name, int rank,
                        bool output) {
  std::string n = name;
  if (!t.data)
    return fail(DASH_ERROR_INVALID_ARGUMENT, n + ".data is NULL");
  if (t.rank != rank)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                n + ".rank must be " + str(rank) + ", got " + str(t.rank));
  if (!dtypeValid(rawEnum(t.dtype)))
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                n + ".dtype has unknown value " + str(rawEnum(t.dtype)));
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                n + ".data must be 16-byte aligned (TMA/vector loads)");
  const int64_t elt = dtypeBytes(t.dtype);
  int64_t span = 0; // largest element offset
  for (int i = 0; i < rank; ++i) {
    if (t.shape[i] <= 0)
      return fail(DASH_ERROR_INVALID_ARGUMENT, n + ".shape[" + str(i) +
                                                   "] must be positive, got " +
                                                   str(t.shape[i]));
    if (t.shape[i] > kInt32Max)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ".shape[" + str(i) + "] = " + str(t.shape[i]) +
                      " exceeds 2^31-1");
    if (t.shape[i] == 1)
      continue; // stride of a size-1 dim is never used (PyTorch leaves any value)
    if (t.strides[i] < 1)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ".strides[" + str(i) + "] must be >= 1, got " +
                      str(t.strides[i]));
    int64_t term;
    if (__builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &term) ||
        __builtin_add_overflow(span, term, &span))
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ": shape x strides overflows int64");
  }
  if (span > (INT64_MAX / elt) - 1)
    return fail(DASH_ERROR_INVALID_ARGUMENT, n + ": byte extent overflows int64");
  if (rank == 4) {
    if (t.shape[3] > 1 && t.strides[3] != 1)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ".strides[3] (head dim) must be 1, got " +
                      str(t.strides[3]));
    // Rows are fetched in 16-byte pieces (TMA needs 16-byte global strides).
    for (int i = 0; i < 3; ++i)
      if (t.shape[i] > 1 && (t.strides[i] * elt) % 16 != 0)
        return fail(DASH_ERROR_INVALID_ARGUMENT,
                    n + ".strides[" + str(i) + "] = " + str(t.strides[i]) +
                        " elements is not a multiple of 16 bytes");
  }
  if (output) {
    // Sufficient condition for no two indices sharing an address: sorted by
    // stride, each stride reaches past the previous dims' extent.
    int order[4] = {0, 1, 2, 3};
    for (int i = 1; i < rank; ++i) // insertion sort: rank <= 4
      for (int j = i; j > 0 && t.strides[order[j]] < t.strides[order[j - 1]]; --j)
        std::swap(order[j], order[j - 1]);
    int64_t need = 1;
    for (int k = 0; k < rank; ++k) {
      int d = order[k];
      if (t.shape[d] == 1)
        continue;
      if (t.strides[d] < need)
        return fail(DASH_ERROR_INVALID_ARGUMENT,
                    n + ": strides make elements overlap (output must not "
                        "alias itself)");
      need = t.strides[d] * t.shape[d];
    }
  }
  return DASH_SUCCESS;
}

dash_status checkSame(const dash_tensor &t, const char *name, int dim,
                      const char *what, int64_t want, const char *ref) {
  if (t.shape[dim] != want)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                std::string(name) + ".shape[" + str(dim) + "] (" + what +
                    ") = " + str(t.shape[dim]) + " does not match " + ref +
                    " = " + str(want));
  return DASH_SUCCESS;
}

} // namespace

dash_status validateArgs(const dash_bwd_args *a, Shape &s) {
  if (!a)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "args is NULL");
  struct T {
    const dash_tensor *t;
    const char *name;
    int rank;
    bool output;
  };
  const T all[] = {{&a->q, "q", 4, false},   {&a->k, "k", 4, false},
                   {&a->v, "v", 4, false},   {&a->o, "o", 4, false},
                   {&a->dO, "dO", 4, false}, {&a->lse, "lse", 3, false},
                   {&a->dq, "dq", 4, true},  {&a->dk, "dk", 4, true},
                   {&a->dv, "dv", 4, true}};
  for (const T &t : all)
    if (dash_status st = checkTensor(*t.t, t.name, t.rank, t.output))
      return st;

  s.B = a->q.shape[0];
  s.Sq = a->q.shape[1];
  s.Hq = a->q.shape[2];
  s.D = a->q.shape[3];
  s.Sk = a->k.shape[1];
  s.Hkv = a->k.shape[2];
  s.dtype = a->q.dtype;
  dash_status st;
  for (const T &t : all) {
    if (t.t == &a->q)
      continue;
    if ((st = checkSame(*t.t, t.name, 0, "batch", s.B, "q.shape[0]")))
      return st;
    if (t.t == &a->lse) {
      if ((st = checkSame(*t.t, t.name, 1, "heads", s.Hq, "q.shape[2]")) ||
          (st = checkSame(*t.t, t.name, 2, "seqlen", s.Sq, "q.shape[1]")))
        return st;
      continue;
    }
    bool isKV = t.t == &a->k || t.t == &a->v || t.t == &a->dk || t.t == &a->dv;
    if (isKV) {
      if ((st = checkSame(*t.t, t.name, 1, "seqlen_k", s.Sk, "k.shape[1]")) ||
          (st = checkSame(*t.t, t.name, 2, "heads_kv", s.Hkv, "k.shape[2]")))
        return st;
    } else {
      if ((st = checkSame(*t.t, t.name, 1, "seqlen", s.Sq, "q.shape[1]")) ||
          (st = checkSame(*t.t, t.name, 2, "heads", s.Hq, "q.shape[2]")))
        return st;
    }
    if ((st = checkSame(*t.t, t.name, 3, "head_dim", s.D, "q.shape[3]")))
      return st;
  }
  if (s.Hq % s.Hkv != 0)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "heads of q (" + str(s.Hq) + ") must be a multiple of heads of k (" +
                    str(s.Hkv) + ")");
  // dtypes: one element type for the 8 attention tensors, f32 lse.
  if (s.dtype == DASH_DTYPE_F32)
    return fail(DASH_ERROR_UNSUPPORTED,
                "q.dtype f32 is not supported (bf16 or f16)");
  for (const T &t : all) {
    if (t.t == &a->lse)
      continue;
    if (t.t->dtype != s.dtype)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  std::string(t.name) + ".dtype " + dtypeName(t.t->dtype) +
                      " differs from q.dtype " + dtypeName(s.dtype));
  }
  if (a->lse.dtype != DASH_DTYPE_F32)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                std::string("lse.dtype must be f32, got ") + dtypeName(a->lse.dtype));
  if (s.D != 64 && s.D != 128)
    return fail(DASH_ERROR_UNSUPPORTED,
                "head_dim " + str(s.D) + " is not supported (64 or 128)");
  // Outputs must not share a base address with each other or the inputs.
  for (const T &o : all) {
    if (!o.output)
      continue;
    for (const T &t : all)
      if (t.t != o.t && t.t->data == o.t->data)
        return fail(DASH_ERROR_INVALID_ARGUMENT,
                    std::string(o.name) + ".data aliases " + t.name + ".data");
  }
  if (!std::isfinite(a->scale) || !(a->scale > 0))
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "scale must be finite and > 0, got " + std::to_string(a->scale));
  if (a->causal != 0 && a->causal != 1)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "causal must be 0 or 1, got " + str(a->causal));
  if (a->deterministic != 0 && a->deterministic != 1)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "deterministic must be 0 or 1, got " + str(a->deterministic));
  if (int32_t al = rawEnum(a->align);
      al < DASH_ALIGN_DEFAULT || al > DASH_ALIGN_TOP_LEFT)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "align has unknown value " + str(al));
  if (int32_t po = rawEnum(a->policy);
      po < DASH_POLICY_AUTO || po > DASH_POLICY_SYMMETRIC_SHIFT)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "policy has unknown value " + str(po));
  if (a->num_units < 0 || a->num_units > kInt32Max)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "num_units must be in [0, 2^31-1] (0 = occupancy), got " +
                    str(a->num_units));
  // Work items must fit the schedule library's 2^31 limits and int32 grids.
  int64_t slots;
  if (__builtin_mul_overflow(s.B, s.Hq, &slots) || slots > kInt32Max)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "batch * heads = " + str(s.B) + " * " + str(s.Hq) +
                    " exceeds 2^31-1");
  return DASH_SUCCESS;
}

sched::Policy toSched(dash_policy p) {
  switch (p) {
  case DASH_POLICY_ASCENDING: return sched::Policy::Ascending;
  case DASH_POLICY_SPT: return sched::Policy::Spt;
  case DASH_POLICY_DESCENDING: return sched::Policy::Descending;
  case DASH_POLICY_SHIFT: return sched::Policy::Shift;
  case DASH_POLICY_SYMMETRIC_SHIFT: return sched::Policy::SymmetricShift;
  case DASH_POLICY_AUTO: break;
  }
  return sched::Policy::Auto;
}
dash_policy fromSched(sched::Policy p) {
  switch (p) {
  case sched::Policy::Ascending: return DASH_POLICY_ASCENDING;
  case sched::Policy::Spt: return DASH_POLICY_SPT;
  case sched::Policy::Descending: return DASH_POLICY_DESCENDING;
  case sched::Policy::Shift: return DASH_POLICY_SHIFT;
  case sched::Policy::SymmetricShift: return DASH_POLICY_SYMMETRIC_SHIFT;
  case sched::Policy::Auto: break;
  }
  return DASH_POLICY_AUTO;
}

} // namespace dash::rt::impl
