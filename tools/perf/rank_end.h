/* How a forked rank ended, in words, for the parent's report. */
#ifndef HETCCL_PERF_RANK_END_H
#define HETCCL_PERF_RANK_END_H

/* "SIGKILL", "SIGSEGV", ...; "signal" for one without a common name. */
const char *perf_signal_name(int sig);
/* What an exit status of hetccl-perf's ranks means (world.h, PERF_EXIT_*). */
const char *perf_exit_meaning(int status);

#endif
