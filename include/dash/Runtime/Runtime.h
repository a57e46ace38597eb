/*===- Runtime.h - DASH attention-backward runtime (C API) -------*- C -*-===*
 *
 * Part of the DASH project. No MLIR, no CUDA headers, no link-time libcuda:
 * the driver is dlopen'ed ("libcuda.so.1") on the first call that needs it.
 * See docs/Runtime.md.
 *
 * Conventions
 *  - Every function returns a dash_status; on error a message naming the
 *    offending argument is available from dash_runtime_last_error() on the
 *    calling thread.
 *  - Tensors are described in their LOGICAL order: q, o, dO, dq are
 *    [B, Sq, Hq, D]; k, v, dk, dv are [B, Sk, Hkv, D]; lse is [B, Hq, Sq].
 *    Strides are in elements and may be anything (e.g. a BHSD tensor has
 *    strides {Hq*Sq*D, D, Sq*D, 1}) except: the stride of D must be 1 and the
 *    other strides of bf16/f16 tensors must be multiples of 8 elements (16 B).
 *  - A runtime object may be used from several threads (calls serialise on
 *    an internal lock). Workspace is cached per (CUDA context, stream);
 *    a call under CUDA-graph stream capture gets a graph allocation of its
 *    own instead, and its tensor maps a pinned host slot the runtime keeps
 *    until it is destroyed (docs/Runtime.md).
 *===----------------------------------------------------------------------===*/

#ifndef DASH_RUNTIME_RUNTIME_H
#define DASH_RUNTIME_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DASH_API __attribute__((visibility("default")))
#else
#define DASH_API
#endif

typedef enum dash_status {
  DASH_SUCCESS = 0,
  DASH_ERROR_INVALID_ARGUMENT = 1, /* null pointer, shape/stride/scale ... */
  DASH_ERROR_UNSUPPORTED = 2,      /* head dim not in {64,128}, dtype not bf16/f16 */
  DASH_ERROR_NO_KERNEL = 3,        /* configuration has no compiled kernel */
  DASH_ERROR_ILLEGAL_SCHEDULE = 4, /* dash::sched::checkLegal refused the policy */
  DASH_ERROR_TOO_MANY_UNITS = 5,   /* requested G > co-resident CTAs */
  DASH_ERROR_MANIFEST = 6,         /* bad kernel directory or manifest */
  DASH_ERROR_NO_DRIVER = 7,        /* libcuda.so.1 missing or too old */
  DASH_ERROR_DRIVER = 8,           /* a CUDA driver call failed */
  DASH_ERROR_OUT_OF_MEMORY = 9,    /* workspace allocation failed */
  DASH_ERROR_HANG = 10             /* a debug kernel reported a stuck wait */
} dash_status;

typedef enum dash_dtype {
  DASH_DTYPE_BF16 = 0,
  DASH_DTYPE_F16 = 1,
  DASH_DTYPE_F32 = 2
} dash_dtype;

/* Causal alignment: key j visible to query i iff j <= i + off with
 * off = Sk - Sq (bottom-right, FlashAttention) or 0 (top-left, PyTorch SDPA
 * is_causal). DEFAULT means bottom-right. Ignored for the full mask. */
typedef enum dash_align {
  DASH_ALIGN_DEFAULT = 0,
  DASH_ALIGN_BOTTOM_RIGHT = 1,
  DASH_ALIGN_TOP_LEFT = 2
} dash_align;

typedef enum dash_policy {
  DASH_POLICY_AUTO = 0,
  DASH_POLICY_ASCENDING = 1,
  DASH_POLICY_SPT = 2,
  DASH_POLICY_DESCENDING = 3,
  DASH_POLICY_SHIFT = 4,
  DASH_POLICY_SYMMETRIC_SHIFT = 5
} dash_policy;

typedef struct dash_tensor {
  void *data;          /* device pointer, 16-byte aligned */
  int32_t rank;        /* 4, or 3 for lse */
  int64_t shape[4];    /* logical order, see above */
  int64_t strides[4];  /* in elements */
  dash_dtype dtype;
} dash_tensor;

typedef struct dash_bwd_args {
  dash_tensor q, k, v, o, dO, lse; /* inputs */
  dash_tensor dq, dk, dv;          /* outputs (same dtype as q); no element of an
                                      output may overlap an input or another
                                      output (dk/dv are written while other CTAs
                                      still read q, k, v, o, dO; only equal base
                                      pointers are detected) */
  int32_t causal;                  /* 0 = full mask, 1 = causal */
  dash_align align;
  float scale;                     /* softmax scale, finite and > 0 */
  int32_t deterministic;           /* 0 or 1 */
  dash_policy policy;              /* AUTO: chosen by the schedule model */
  int64_t num_units;               /* G; 0 = occupancy x SMs */
} dash_bwd_args;

/* What a check or a launch resolved. */
typedef struct dash_bwd_info {
  dash_policy policy;        /* resolved; AUTO only if G was unknown (check) */
  int64_t num_units;         /* G the main kernel is (would be) launched with; 0 if unknown */
  int64_t max_units;         /* co-resident CTAs = blocks_per_sm * num_sms; 0 if unknown */
  int32_t blocks_per_sm;     /* occupancy of the main kernel; 0 if unknown */
  int32_t num_sms;           /* 0 if unknown */
  int64_t workspace_bytes;
  int32_t block_m, block_n, threads;
  int64_t main_shared_bytes;
  char kernel_name[128];
} dash_bwd_info;

/* Injectable device limits: used instead of the driver's occupancy query so
 * the G checks (and auto policy) can be exercised and tested without a GPU. */
typedef struct dash_device_props {
  int32_t num_sms;       /* > 0 */
  int32_t blocks_per_sm; /* co-resident main-kernel CTAs per SM, > 0 */
} dash_device_props;

typedef struct dash_runtime dash_runtime;

/* Loads every manifest (*.json) in kernel_dir (NULL: $DASH_KERNEL_DIR, else
 * "build/kernels"). No driver call. */
DASH_API dash_status dash_runtime_create(const char *kernel_dir, dash_runtime **out);
/* As above; libcuda_path overrides "libcuda.so.1" (NULL: $DASH_LIBCUDA, else
 * "libcuda.so.1"). Used by the tests to load a mock driver. */
DASH_API dash_status dash_runtime_create_ex(const char *kernel_dir, const char *libcuda_path,
                                            dash_runtime **out);
/* Waits for each context it used, then frees modules, workspace and the
 * pinned slots of captured calls. A CUDA graph that captured a call of this
 * runtime must not be replayed after this. NULL is a no-op. */
DASH_API void dash_runtime_destroy(dash_runtime *rt);

/* Message of the last failing call on this thread ("" if none). rt may be
 * NULL (e.g. after a failed create). */
DASH_API const char *dash_runtime_last_error(const dash_runtime *rt);
DASH_API const char *dash_status_name(dash_status s);

/* NULL props clears the override (back to the driver's occupancy query). */
DASH_API dash_status dash_runtime_set_device_props(dash_runtime *rt, const dash_device_props *props);
/* Debug mode: zero the workspace before each call (the preprocess kernel
 * already does) and synchronise the stream after each kernel so a fault is
 * attributed to the kernel that raised it. */
DASH_API dash_status dash_runtime_set_debug(dash_runtime *rt, int32_t enable);

/* Number of loaded kernel configurations and a description of one, e.g.
 * "d128_causal_br_descending_det: d128 bf16 causal bottom_right descending det". */
DASH_API int32_t dash_runtime_num_kernels(const dash_runtime *rt);
DASH_API const char *dash_runtime_kernel_description(const dash_runtime *rt, int32_t index);

/* Validates args and selects the kernel WITHOUT any driver call. G-dependent
 * checks (co-residency, shift legality for G, auto) use the injected device
 * props or those cached from an earlier launch in this runtime; without
 * either and with num_units == 0 they are skipped and info reports
 * num_units = 0 (and policy = AUTO if auto was requested). out_info may be NULL. */
DASH_API dash_status dash_attention_bwd_check(dash_runtime *rt, const dash_bwd_args *args,
                                              dash_bwd_info *out_info);

/* Validates (as above, before touching the driver), then launches
 * preprocess, main and postprocess on `stream` (a CUstream; NULL = default
 * stream) in the current CUDA context (the primary context of device 0 if
 * none is current). Asynchronous. out_info may be NULL. */
DASH_API dash_status dash_attention_bwd(dash_runtime *rt, const dash_bwd_args *args, void *stream,
                                        dash_bwd_info *out_info);

/* Workspace a call with these args needs: the largest of the kernels it may select. */
DASH_API dash_status dash_workspace_bytes(dash_runtime *rt, const dash_bwd_args *args,
                                          int64_t *out_bytes);

/* "auto", "ascending", "spt", "descending", "shift", "symmetric-shift". */
DASH_API const char *dash_policy_name(dash_policy p);
/* Accepts the names above ('_' for '-' too). Returns 0 if unknown. */
DASH_API int32_t dash_policy_parse(const char *name, dash_policy *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DASH_RUNTIME_RUNTIME_H */
