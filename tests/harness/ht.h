/*
 * The test harness, in one include: data types and codecs (ht_types.h),
 * deterministic data (ht_data.h), reduction references and tolerances
 * (ht_ref.h), forked ranks and the pass/fail tally (ht_job.h), guarded
 * pooled buffers (ht_buf.h), and what the matrix tests share: collectives,
 * options, expected contents of data-movement buffers (ht_matrix.h).
 * It links no part of the library: references are computed independently.
 */
#ifndef HT_H
#define HT_H

#include "ht_buf.h"
#include "ht_data.h"
#include "ht_job.h"
#include "ht_matrix.h"
#include "ht_ref.h"
#include "ht_types.h"

#endif
