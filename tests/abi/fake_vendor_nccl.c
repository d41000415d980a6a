/*
 * Plays the real NCCL for test_nccl_face_guard: defines a few nccl*
 * functions with recognisable results and, like NCCL, calls them (and one
 * it does not define) through the dynamic linker. Loaded with
 * dlopen(RTLD_LOCAL) into a process whose global scope holds HetCCL's face,
 * those calls land in the face first; the face must send them back here.
 * Written without nccl.h, as a vendor library has its own.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct fake_team {
  int nRanks, rank, stride;
};

#define FAKE_VERSION 12345
#define FAKE_COMM ((void *)(uintptr_t)0x1234)

int ncclGetVersion(int *version) {
  *version = FAKE_VERSION;
  return 0;
}

const char *ncclGetErrorString(int result) {
  (void)result;
  return "fake vendor error string";
}

int ncclCommGetAsyncError(void *comm, int *error) {
  *error = comm == FAKE_COMM ? 6 : 0;
  return 0;
}

int ncclMemAlloc(void **ptr, size_t size) {
  *ptr = (void *)(uintptr_t)(0xfa000000u + size);
  return 0;
}

struct fake_team ncclTeamWorld(void *comm) {
  (void)comm;
  return (struct fake_team){77, 5, 3};
}

static int g_resets;
void ncclResetDebugInit(void) { g_resets++; }

/* Not defined here: the call resolves to the face, which finds no such
 * entry point in this library and must say so rather than serve it. */
int ncclCommRevoke(void *comm, int flags);

/* NCCL's internal calls; 0 when every one reached this library. */
int fake_nccl_self_calls(char *why, size_t why_len) {
  int v = 0, e = -1;
  void *p = NULL;
  if (ncclGetVersion(&v) != 0 || v != FAKE_VERSION) {
    snprintf(why, why_len, "ncclGetVersion gave %d, not the vendor's %d", v, FAKE_VERSION);
    return 1;
  }
  const char *s = ncclGetErrorString(3);
  if (!s || strcmp(s, "fake vendor error string") != 0) {
    snprintf(why, why_len, "ncclGetErrorString gave \"%s\"", s ? s : "(null)");
    return 1;
  }
  if (ncclCommGetAsyncError(FAKE_COMM, &e) != 0 || e != 6) {
    snprintf(why, why_len, "ncclCommGetAsyncError gave %d", e);
    return 1;
  }
  if (ncclMemAlloc(&p, 16) != 0 || p != (void *)(uintptr_t)0xfa000010u) {
    snprintf(why, why_len, "ncclMemAlloc gave %p", p);
    return 1;
  }
  struct fake_team t = ncclTeamWorld(FAKE_COMM);
  if (t.nRanks != 77 || t.rank != 5 || t.stride != 3) {
    snprintf(why, why_len, "ncclTeamWorld gave {%d, %d, %d}", t.nRanks, t.rank, t.stride);
    return 1;
  }
  int before = g_resets;
  ncclResetDebugInit();
  if (g_resets != before + 1) {
    snprintf(why, why_len, "ncclResetDebugInit did not reach the vendor");
    return 1;
  }
  int r = ncclCommRevoke(FAKE_COMM, 0);
  if (r != 3) { /* ncclInternalError: the calling NCCL lacks it */
    snprintf(why, why_len, "ncclCommRevoke (absent from the vendor) returned %d, not 3", r);
    return 1;
  }
  return 0;
}
