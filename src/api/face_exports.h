/*
 * What libhetccl.so exports for its ABI faces (src/abi) beyond the public
 * API: not declared in hetccl.h, not for applications. Names match the
 * exported pattern hetccl[A-Z]* (src/api/exports.map).
 */
#ifndef HETCCL_API_FACE_EXPORTS_H
#define HETCCL_API_FACE_EXPORTS_H

#include "hetccl.h"

/* Records `message` as this thread's last error (hetcclGetLastError) and
 * returns `code`: a face's own refusals read like the library's. */
__attribute__((visibility("default"))) hetcclResult_t hetcclInternalRecordError(hetcclResult_t code,
                                                                                const char *message);

#endif
