/* Calls into a vendor library's own entry points (ccl.h, the `entry` op):
 * marked as inside that library, so its calls to names the faces export go
 * back to it. Only the NCCL-like libraries have entry points. */
#include "ccl/ccl.h"
#include "ccl/nccl/nccl_real.h"

void hetccl_vendor_entry_enter(const void *entry) { hetccl_nccl_real_enter(entry); }
void hetccl_vendor_entry_leave(void) { hetccl_nccl_real_leave(); }
