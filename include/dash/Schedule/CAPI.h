/*===- CAPI.h - C API of the DASH schedule model -----------------*- C -*-===*
 *
 * Part of the DASH project. The report `dash-sched --json` prints, as a C
 * function, so the Python front end (ctypes) and other languages use the
 * same lib/Schedule code. Built as libdash_schedule_c.so; exports only the
 * functions below. No exceptions cross this boundary; every string it hands
 * out is freed with dash_sched_free().
 *===----------------------------------------------------------------------===*/

#ifndef DASH_SCHEDULE_CAPI_H
#define DASH_SCHEDULE_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DASH_SCHED_API __attribute__((visibility("default")))
#else
#define DASH_SCHED_API
#endif

/* Bumped when a struct below changes layout; callers compare it. */
#define DASH_SCHED_ABI_VERSION 2

/* Problem and output options. Zero in an optional field means "the
 * default dash-sched uses"; fill with dash_sched_options_init() first. */
typedef struct dash_sched_options {
  int64_t batch;        /* > 0 */
  int64_t heads;        /* query heads, > 0 */
  int64_t heads_kv;     /* 0: = heads; must divide heads */
  int64_t seqlen;       /* query length, > 0 */
  int64_t seqlen_k;     /* 0: = seqlen */
  int64_t hdim;         /* 64 or 128 */
  int32_t causal;       /* 0 full, 1 causal */
  int32_t top_left;     /* causal alignment: 0 bottom-right (FlashAttention), 1 top-left (SDPA) */
  int64_t block_m;      /* 0: FA3 tile (d=64: 128; d=128: 64 causal, 80 full) */
  int64_t block_n;      /* 0: 128 */
  int64_t sms;          /* G, units of the persistent grid, > 0 */
  int64_t resident_sms; /* 0: = sms */
  double c, r;          /* task costs: c > 0, r >= 0 */
  const char *policy;   /* NULL or "": every schedule; else one name (or "auto") */
  int32_t detail;       /* per-unit work lists and per-row ranks in the JSON */
  int32_t svg;          /* also produce the Gantt SVG */
  /* ABI 2: */
  int32_t persistent;   /* 1: every schedule as a persistent grid (DASH's kernels,
                           the runtime's auto); 0: ascending/spt/descending as FA3
                           launches them (dash-sched --launch) */
  int64_t staging;      /* dQ staging buffers, 0..8: 0 serial model, B the staged
                           one (dash-sched --staging) */
  double read_fraction; /* staged model, (0, 1]; 0: 0.5 */
} dash_sched_options;

/* dash-sched's defaults: batch 1, heads 16, seqlen 4096, hdim 128, full,
 * bottom-right, sms 132, c 1, r 0.25, everything else 0/NULL. */
DASH_SCHED_API void dash_sched_options_init(dash_sched_options *opts);

/* Models every schedule of the problem. On success returns 0, *out_json is
 * the object `dash-sched --json [--detail]` prints ({"problem":...,
 * "schedules":[...], "auto":...}) and *out_svg (if out_svg is not NULL and
 * opts->svg) the Gantt SVG `dash-sched --svg` writes; otherwise *out_svg is
 * NULL. On bad input returns 2 (dash-sched's exit status), *out_json and
 * *out_svg are NULL and *out_error (if not NULL) holds the message. Any
 * non-NULL string must be released with dash_sched_free(). */
DASH_SCHED_API int32_t dash_sched_report(const dash_sched_options *opts, char **out_json,
                                         char **out_svg, char **out_error);

DASH_SCHED_API void dash_sched_free(char *s);
DASH_SCHED_API int32_t dash_sched_abi_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DASH_SCHEDULE_CAPI_H */
