/*
 * NCCL face: NCCL 2.30.4's parameter API (ncclParam*).
 *
 * HETCCL_* keys are answered from HetCCL's settings tables (hetcclParam*,
 * api/api_param.c: the values hetccl-info prints); every other key is
 * NCCL's own and goes to the NCCL library underneath when it has this API
 * (2.30.4 and later), else it is refused with ncclInvalidUsage naming the
 * version found. A handle made here says which of the two it is bound to;
 * handles are made once per key and live as long as the process.
 *
 * Integers: HetCCL's settings are 64-bit (sizes, counts) or words of a
 * list (read as their index); a typed read of any width succeeds when the
 * value fits that type, else ncclInvalidArgument. Text is read with
 * ncclParamGetStr only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_face.h"

#define PARAM_MAGIC 0x68706172u

struct ncclParamHandle {
  unsigned magic;
  hetcclParamHandle_t het;   /* a HETCCL_* key: HetCCL's handle */
  ncclParamHandle_t real;    /* an NCCL key: the NCCL library's handle */
  struct ncclParamHandle *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclParamHandle *g_handles;

static int is_hetccl_key(const char *key) { return !strncmp(key, "HETCCL_", 7); }

/* The handle for `het` or `real` (exactly one set), made on first use. */
static struct ncclParamHandle *handle_for(hetcclParamHandle_t het, ncclParamHandle_t real) {
  pthread_mutex_lock(&g_lock);
  struct ncclParamHandle *h = g_handles;
  while (h && !(h->het == het && h->real == real)) h = h->next;
  if (!h && (h = calloc(1, sizeof *h))) {
    *h = (struct ncclParamHandle){PARAM_MAGIC, het, real, g_handles};
    g_handles = h;
  }
  pthread_mutex_unlock(&g_lock);
  return h;
}

/* NCCL's `fn`, or a refusal naming the NCCL found (this API is 2.30.4's). */
static ncclResult_t nccl_param_fn(const char *fn, const char *key, void **entry) {
  char desc[1200], why[1400];
  *entry = face_lib_symbol(fn, desc, sizeof desc);
  if (*entry) return ncclSuccess;
  int none = !strncmp(desc, "no ", 3); /* no library at all, rather than one without the API */
  snprintf(why, sizeof why, "%s%s%s%s%s%s; HetCCL answers only its own HETCCL_* keys", key ? "key " : "", key ? key : "",
           key ? " is not HetCCL's, and " : "", none ? "there is " : "the " HETCCL_FACE_TITLE " found, ", desc,
           none ? " to ask" : ", has no parameter API (NCCL 2.30.4 added it)");
  return face_refuse(fn, why);
}

static ncclResult_t check_handle(const char *fn, ncclParamHandle_t h) {
  if (!h) return face_invalid(fn, "handle is NULL");
  if (h->magic != PARAM_MAGIC) return face_invalid(fn, "not a handle made by ncclParamBind");
  return ncclSuccess;
}

typedef ncclResult_t (*bind_fn)(ncclParamHandle_t *, const char *);

FACE_API ncclResult_t pncclParamBind(ncclParamHandle_t *out, const char *key) {
  FACE_GUARD(ncclParamBind, out, key);
  const char *fn = "ncclParamBind";
  if (!out) return face_invalid(fn, "out is NULL");
  *out = NULL;
  if (!key) return face_invalid(fn, "key is NULL");
  hetcclParamHandle_t het = NULL;
  ncclParamHandle_t real = NULL;
  if (is_hetccl_key(key)) {
    hetcclResult_t r = hetcclParamBind(&het, key);
    if (r != hetcclSuccess) return face_result(r);
  } else {
    void *entry;
    ncclResult_t r = nccl_param_fn(fn, key, &entry);
    if (r != ncclSuccess) return r;
    r = FACE_PASS(bind_fn, entry, &real, key);
    if (r != ncclSuccess) return r;
  }
  if (!(*out = handle_for(het, real)))
    return face_result(hetcclInternalRecordError(hetcclSystemError, "ncclParamBind: out of memory"));
  return ncclSuccess;
}
FACE_ALIAS(ncclParamBind)

/* HetCCL's integer value of h, checked to fit [lo, hi]. */
static ncclResult_t own_int(const char *fn, ncclParamHandle_t h, int64_t lo, uint64_t hi, int64_t *v) {
  hetcclParamKind_t kind;
  hetcclResult_t r = hetcclParamKind(h->het, &kind);
  if (r != hetcclSuccess) return face_result(r);
  if (kind == hetcclParamText) return face_invalid(fn, "the parameter is text: read it with ncclParamGetStr");
  if ((r = hetcclParamGetInt(h->het, v)) != hetcclSuccess) return face_result(r);
  if (*v < lo || (*v > 0 && (uint64_t)*v > hi)) {
    char msg[128];
    snprintf(msg, sizeof msg, "the value %lld does not fit the type asked", (long long)*v);
    return face_invalid(fn, msg);
  }
  return ncclSuccess;
}

#define TYPED_GETTER(Suffix, ctype, lo, hi)                                                        \
  FACE_API ncclResult_t pncclParamGet##Suffix(ncclParamHandle_t h, ctype *out) {                   \
    FACE_GUARD(ncclParamGet##Suffix, h, out);                                                      \
    const char *fn = "ncclParamGet" #Suffix;                                                       \
    ncclResult_t r = check_handle(fn, h);                                                          \
    if (r != ncclSuccess) return r;                                                                \
    if (!out) return face_invalid(fn, "out is NULL");                                              \
    if (h->real) {                                                                                 \
      void *entry;                                                                                 \
      if ((r = nccl_param_fn(fn, NULL, &entry)) != ncclSuccess) return r;                          \
      return FACE_PASS(ncclResult_t(*)(ncclParamHandle_t, ctype *), entry, h->real, out);          \
    }                                                                                              \
    int64_t v;                                                                                     \
    if ((r = own_int(fn, h, (lo), (hi), &v)) != ncclSuccess) return r;                             \
    *out = (ctype)v;                                                                               \
    return ncclSuccess;                                                                            \
  }                                                                                                \
  FACE_ALIAS(ncclParamGet##Suffix)

TYPED_GETTER(I8, int8_t, INT8_MIN, INT8_MAX)
TYPED_GETTER(I16, int16_t, INT16_MIN, INT16_MAX)
TYPED_GETTER(I32, int32_t, INT32_MIN, INT32_MAX)
TYPED_GETTER(I64, int64_t, INT64_MIN, INT64_MAX)
TYPED_GETTER(U8, uint8_t, 0, UINT8_MAX)
TYPED_GETTER(U16, uint16_t, 0, UINT16_MAX)
TYPED_GETTER(U32, uint32_t, 0, UINT32_MAX)
TYPED_GETTER(U64, uint64_t, 0, UINT64_MAX)

/* Per thread, as NCCL's: valid until the next call of the same function. */
static _Thread_local char t_str[4096];
static _Thread_local char t_value[4096];

FACE_API ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char **out) {
  FACE_GUARD(ncclParamGetStr, h, out);
  const char *fn = "ncclParamGetStr";
  ncclResult_t r = check_handle(fn, h);
  if (r != ncclSuccess) return r;
  if (!out) return face_invalid(fn, "out is NULL");
  if (h->real) {
    void *entry;
    if ((r = nccl_param_fn(fn, NULL, &entry)) != ncclSuccess) return r;
    return FACE_PASS(ncclResult_t(*)(ncclParamHandle_t, const char **), entry, h->real, out);
  }
  hetcclResult_t hr = hetcclParamGetString(h->het, t_str, sizeof t_str, NULL);
  if (hr != hetcclSuccess) return face_result(hr);
  *out = t_str;
  return ncclSuccess;
}
FACE_ALIAS(ncclParamGetStr)

FACE_API ncclResult_t pncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len) {
  FACE_GUARD(ncclParamGet, h, out, maxLen, len);
  const char *fn = "ncclParamGet";
  ncclResult_t r = check_handle(fn, h);
  if (r != ncclSuccess) return r;
  if (!out) return face_invalid(fn, "out is NULL");
  if (h->real) {
    void *entry;
    if ((r = nccl_param_fn(fn, NULL, &entry)) != ncclSuccess) return r;
    return FACE_PASS(ncclResult_t(*)(ncclParamHandle_t, void *, int, int *), entry, h->real, out, maxLen, len);
  }
  hetcclParamKind_t kind;
  hetcclResult_t hr = hetcclParamKind(h->het, &kind);
  if (hr != hetcclSuccess) return face_result(hr);
  char text[4096];
  int64_t v = 0;
  const void *bytes = &v;
  size_t n = sizeof v;
  if (kind == hetcclParamText) {
    if ((hr = hetcclParamGetString(h->het, text, sizeof text, &n)) != hetcclSuccess) return face_result(hr);
    bytes = text;
    n += 1; /* with its NUL */
  } else if ((hr = hetcclParamGetInt(h->het, &v)) != hetcclSuccess) {
    return face_result(hr);
  }
  if (len) *len = (int)n;
  if (maxLen < 0 || (size_t)maxLen < n) {
    char msg[128];
    snprintf(msg, sizeof msg, "maxLen %d is smaller than the value's %zu bytes", maxLen, n);
    return face_invalid(fn, msg);
  }
  memcpy(out, bytes, n);
  return ncclSuccess;
}
FACE_ALIAS(ncclParamGet)

FACE_API ncclResult_t pncclParamGetParameter(const char *key, const char **value, int *valueLen) {
  FACE_GUARD(ncclParamGetParameter, key, value, valueLen);
  const char *fn = "ncclParamGetParameter";
  if (!key || !value || !valueLen) return face_invalid(fn, "key, value or valueLen is NULL");
  *value = NULL;
  *valueLen = 0;
  if (!is_hetccl_key(key)) {
    void *entry;
    ncclResult_t r = nccl_param_fn(fn, key, &entry);
    if (r != ncclSuccess) return r;
    return FACE_PASS(ncclResult_t(*)(const char *, const char **, int *), entry, key, value, valueLen);
  }
  hetcclParamHandle_t h;
  size_t n = 0;
  hetcclResult_t r = hetcclParamBind(&h, key);
  if (r == hetcclSuccess) r = hetcclParamGetString(h, t_value, sizeof t_value, &n);
  if (r != hetcclSuccess) return face_result(r);
  *value = t_value;
  *valueLen = (int)n;
  return ncclSuccess;
}
FACE_ALIAS(ncclParamGetParameter)

/* HetCCL's keys, then NCCL's where its library has the API. */
static _Thread_local const char **t_keys;
static _Thread_local int t_keys_cap;

FACE_API ncclResult_t pncclParamGetAllParameterKeys(const char ***table, int *tableLen) {
  FACE_GUARD(ncclParamGetAllParameterKeys, table, tableLen);
  const char *fn = "ncclParamGetAllParameterKeys";
  if (!table || !tableLen) return face_invalid(fn, "table or tableLen is NULL");
  const char *const *own;
  int nown = 0, nreal = 0;
  const char **real = NULL;
  hetcclResult_t r = hetcclParamKeys(&own, &nown);
  if (r != hetcclSuccess) return face_result(r);
  char desc[1200];
  void *entry = face_lib_symbol(fn, desc, sizeof desc);
  if (entry && FACE_PASS(ncclResult_t(*)(const char ***, int *), entry, &real, &nreal) != ncclSuccess) nreal = 0;
  int n = nown + (real ? nreal : 0);
  if (n > t_keys_cap) {
    const char **grown = realloc(t_keys, (size_t)n * sizeof *grown);
    if (!grown) return face_result(hetcclInternalRecordError(hetcclSystemError, "ncclParamGetAllParameterKeys: out of memory"));
    t_keys = grown;
    t_keys_cap = n;
  }
  for (int i = 0; i < nown; i++) t_keys[i] = own[i];
  for (int i = 0; real && i < nreal; i++) t_keys[nown + i] = real[i];
  *table = t_keys;
  *tableLen = n;
  return ncclSuccess;
}
FACE_ALIAS(ncclParamGetAllParameterKeys)

/* HetCCL's settings as KEY=value lines on stdout, then NCCL's own dump. */
FACE_API void pncclParamDumpAll(void) {
  void *nccl = hetcclInternalNcclReal(__builtin_return_address(0));
  if (nccl) {
    void (*fn)(void) = (void (*)(void))face_nccl_symbol(nccl, "ncclParamDumpAll");
    if (fn) fn();
    return;
  }
  const char *const *keys;
  int n = 0;
  char value[4096];
  if (hetcclParamKeys(&keys, &n) == hetcclSuccess) {
    printf("=== HetCCL settings ===\n");
    for (int i = 0; i < n; i++) {
      hetcclParamHandle_t h;
      if (hetcclParamBind(&h, keys[i]) == hetcclSuccess &&
          hetcclParamGetString(h, value, sizeof value, NULL) == hetcclSuccess)
        printf("%s=%s\n", keys[i], value);
    }
    fflush(stdout);
  }
  char desc[1200];
  void *entry = face_lib_symbol("ncclParamDumpAll", desc, sizeof desc);
  if (entry) {
    hetcclInternalNcclRealEnter(entry);
    ((void (*)(void))entry)();
    hetcclInternalNcclRealLeave();
  }
}
FACE_ALIAS(ncclParamDumpAll)
