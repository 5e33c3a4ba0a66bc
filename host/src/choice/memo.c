/* memo.c - the context's memo of its choices, so that a repeated call pays
 * a hash and a compare, not a search of the tuning rows.
 *
 * The key: the family, the description's bytes (a public one's params
 * pointer cleared at the boundary) and the caller's values of the
 * family's tunables (zeros for none).  The
 * device is the context's; what else decides a choice (the tuning rows, the
 * overrides) changes only by an event that starts a new generation
 * (clattn__memo_invalidate: a reload of the tuning rows, an override set),
 * and a lookup matches only the current generation's entries.  Padding
 * bytes of a description are part of the key: a description rebuilt with
 * other padding misses and is searched, never given another's choice.
 *
 * The table is fixed: MEMO_SETS sets of MEMO_WAYS entries, the set chosen
 * by the hash; a miss fills an entry of another generation, else the set's
 * least recently used.  An entry holds the choice as the search made it,
 * explanation and shape class included, the plan and the buffer specs, so
 * that none is built again (and the call path does not check again a
 * description it checked before the search).  A thread's record of its
 * last call refers to the entry (clattn__memo_record); an entry about to
 * be refilled first copies its choice into the records that refer to it.
 * Everything here runs under the context's lock. */
#include "choice/choice.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MEMO_SETS 8
#define MEMO_WAYS 4

struct clattn__memo_entry {
  uint64_t hash;
  unsigned gen; /* the generation it was filled in; 0: never filled */
  unsigned long long used; /* the memo's clock at its last use */
  const clattn__family *fam;
  clattn__params caller;
  _Alignas(16) unsigned char desc[CLATTN__DESC_MAX];
  _Alignas(16) unsigned char plan[CLATTN__PLAN_MAX];
  clattn__buf_spec spec[CLATTN__MAX_BUFS];
  clattn__choice choice;
};

struct clattn__memo {
  unsigned gen; /* the current generation, from 1 */
  unsigned long long clock;
  unsigned long long hits, misses; /* lookups, for the tests */
  clattn__memo_entry e[MEMO_SETS * MEMO_WAYS];
};

clattn__memo *clattn__memo_new(void) {
  clattn__memo *m = calloc(1, sizeof *m);
  if (m != NULL)
    m->gen = 1;
  return m;
}

void clattn__memo_free(clattn__memo *m) { free(m); }

void clattn__memo_invalidate(clattn__memo *m) {
  if (m != NULL && ++m->gen == 0)
    m->gen = 1; /* 0 marks an entry never filled */
}

/* A hash of n bytes, eight at a time: the key's hash runs at every call, so
 * it mixes words, not bytes (clattn__hash, byte by byte, is for keys that
 * must stay the same across processes). */
static uint64_t hash_words(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = 0;
    memcpy(&w, b + i, n - i < 8 ? n - i : 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15u;
    h ^= h >> 29;
  }
  return h;
}

void clattn__memo_make_key(const clattn__family *F, const void *desc,
                           const clattn__params *caller, clattn__memo_key *k) {
  memcpy(k->desc, desc, F->desc_size);
  if (caller != NULL)
    k->caller = *caller;
  else
    memset(&k->caller, 0, sizeof k->caller);
  uint64_t h = hash_words((uint64_t)(uintptr_t)F, k->desc, F->desc_size);
  k->hash = hash_words(h, &k->caller, sizeof k->caller);
  k->fam = F;
}

static clattn__memo_entry *set_of(clattn__memo *m, uint64_t hash) {
  return &m->e[((hash >> 32) % MEMO_SETS) * MEMO_WAYS];
}

const clattn__memo_entry *
clattn__memo_find(clattn__memo *m, const clattn__memo_key *k, void *plan) {
  clattn__memo_entry *set = set_of(m, k->hash);
  const clattn__family *F = k->fam;
  for (int i = 0; i < MEMO_WAYS; i++) {
    clattn__memo_entry *e = &set[i];
    if (e->gen == m->gen && e->hash == k->hash && e->fam == F &&
        memcmp(e->desc, k->desc, F->desc_size) == 0 &&
        memcmp(&e->caller, &k->caller, sizeof e->caller) == 0) {
      e->used = ++m->clock;
      m->hits++;
      memcpy(plan, e->plan, F->plan_size);
      return e;
    }
  }
  m->misses++;
  return NULL;
}

void clattn__memo_counts(const clattn__memo *m, unsigned long long *hits,
                         unsigned long long *misses) {
  *hits = m->hits;
  *misses = m->misses;
}

/* A thread's record that refers to e keeps e's choice as it ran. */
static void settle(clattn__thread_slot *s, const clattn__memo_entry *e) {
  if (s->last_memo != e)
    return;
  const clattn__params resolved = s->last.resolved;
  s->last = e->choice;
  s->last.resolved = resolved;
  s->last_memo = NULL;
}

const clattn__memo_entry *clattn__memo_put(clattn_ctx *ctx, clattn__memo *m,
                                           const clattn__memo_key *k,
                                           const clattn__choice *ch,
                                           const void *plan) {
  clattn__memo_entry *set = set_of(m, k->hash), *e = &set[0];
  for (int i = 0; i < MEMO_WAYS; i++) {
    if (set[i].gen != m->gen) {
      e = &set[i];
      break;
    }
    if (set[i].used < e->used)
      e = &set[i];
  }
  if (e->gen != 0) {
    for (clattn__thread_slot *s = ctx->slots; s; s = s->next)
      settle(s, e);
    settle(&ctx->shared, e);
  }
  const clattn__family *F = k->fam;
  e->hash = k->hash;
  e->gen = m->gen;
  e->used = ++m->clock;
  e->fam = F;
  e->caller = k->caller;
  memcpy(e->desc, k->desc, F->desc_size);
  memcpy(e->plan, plan, F->plan_size);
  F->buffers(e->desc, e->spec);
  e->choice = *ch;
  return e;
}

const clattn__buf_spec *clattn__memo_buffers(const clattn__memo_entry *e) {
  return e->spec;
}

const clattn__choice *clattn__memo_choice(const clattn__memo_entry *e) {
  return &e->choice;
}

void clattn__memo_record(clattn_ctx *ctx, const clattn__memo_entry *e,
                         clattn__params resolved) {
  clattn__thread_slot *s = ctx->cur;
  s->last_memo = e;
  s->last.resolved = resolved;
  s->has_last = 1;
}

void clattn__memo_last(const clattn__thread_slot *s, clattn__choice *out) {
  const clattn__memo_entry *e = s->last_memo;
  if (e == NULL) {
    *out = s->last;
    return;
  }
  *out = e->choice;
  out->resolved = s->last.resolved;
}
