#include "vendor/vendor.h"

const char *hetccl_coll_name(int coll) {
  static const char *const names[HETCCL_COLL_COUNT] = {
      "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
      "AlltoAllv", "Gather",    "Scatter", "Send",     "Recv"};
  return coll >= 0 && coll < HETCCL_COLL_COUNT ? names[coll] : "unknown";
}
