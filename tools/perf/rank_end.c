#include "rank_end.h"

#include <signal.h>

#include "world.h"

const char *perf_signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return "signal";
  }
}

const char *perf_exit_meaning(int status) {
  switch (status) {
    case PERF_EXIT_OK: return "success";
    case PERF_EXIT_WRONG: return "wrong results";
    case PERF_EXIT_USAGE: return "bad flags or a rank of the wrong kind";
    case PERF_EXIT_LIBRARY: return "a HetCCL or NCCL call failed";
    case PERF_EXIT_RANK: return "a peer failed or the run was stopped";
    default: return "an unexpected status";
  }
}
