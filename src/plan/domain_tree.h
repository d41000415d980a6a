/*
 * A binomial tree over the domains, rooted at the root's domain: what small
 * Broadcast and Reduce run among one rank of each domain (the root in its
 * domain, the first rank in the others), so no rank talks to more than
 * ceil(log2 k) others and the call takes ceil(log2 k) link phases.
 *
 * Domains are numbered relative to the root's (v = (d - root_dom) mod k).
 * In round `mask` (1, 2, 4, ... below k) relative domain v < mask sends to
 * v + mask (Broadcast), and for Reduce the reverse: v + mask sends its
 * subtree's result to v, which combines (its own [v, v + mask)) op (the
 * received [v + mask, v + 2 mask)), so values combine in relative domain
 * order, as a tree.
 */
#ifndef HETCCL_PLAN_DOMAIN_TREE_H
#define HETCCL_PLAN_DOMAIN_TREE_H

#include "plan/plan_state.h"

/* The rank that stands for domain d in the tree: the root in its domain. */
static inline int hetccl_tree_rep(const struct hetccl_plan_state *st, int root, int d) {
  return st->topo->domain_of[root] == d ? root : st->dom_member[d][0];
}

/* Relative domain v's rank. */
static inline int hetccl_tree_rank(const struct hetccl_plan_state *st, int root, int v) {
  int k = st->ndomains, d = (st->topo->domain_of[root] + v) % k;
  return hetccl_tree_rep(st, root, d);
}

/* This rank's relative domain when it stands for its domain, else -1. */
static inline int hetccl_tree_me(const struct hetccl_plan_state *st, int root) {
  const struct hetccl_topology *t = st->topo;
  if (hetccl_tree_rep(st, root, t->my_domain) != t->rank) return -1;
  int k = st->ndomains;
  return (t->my_domain - t->domain_of[root] + k) % k;
}

#endif
