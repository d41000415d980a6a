/*
 * NCCL face: symmetric windows and one-sided operations (ncclCommWindow*,
 * ncclWinGetUserPtr, ncclPutSignal, ncclSignal, ncclWaitSignal).
 *
 * In a communicator of one NCCL domain they pass through to that NCCL
 * (face_passthru: refused, naming the version, when it lacks them); a
 * window made so is NCCL's own handle, and every later call on it goes to
 * NCCL too. Across domains HetCCL has no windows and no one-sided
 * transfers: refused with ncclInvalidUsage and a message, so callers fall
 * back to collectives and plain buffers (PyTorch does).
 */
#include "abi/nccl_face.h"

static const char k_windows[] = "symmetric memory windows or one-sided operations";
static const char k_no_windows[] =
    "symmetric memory windows and one-sided operations are not supported across domains (a window would span "
    "memory of different vendors); use collectives or send/recv";

typedef ncclResult_t (*win_register_fn)(ncclComm_t, void *, size_t, ncclWindow_t *, int);
typedef ncclResult_t (*win_deregister_fn)(ncclComm_t, ncclWindow_t);
typedef ncclResult_t (*win_user_ptr_fn)(ncclComm_t, ncclWindow_t, void **);
typedef ncclResult_t (*put_signal_fn)(const void *, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
                                      unsigned int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*signal_fn)(int, int, int, unsigned int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*wait_signal_fn)(int, ncclWaitSignalDesc_t *, ncclComm_t, cudaStream_t);

FACE_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                              int winFlags) {
  FACE_GUARD(ncclCommWindowRegister, comm, buff, size, win, winFlags);
  void *entry, *lc;
  if (win) *win = NULL;
  ncclResult_t r = face_passthru("ncclCommWindowRegister", comm, k_windows, k_no_windows, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(win_register_fn, entry, (ncclComm_t)lc, buff, size, win, winFlags);
}
FACE_ALIAS(ncclCommWindowRegister)

FACE_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  FACE_GUARD(ncclCommWindowDeregister, comm, win);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclCommWindowDeregister", comm, k_windows, k_no_windows, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(win_deregister_fn, entry, (ncclComm_t)lc, win);
}
FACE_ALIAS(ncclCommWindowDeregister)

FACE_API ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr) {
  FACE_GUARD(ncclWinGetUserPtr, comm, win, outUserPtr);
  void *entry, *lc;
  if (outUserPtr) *outUserPtr = NULL;
  ncclResult_t r = face_passthru("ncclWinGetUserPtr", comm, k_windows, k_no_windows, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(win_user_ptr_fn, entry, (ncclComm_t)lc, win, outUserPtr);
}
FACE_ALIAS(ncclWinGetUserPtr)

FACE_API ncclResult_t pncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                                     unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  FACE_GUARD(ncclPutSignal, localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, comm,
             stream);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclPutSignal", comm, k_windows, k_no_windows, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(put_signal_fn, entry, localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags,
                   (ncclComm_t)lc, stream);
}
FACE_ALIAS(ncclPutSignal)

FACE_API ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                  cudaStream_t stream) {
  FACE_GUARD(ncclSignal, peer, sigIdx, ctx, flags, comm, stream);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclSignal", comm, k_windows, k_no_windows, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(signal_fn, entry, peer, sigIdx, ctx, flags, (ncclComm_t)lc, stream);
}
FACE_ALIAS(ncclSignal)

FACE_API ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                                      cudaStream_t stream) {
  FACE_GUARD(ncclWaitSignal, nDesc, signalDescs, comm, stream);
  void *entry, *lc;
  ncclResult_t r = face_passthru("ncclWaitSignal", comm, k_windows, k_no_windows, &entry, &lc);
  if (r != ncclSuccess) return r;
  return FACE_PASS(wait_signal_fn, entry, nDesc, signalDescs, (ncclComm_t)lc, stream);
}
FACE_ALIAS(ncclWaitSignal)
