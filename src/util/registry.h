/*
 * A registry of component descriptors (device kinds, collective libraries,
 * transports): the built-in ones, listed once by their layer, then those
 * added at run time (tests, later plugins). A descriptor's id is its index.
 * Adding is meant for before the first communicator and alike on every
 * rank (ids are exchanged at init), so it takes no lock.
 */
#ifndef HETCCL_UTIL_REGISTRY_H
#define HETCCL_UTIL_REGISTRY_H

#include "hetccl.h"

#define HETCCL_REGISTRY_MAX_ADDED 8

struct hetccl_registry {
  const char *what;                       /* "device kind": names the registry in messages */
  const void *const *builtin;
  int nbuiltin;
  const char *(*name_of)(const void *desc);
  const void *added[HETCCL_REGISTRY_MAX_ADDED];
  int nadded;
};

/* Adds `desc`; refuses a name already there (case-insensitive) and more than
 * HETCCL_REGISTRY_MAX_ADDED additions. */
hetcclResult_t hetccl_registry_add(struct hetccl_registry *r, const void *desc);
int hetccl_registry_count(const struct hetccl_registry *r);
/* Descriptor `id`, NULL outside 0..count-1. */
const void *hetccl_registry_get(const struct hetccl_registry *r, int id);
/* The id of the descriptor named `name` (case-insensitive), else -1. */
int hetccl_registry_find(const struct hetccl_registry *r, const char *name);

#endif
